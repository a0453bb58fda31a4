/* train: the training loop. One step: batch -> forward -> backward -> clip ->
 * Adam at the scheduled lr. Everything that decides the next step (params,
 * Adam moments, data position, dropout rng) is in the checkpoint, so a
 * resumed run continues bit for bit (same threads). */
#include "train/train.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/path.h"
#include "text/bleu.h"
#include "text/bpe.h"
#include "model/ckpt.h"
#include "model/decode.h"
#include "train/corpus.h"
#include "model/model.h"
#include "nn/optim.h"
#include "train/progress.h"
#include "base/sysmem.h"

enum { LOG_EVERY = 50 };

typedef struct {
    const TfmConfig *cfg;
    const TrainOptions *opt;
    Bpe *bpe;
    Corpus train, valid;
    Batcher train_b, valid_b;
    Model model;
    Adam adam;
    TrainState ts;
    Progress prog;
    Decoder *decoder;           /* for validation BLEU, made at the first use */
    char *last_path, *best_path;
    double run_start;           /* monotonic seconds at the start of this run */
    bool changed;               /* this run stepped or validated: last.tfm is behind */
} Trainer;

/* The signal number a caller asked the run to stop with, 0 if none. */
static int stop_requested(const Trainer *t) { return t->opt->stop ? t->opt->stop->signo : 0; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double elapsed(const Trainer *t) { return t->ts.elapsed_s + now_s() - t->run_start; }

/* Length of the longest prefix of path, cut at a '/', that exists now: what
 * make_dirs would not create. */
static size_t existing_prefix(const char *path)
{
    char *p = xstrdup(path, NULL);
    if (!p) return strlen(path);
    size_t keep = 0;
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0') continue;
        *s = '\0';
        struct stat sb;
        if (stat(p, &sb) != 0) break;
        keep = (size_t)(s - p);
        *s = c;
        if (c == '\0') break;
    }
    free(p);
    return keep;
}

/* Undoes make_dirs for a refused run: removes the folders of path beyond
 * its first `keep` bytes, deepest first (rmdir: empty ones only). */
static void remove_made_dirs(const char *path, size_t keep)
{
    char *p = xstrdup(path, NULL);
    if (!p) return;
    size_t n = strlen(p);
    while (n > keep && p[n - 1] == '/') n--;
    while (n > keep) {
        p[n] = '\0';
        if (rmdir(p) != 0) break;
        while (n > keep && p[n - 1] != '/') n--;
        while (n > keep && p[n - 1] == '/') n--;
    }
    free(p);
}

/* mkdir -p */
static TfmStatus make_dirs(const char *path, TfmErr *err)
{
    char *p = xstrdup(path, NULL);
    if (!p) return err_set(err, TFM_ERR_NOMEM, "out of memory");
    TfmStatus st = TFM_OK;
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0') continue;
        *s = '\0';
        struct stat sb;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            st = err_set(err, TFM_ERR_IO, "%s: cannot create folder: %s", p, strerror(errno));
            break;
        }
        if (stat(p, &sb) != 0) {     /* a symlink loop, a dangling symlink */
            st = err_set(err, TFM_ERR_IO, "%s: cannot use as a folder: %s", p, strerror(errno));
            break;
        }
        if (!S_ISDIR(sb.st_mode)) {
            st = err_set(err, TFM_ERR_IO, "%s: not a folder", p);
            break;
        }
        *s = c;
        if (c == '\0') break;
    }
    free(p);
    return st;
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Takes out_dir/lock so two runs cannot write one folder; the lock goes
 * with the process, even after kill -9. Returns the descriptor. */
static TfmStatus lock_out_dir(const char *dir, int *fd_out, TfmErr *err)
{
    char *path = path_join(dir, "lock", err);
    if (!path) return TFM_ERR_NOMEM;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    TfmStatus st = TFM_OK;
    if (fd < 0)
        st = err_set(err, TFM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        st = err_set(err, TFM_ERR_IO, "%s: in use by another tfm train", dir);
        close(fd);
        fd = -1;
    }
    free(path);
    *fd_out = fd;
    return st;
}

/* True for the names of files tfm writes in out_dir: last.tfm, best.tfm,
 * vocab.txt, ckpt.STEP.tfm. */
static bool is_own_file(const char *name, size_t len)
{
    static const char *const fixed[] = {"last.tfm", "best.tfm", "vocab.txt"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (len == strlen(fixed[i]) && memcmp(name, fixed[i], len) == 0) return true;
    if (len < 10 || memcmp(name, "ckpt.", 5) != 0 || memcmp(name + len - 4, ".tfm", 4) != 0)
        return false;
    for (size_t i = 5; i < len - 4; i++)
        if (name[i] < '0' || name[i] > '9') return false;
    return true;
}

/* Names tfm train writes or removes in out_dir: its own files, their temps,
 * the log and the lock. */
static bool written_in_out_dir(const char *name)
{
    const char *tmp = strstr(name, ".tmp.");
    size_t len = tmp ? (size_t)(tmp - name) : strlen(name);
    return is_own_file(name, len) || strcmp(name, "log.jsonl") == 0 || strcmp(name, "lock") == 0;
}

/* True when path's folder is the folder dir (by device and inode, so "x"
 * and "./x" are one) and its last name is one tfm train writes there. */
static bool written_by_run(const char *path, const struct stat *dir)
{
    char folder[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(folder, sizeof folder, ".");
    else snprintf(folder, sizeof folder, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    struct stat sb;
    return stat(folder, &sb) == 0 && sb.st_dev == dir->st_dev && sb.st_ino == dir->st_ino &&
           written_in_out_dir(slash ? slash + 1 : path);
}

/* The data files must survive training: train.model may not be one of them,
 * none may sit in out_dir under a name the run writes, and no file the run
 * writes may be a symlink to one (saves follow symlinks). Checked before
 * anything is written. */
static TfmStatus check_outputs_spare_inputs(const TfmConfig *cfg, const char *config_path,
                                           TfmErr *err)
{
    const struct { const char *path, *key; } inputs[] = {
        {cfg->data.train_src, "data.train_src"}, {cfg->data.train_tgt, "data.train_tgt"},
        {cfg->data.valid_src, "data.valid_src"}, {cfg->data.valid_tgt, "data.valid_tgt"},
        {cfg->data.vocab, "data.vocab"}, {config_path, "the config file"},
    };
    static const char *const fixed[] = {"last.tfm", "best.tfm", "vocab.txt", "log.jsonl"};
    struct stat out_dir;
    const bool have_out_dir = stat(cfg->train.out_dir, &out_dir) == 0;
    if (have_out_dir && written_by_run(cfg->train.model, &out_dir))
        return err_set(err, TFM_ERR_CONFIG, "train.model: '%s' is a file that tfm train keeps in "
                       "train.out_dir; choose another name", cfg->train.model);
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        const char *in = inputs[i].path;
        if (!in) continue;
        if (atomic_same_file(cfg->train.model, in))
            return err_set(err, TFM_ERR_CONFIG, "train.model: '%s' is %s: training would overwrite it",
                           cfg->train.model, inputs[i].key);
        char *real = realpath(in, NULL);
        bool clash = have_out_dir && real && written_by_run(real, &out_dir);
        free(real);
        for (size_t k = 0; have_out_dir && !clash && k < sizeof fixed / sizeof *fixed; k++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", cfg->train.out_dir, fixed[k]);
            clash = atomic_same_file(p, in);
        }
        if (clash)
            return err_set(err, TFM_ERR_CONFIG, "%s: '%s' is in train.out_dir under a name tfm train "
                           "writes; move it or choose another out_dir", inputs[i].key, in);
    }
    return TFM_OK;
}

/* Removes the temp files ("NAME.tmp.SUFFIX") of saves that a crash or kill -9
 * interrupted; their writer holds no lock any more, since we hold it. */
static void remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *tmp = strstr(e->d_name, ".tmp.");
        size_t len = tmp ? (size_t)(tmp - e->d_name) : 0;
        if (!tmp || !(is_own_file(e->d_name, len) || (len == 9 && !memcmp(e->d_name, "log.jsonl", 9))))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Removes "MODEL.tmp.PID" files next to train.model that a killed run left
 * (a second Ctrl-C during the final copy). That folder is not locked, so
 * only temps whose writer process is gone are removed. */
static void remove_stale_model_temps(const char *model)
{
    char *copy_dir = xstrdup(model, NULL), *copy_base = xstrdup(model, NULL);
    const char *dir = copy_dir ? dirname(copy_dir) : NULL;     /* may not point into copy_dir */
    DIR *d = dir ? opendir(dir) : NULL;
    const char *base = copy_base ? basename(copy_base) : NULL;
    size_t n = base ? strlen(base) : 0;
    struct dirent *e;
    while (d && base && (e = readdir(d))) {
        const char *p = e->d_name;
        if (strncmp(p, base, n) != 0 || strncmp(p + n, ".tmp.", 5) != 0) continue;
        char *end;
        long pid = strtol(p + n + 5, &end, 10);
        if (*end || end == p + n + 5 || pid <= 0 || pid > INT_MAX) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;    /* alive, or not ours to judge */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, p);
        unlink(path);
    }
    if (d) closedir(d);
    free(copy_dir);
    free(copy_base);
}

/* --restart: the previous run's checkpoints go, so that they are neither
 * resumed nor mixed with the new run's (pruning, averaging). last.tfm goes
 * last: a restart stopped half-way leaves a run that resumes, or restarts
 * again, never numbered checkpoints without their last.tfm. */
static void remove_checkpoints(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (!is_own_file(e->d_name, len) || strcmp(e->d_name, "vocab.txt") == 0 ||
            strcmp(e->d_name, "last.tfm") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    char path[4096];
    snprintf(path, sizeof path, "%s/last.tfm", dir);
    unlink(path);
}

/* Numbered checkpoints without a last.tfm are another run's (last.tfm is
 * saved before each of them): a fresh run would keep its higher steps when
 * pruning and drop its own. */
static TfmStatus check_no_orphan_checkpoints(const char *dir, TfmErr *err)
{
    DIR *d = opendir(dir);
    if (!d) return TFM_OK;
    struct dirent *e;
    long n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        n += is_own_file(e->d_name, len) && strncmp(e->d_name, "ckpt.", 5) == 0;
    }
    closedir(d);
    if (n == 0) return TFM_OK;
    return err_set(err, TFM_ERR_IO, "%s: holds %ld numbered checkpoint%s of an earlier run but no "
                   "last.tfm to resume from; --restart removes them", dir, n, n == 1 ? "" : "s");
}

static bool same_model(const ModelConfig *a, const ModelConfig *b)
{
    return a->d_model == b->d_model && a->heads == b->heads && a->enc_layers == b->enc_layers &&
           a->dec_layers == b->dec_layers && a->d_ff == b->d_ff && a->norm == b->norm &&
           a->share_embeddings == b->share_embeddings && a->dropout == b->dropout &&
           a->attn_dropout == b->attn_dropout && a->relu_dropout == b->relu_dropout;
}

/* ---- set-up ---- */

static TfmStatus get_vocabulary(Trainer *t, TfmErr *err)
{
    const DataConfig *d = &t->cfg->data;
    if (d->vocab) return bpe_load(&t->bpe, d->vocab, err);
    char *path = path_join(t->cfg->train.out_dir, "vocab.txt", err);
    if (!path) return TFM_ERR_NOMEM;
    /* before learning, which may take minutes: out_dir/vocab.txt is ours to
     * replace only if it is a tfm vocabulary (and not a FIFO, ...) */
    TfmStatus st = atomic_check_target(path, err);
    if (st == TFM_OK) st = atomic_check_own_kind(path, "tfm-bpe ", "tfm vocabulary", err);
    if (st == TFM_OK) {
        const char *files[2] = {d->train_src, d->train_tgt};
        progress_note(&t->prog, "learning a %d-token BPE vocabulary from %s and %s",
                      d->vocab_size, d->train_src, d->train_tgt);
        st = bpe_learn(&t->bpe, files, 2, d->vocab_size, err);
    }
    if (st == TFM_OK) st = bpe_save(t->bpe, path, err);
    free(path);
    return st;
}

/* Refuses a model and batch size this machine cannot train, before the big
 * allocations: `copies` float arrays of the parameters' size (params, grads,
 * Adam's m and v: 4; fewer when some are already held) plus the activation
 * workspace for the largest batch. */
static TfmStatus check_memory(const Trainer *t, const ModelConfig *mc, int copies, TfmErr *err)
{
    size_t n = model_param_count(mc);
    double need = n ? (double)copies * n * sizeof(float) : INFINITY;
    need += model_work_bytes(mc, t->cfg->train.batch_tokens, config_row_len(t->cfg->data.max_len));
    char what[128];
    snprintf(what, sizeof what, "training this model (%.0f parameters, batches of %d tokens)",
             (double)n, t->cfg->train.batch_tokens);
    return sysmem_check(need, what, "lower model.d_model, model.d_ff, the layers, "
                        "data.vocab_size or train.batch_tokens", err);
}

static TfmStatus resume(Trainer *t, TfmErr *err)
{
    ModelFile mf;
    TfmStatus st = ckpt_load(t->last_path, &mf, true, err);
    if (st == TFM_ERR_FORMAT) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, "; copy a ckpt.STEP.tfm of %s over it to "
                 "resume from there, or start over with --restart", t->cfg->train.out_dir);
    }
    if (st != TFM_OK) return st;
    if (!mf.has_train_state) {
        ckpt_free(&mf);
        return err_set(err, TFM_ERR_FORMAT, "%s: has no training state to resume from "
                       "(use --restart)", t->last_path);
    }
    if (!same_model(&mf.cfg.model, &t->cfg->model) || mf.cfg.data.max_len != t->cfg->data.max_len) {
        ckpt_free(&mf);
        return err_set(err, TFM_ERR_CONFIG, "%s: was trained with another model config "
                       "(use --restart to start over)", t->last_path);
    }
    /* a learned vocabulary of another size would not be the one the
     * config asks for (data.vocab_size is ignored with data.vocab) */
    if (!t->cfg->data.vocab && mf.cfg.data.vocab_size != t->cfg->data.vocab_size) {
        TfmStatus st2 = err_set(err, TFM_ERR_CONFIG, "%s: was trained with data.vocab_size %d, "
                                "the config says %d (use --restart to start over)", t->last_path,
                                mf.cfg.data.vocab_size, t->cfg->data.vocab_size);
        ckpt_free(&mf);
        return st2;
    }
    /* the data position means something only with the same batches */
    if (mf.cfg.train.seed != t->cfg->train.seed ||
        mf.cfg.train.batch_tokens != t->cfg->train.batch_tokens) {
        TfmStatus st2 = err_set(err, TFM_ERR_CONFIG, "%s: was trained with train.seed %llu and "
                                "train.batch_tokens %d, the config says %llu and %d (use --restart "
                                "to start over)", t->last_path, mf.cfg.train.seed,
                                mf.cfg.train.batch_tokens, t->cfg->train.seed,
                                t->cfg->train.batch_tokens);
        ckpt_free(&mf);
        return st2;
    }
    /* take ownership of the pieces */
    t->bpe = mf.bpe;
    mf.bpe = NULL;
    t->model = mf.model;
    memset(&mf.model, 0, sizeof mf.model);
    t->adam = mf.adam;
    memset(&mf.adam, 0, sizeof mf.adam);
    const AdamConfig ac = config_adam(&t->cfg->train);  /* the user's current settings */
    t->adam.beta1 = ac.beta1;
    t->adam.beta2 = ac.beta2;
    t->adam.eps = ac.eps;
    t->adam.weight_decay = ac.weight_decay;
    t->ts = mf.ts;
    ckpt_free(&mf);
    /* params and Adam's moments are loaded; grads and activations are to come */
    if ((st = check_memory(t, &t->model.cfg, 1, err)) != TFM_OK) return st;
    progress_note(&t->prog, "resuming from %s at step %ld (epoch %ld)", t->last_path,
                  t->ts.step, t->ts.epoch + 1);
    return TFM_OK;
}

static TfmStatus fresh_start(Trainer *t, TfmErr *err)
{
    TfmStatus st = get_vocabulary(t, err);
    if (st != TFM_OK) return st;
    ModelConfig mc = t->cfg->model;
    mc.vocab_size = bpe_vocab_size(t->bpe);
    mc.max_len = config_positions(t->cfg->data.max_len);
    if ((st = check_memory(t, &mc, 4, err)) != TFM_OK) return st;
    if ((st = model_init(&t->model, &mc, err)) != TFM_OK) return st;
    Rng init_rng;
    rng_seed(&init_rng, t->cfg->train.seed);
    model_init_weights(&t->model, &init_rng);
    const AdamConfig ac = config_adam(&t->cfg->train);
    if ((st = adam_init(&t->adam, t->model.n_params, &ac, err)) != TFM_OK) return st;
    memset(&t->ts, 0, sizeof t->ts);
    rng_seed(&t->ts.dropout_rng, t->cfg->train.seed ^ 0xd209u);
    return TFM_OK;
}

/* Says why: the keys that skipped the pairs are what the user can change. */
static TfmStatus no_usable_pairs(const Corpus *c, const Batcher *b, const TfmConfig *cfg,
                                 const char *what, const char *path, TfmErr *err)
{
    return err_set(err, TFM_ERR_FORMAT, "%s: no usable %s pairs (%ld line%s: %ld empty, %ld over "
                   "data.max_len %d tokens, %ld over train.batch_tokens %d)", path, what,
                   c->n_lines, c->n_lines == 1 ? "" : "s", c->skipped_empty, c->skipped_long,
                   cfg->data.max_len, b->skipped_budget, cfg->train.batch_tokens);
}

static TfmStatus load_data(Trainer *t, TfmErr *err)
{
    const TfmConfig *cfg = t->cfg;
    TfmStatus st = corpus_load(&t->train, cfg->data.train_src, cfg->data.train_tgt, t->bpe,
                               cfg->data.max_len, err);
    if (st != TFM_OK) return st;
    if ((st = corpus_load(&t->valid, cfg->data.valid_src, cfg->data.valid_tgt, t->bpe,
                          cfg->data.max_len, err)) != TFM_OK)
        return st;
    int budget = cfg->train.batch_tokens;
    if ((st = batcher_init(&t->train_b, &t->train, budget, cfg->train.seed, true, err)) != TFM_OK ||
        (st = batcher_init(&t->valid_b, &t->valid, budget, cfg->train.seed, false, err)) != TFM_OK)
        return st;
    progress_note(&t->prog, "train: %ld pairs of %ld lines (%ld empty, %ld over %d tokens, %ld over "
                  "batch_tokens skipped); valid: %ld pairs",
                  t->train.n_pairs, t->train.n_lines, t->train.skipped_empty,
                  t->train.skipped_long, cfg->data.max_len, t->train_b.skipped_budget,
                  t->valid.n_pairs);
    if (t->train.n_pairs - t->train_b.skipped_budget <= 0)
        return no_usable_pairs(&t->train, &t->train_b, cfg, "training", cfg->data.train_src, err);
    if (t->valid.n_pairs - t->valid_b.skipped_budget <= 0)
        return no_usable_pairs(&t->valid, &t->valid_b, cfg, "validation", cfg->data.valid_src, err);
    batcher_plan_epoch(&t->valid_b, 0);
    return TFM_OK;
}

/* ---- evaluation and saving ---- */

static TfmStatus validate(Trainer *t, double *loss_out, TfmErr *err)
{
    double nll = 0;
    long tokens = 0;
    for (long i = 0; i < t->valid_b.n_batches; i++) {
        Batch b;
        LossStats ls;
        batcher_get(&t->valid_b, i, &b);
        TfmStatus st = model_forward(&t->model, &b, t->cfg->train.label_smoothing, NULL, &ls, err);
        if (st != TFM_OK) return st;
        nll += ls.nll;
        tokens += ls.n_tokens;
    }
    *loss_out = tokens ? nll / tokens : NAN;
    return TFM_OK;
}

/* Removes numbered checkpoints beyond the newest `keep`. */
static void prune_checkpoints(const char *dir, int keep)
{
    DIR *d = opendir(dir);
    if (!d) return;
    long steps[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        long s;
        char tail[8];
        if (sscanf(e->d_name, "ckpt.%ld.%7s", &s, tail) == 2 && strcmp(tail, "tfm") == 0)
            steps[n++] = s;
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        int newer = 0;
        for (int j = 0; j < n; j++) newer += steps[j] > steps[i];
        if (newer >= keep) {
            char path[4096];
            snprintf(path, sizeof path, "%s/ckpt.%ld.tfm", dir, steps[i]);
            unlink(path);
        }
    }
}

static TfmStatus save_last(Trainer *t, TfmErr *err)
{
    TrainState ts = t->ts;
    ts.elapsed_s = elapsed(t);
    TfmStatus st = ckpt_save(t->last_path, t->cfg, t->bpe, &t->model, &t->adam, &ts, err);
    if (st != TFM_OK) return st;
    /* The numbered copy is a hard link: last.tfm is replaced by rename, so
     * the link keeps this content. */
    char name[64], *numbered;
    snprintf(name, sizeof name, "ckpt.%ld.tfm", t->ts.step);
    if (!(numbered = path_join(t->cfg->train.out_dir, name, err))) return TFM_ERR_NOMEM;
    unlink(numbered);
    if (link(t->last_path, numbered) != 0) st = ckpt_copy(t->last_path, numbered, err);
    free(numbered);
    if (st == TFM_OK) prune_checkpoints(t->cfg->train.out_dir, t->cfg->train.keep);
    return st;
}

static void fill_event(const Trainer *t, ProgressEvent *ev)
{
    ev->step = t->ts.step;
    ev->epoch = t->ts.epoch + 1;
    ev->train_loss = ev->train_nll = ev->valid_loss = ev->valid_ppl = ev->valid_bleu = NAN;
    ev->tok_per_s = ev->eta_s = NAN;
    ev->lr = lr_at(&t->cfg->train.lr, t->model.cfg.d_model, t->ts.step > 0 ? t->ts.step : 1);
    ev->elapsed_s = elapsed(t);
}

enum { BLEU_BATCH = 64 };

/* Greedy translation of the validation set, scored with BLEU against the
 * references (the target side decoded back to text: BPE is lossless). */
static TfmStatus validate_bleu(Trainer *t, double *bleu_out, TfmErr *err)
{
    const Corpus *c = &t->valid;
    const DecodeConfig *dc = &t->cfg->decode;
    TfmStatus st = TFM_OK;
    if (!t->decoder && (st = decoder_init(&t->decoder, &t->model, BLEU_BATCH, 1, err)) != TFM_OK)
        return st;
    decoder_update_weights(t->decoder);     /* its packed weights are from the last validation */
    char **hyps = xcalloc((size_t)c->n_pairs + 1, sizeof(char *), err);
    char **refs = xcalloc((size_t)c->n_pairs + 1, sizeof(char *), err);
    int *src = xcalloc((size_t)BLEU_BATCH * (config_row_len(t->cfg->data.max_len)), sizeof(int), err);
    char *text = NULL;
    size_t len = 0, cap = 0;
    if (!hyps || !refs || !src) { st = TFM_ERR_NOMEM; goto done; }
    DecodeOptions opt = {.beam = 1, .alpha = dc->alpha, .max_len_a = dc->max_len_a,
                         .max_len_b = dc->max_len_b, .nbest = 1};
    for (long lo = 0; lo < c->n_pairs; lo += BLEU_BATCH) {
        int n = (int)(c->n_pairs - lo < BLEU_BATCH ? c->n_pairs - lo : BLEU_BATCH), S = 0;
        for (int i = 0; i < n; i++)
            if (c->src_len[lo + i] + 1 > S) S = c->src_len[lo + i] + 1;
        memset(src, 0, sizeof(int) * (size_t)n * S);
        for (int i = 0; i < n; i++) {
            memcpy(src + (size_t)i * S, c->tokens + c->src_off[lo + i], sizeof(int) * c->src_len[lo + i]);
            src[(size_t)i * S + c->src_len[lo + i]] = TOK_EOS;
        }
        Hypothesis hyp[BLEU_BATCH];
        if ((st = decoder_run(t->decoder, src, n, S, &opt, hyp, err)) != TFM_OK) goto done;
        for (int i = 0; i < n; i++) {
            if ((st = bpe_decode(t->bpe, hyp[i].tokens, hyp[i].len, &text, &len, &cap, err)) ||
                !(hyps[lo + i] = xstrdup(text, NULL)) ||
                (st = bpe_decode(t->bpe, c->tokens + c->tgt_off[lo + i], c->tgt_len[lo + i],
                                 &text, &len, &cap, err)) ||
                !(refs[lo + i] = xstrdup(text, NULL))) {
                if (st == TFM_OK) st = err_set(err, TFM_ERR_NOMEM, "out of memory");
                goto done;
            }
        }
    }
    BleuOptions bo;
    bleu_options_default(&bo);
    BleuScore score;
    const char *const *ref_set[1] = {(const char *const *)refs};
    if ((st = bleu_corpus(&bo, (const char *const *)hyps, (size_t)c->n_pairs, ref_set, 1, &score,
                          err)) == TFM_OK)
        *bleu_out = score.score;
done:
    for (long i = 0; hyps && refs && i < c->n_pairs; i++) {
        free(hyps[i]);
        free(refs[i]);
    }
    free(hyps);
    free(refs);
    free(src);
    free(text);
    return st;
}

/* Validates, logs, keeps best.tfm and counts validations without improvement. */
static TfmStatus validate_and_log(Trainer *t, TfmErr *err)
{
    double loss;
    TfmStatus st = validate(t, &loss, err);
    if (st != TFM_OK) return st;
    t->ts.validated = true;
    t->changed = true;
    ProgressEvent ev;
    fill_event(t, &ev);
    ev.valid_loss = loss;
    ev.valid_ppl = exp(loss);
    /* the best model: lowest loss, or highest BLEU (stored negated: lower is better) */
    double metric = loss;
    if (t->cfg->train.valid_bleu) {
        if ((st = validate_bleu(t, &ev.valid_bleu, err)) != TFM_OK) return st;
        metric = -ev.valid_bleu;
    }
    if ((st = progress_log(&t->prog, &ev, err)) != TFM_OK) return st;
    bool better = !t->ts.has_best || metric < t->ts.best_metric;
    if (t->cfg->train.valid_bleu)
        progress_note(&t->prog, "step %ld: valid loss %.4f ppl %.2f bleu %.2f%s", t->ts.step,
                      loss, exp(loss), ev.valid_bleu, better ? " (best)" : "");
    else
        progress_note(&t->prog, "step %ld: valid loss %.4f ppl %.2f%s", t->ts.step, loss,
                      exp(loss), better ? " (best)" : "");
    if (better) {
        t->ts.best_metric = metric;
        t->ts.has_best = true;
        t->ts.bad_validations = 0;
        /* the step, for `tfm info`; no clock time, so that a rerun or a
         * resumed run writes the same bytes as an uninterrupted one */
        TrainState ts = t->ts;
        ts.elapsed_s = ts.log_step_s = 0;
        ts.log_loss = ts.log_nll = 0;
        ts.log_tokens = ts.log_real_tokens = 0;
        return ckpt_save(t->best_path, t->cfg, t->bpe, &t->model, NULL, &ts, err);
    }
    t->ts.bad_validations++;
    return TFM_OK;
}

/* ---- the loop ---- */

static double eta(const Trainer *t, double step_s)
{
    const TrainConfig *tc = &t->cfg->train;
    double best = INFINITY;
    if (tc->max_steps > 0) best = fmin(best, (tc->max_steps - t->ts.step) * step_s);
    if (tc->max_time_s > 0) best = fmin(best, tc->max_time_s - elapsed(t));
    if (tc->max_epochs > 0 && t->train_b.n_batches > 0) {
        double left = (tc->max_epochs - t->ts.epoch) * (double)t->train_b.n_batches -
                      t->ts.batch_in_epoch;
        best = fmin(best, left * step_s);
    }
    return isinf(best) ? NAN : fmax(best, 0);
}

static bool limit_reached(const Trainer *t)
{
    const TrainConfig *tc = &t->cfg->train;
    return (tc->max_steps > 0 && t->ts.step >= tc->max_steps) ||
           (tc->max_epochs > 0 && t->ts.epoch >= tc->max_epochs) ||
           (tc->patience > 0 && t->ts.bad_validations >= tc->patience) ||
           (tc->max_time_s > 0 && elapsed(t) >= tc->max_time_s);
}

/* What a numeric stop leaves behind: say "last.tfm keeps ..." only when
 * there is one (a fresh run may stop before its first save). */
static const char *stop_note(const Trainer *t)
{
    return file_exists(t->last_path) ? "last.tfm keeps the last good state"
                                     : "no checkpoint was saved yet";
}

static TfmStatus train_step(Trainer *t, const Batch *b, TfmErr *err)
{
    const TrainConfig *tc = &t->cfg->train;
    LossStats ls;
    long next = t->ts.step + 1;
    TfmStatus st = model_forward(&t->model, b, tc->label_smoothing, &t->ts.dropout_rng, &ls, err);
    if (st != TFM_OK) return st;
    if (!isfinite(ls.loss))
        return err_set(err, TFM_ERR_NUMERIC, "step %ld: loss is %s; stopping (%s)", next,
                       isnan(ls.loss) ? "NaN" : "Inf", stop_note(t));
    model_backward(&t->model, b);
    double norm = clip_grad_norm(t->model.grads, t->model.n_params, tc->clip_norm);
    if (!isfinite(norm))
        return err_set(err, TFM_ERR_NUMERIC, "step %ld: gradient is %s; stopping (%s)", next,
                       isnan(norm) ? "NaN" : "Inf", stop_note(t));
    float lr = (float)lr_at(&tc->lr, t->model.cfg.d_model, next);
    adam_update(&t->adam, t->model.params, t->model.grads, lr);
    t->ts.step = next;
    t->ts.validated = false;
    t->changed = true;
    t->ts.log_loss += ls.loss;
    t->ts.log_nll += ls.nll;
    t->ts.log_tokens += ls.n_tokens;
    t->ts.log_real_tokens += batch_real_tokens(b);
    return TFM_OK;
}

static TfmStatus log_training(Trainer *t, bool to_log, double step_s, TfmErr *err)
{
    ProgressEvent ev;
    fill_event(t, &ev);
    TrainState *ts = &t->ts;
    if (ts->log_tokens > 0) {
        ev.train_loss = ts->log_loss / ts->log_tokens;
        ev.train_nll = ts->log_nll / ts->log_tokens;
    }
    ev.tok_per_s = ts->log_step_s > 0 ? ts->log_real_tokens / ts->log_step_s : NAN;
    ev.eta_s = eta(t, step_s);
    progress_show(&t->prog, &ev, false);
    if (!to_log) return TFM_OK;
    ts->log_loss = ts->log_nll = ts->log_step_s = 0;
    ts->log_tokens = ts->log_real_tokens = 0;
    return progress_log(&t->prog, &ev, err);
}

static TfmStatus loop(Trainer *t, TfmErr *err)
{
    const TrainConfig *tc = &t->cfg->train;
    TfmStatus st;
    double step_time = NAN;
    while (!limit_reached(t)) {
        if (stop_requested(t)) break;
        if (t->train_b.epoch != t->ts.epoch) batcher_plan_epoch(&t->train_b, t->ts.epoch);
        if (t->ts.batch_in_epoch >= t->train_b.n_batches) {
            t->ts.epoch++;
            t->ts.batch_in_epoch = 0;
            continue;
        }
        Batch b;
        batcher_get(&t->train_b, t->ts.batch_in_epoch, &b);
        double t0 = now_s();
        if ((st = train_step(t, &b, err)) != TFM_OK) return st;
        t->ts.batch_in_epoch++;
        double dt = now_s() - t0;
        t->ts.log_step_s += dt;
        step_time = isnan(step_time) ? dt : 0.9 * step_time + 0.1 * dt;
        if (t->opt->after_step) t->opt->after_step(t->ts.step, t->opt->after_step_ctx);
        bool validating = tc->valid_every > 0 && t->ts.step % tc->valid_every == 0;
        if ((st = log_training(t, t->ts.step % LOG_EVERY == 0 || validating || limit_reached(t),
                               step_time, err)) != TFM_OK)
            return st;
        if (validating) {
            if ((st = validate_and_log(t, err)) != TFM_OK) return st;
            if (tc->patience > 0 && t->ts.bad_validations >= tc->patience) {
                progress_note(&t->prog, "early stopping: no improvement in %d validations",
                              tc->patience);
                break;
            }
        }
        if (tc->save_every > 0 && t->ts.step % tc->save_every == 0 &&
            (st = save_last(t, err)) != TFM_OK)
            return st;
    }
    if (stop_requested(t)) {
        progress_note(&t->prog, "signal %d: saving %s", stop_requested(t), t->last_path);
        if ((st = save_last(t, err)) != TFM_OK) return st;
        err->signo = stop_requested(t);
        return err_set(err, TFM_INTERRUPTED, "interrupted at step %ld; run the same command "
                       "to resume", t->ts.step);
    }
    if (!t->ts.validated && (st = validate_and_log(t, err)) != TFM_OK) return st;
    /* a rerun of a finished run only copies the model again */
    if (t->changed && (st = save_last(t, err)) != TFM_OK) return st;
    /* a signal during that validation or save: saved, so stop as promised;
     * the rerun copies the model */
    if (stop_requested(t)) {
        err->signo = stop_requested(t);
        return err_set(err, TFM_INTERRUPTED, "interrupted after the last step (%ld), which is "
                       "saved; run the same command to copy the model to %s", t->ts.step, tc->model);
    }
    if ((st = ckpt_copy(t->best_path, tc->model, err)) != TFM_OK &&
        access(t->best_path, F_OK) != 0 && errno == ENOENT)
        return err_set(err, st, "%s: missing: the best model of this finished run is gone; "
                       "copy it back, or train again with --restart", t->best_path);
    return st;
}

TfmStatus train_run(const TfmConfig *cfg, const TrainOptions *opt, TfmErr *err)
{
    Trainer t;
    memset(&t, 0, sizeof t);
    t.cfg = cfg;
    t.opt = opt;
    t.run_start = now_s();
    if (opt->stop) opt->stop->started = 0;
    TfmStatus st;
    int lock_fd = -1;
    if ((st = check_outputs_spare_inputs(cfg, opt->config_path, err)) != TFM_OK) {
        if (opt->config_path) err_prefix(err, "%s: ", opt->config_path);
        return st;
    }
    const size_t existed = existing_prefix(cfg->train.out_dir);
    const bool new_out_dir = existed < strlen(cfg->train.out_dir);
    if ((st = make_dirs(cfg->train.out_dir, err)) != TFM_OK) return st;
    /* the checks that compare with out_dir's files need it to exist: again
     * for a new one (train.model "ck/last.tfm" with out_dir "ck") */
    if (new_out_dir && (st = check_outputs_spare_inputs(cfg, opt->config_path, err)) != TFM_OK) {
        remove_made_dirs(cfg->train.out_dir, existed);
        if (opt->config_path) err_prefix(err, "%s: ", opt->config_path);
        return st;
    }
    if ((st = lock_out_dir(cfg->train.out_dir, &lock_fd, err)) != TFM_OK) return st;
    /* the model's folder now, not after hours of training, and before
     * --restart removes anything: a refused run changes nothing */
    char *model_dir = xstrdup(cfg->train.model, NULL);
    st = model_dir ? make_dirs(dirname(model_dir), err) : err_set(err, TFM_ERR_NOMEM, "out of memory");
    free(model_dir);
    /* and a train.model that cannot be replaced (a FIFO, a device, a file
     * that is not a model, a read-only folder) too */
    if (st == TFM_OK) st = atomic_check_target(cfg->train.model, err);
    if (st == TFM_OK) st = ckpt_check_replaceable(cfg->train.model, err);
    if (st != TFM_OK) {
        close(lock_fd);
        return st;
    }
    remove_stale_temps(cfg->train.out_dir);
    remove_stale_model_temps(cfg->train.model);
    if (opt->restart) remove_checkpoints(cfg->train.out_dir);
    if (!(t.last_path = path_join(cfg->train.out_dir, "last.tfm", err)) ||
        !(t.best_path = path_join(cfg->train.out_dir, "best.tfm", err))) {
        st = TFM_ERR_NOMEM;
        goto done;
    }
    bool resuming = !opt->restart && file_exists(t.last_path);
    if (!resuming && !opt->restart &&
        (st = check_no_orphan_checkpoints(cfg->train.out_dir, err)) != TFM_OK)
        goto done;
    /* a fresh run starts a fresh log; a resumed one continues it */
    if ((st = progress_open(&t.prog, cfg->train.out_dir, !resuming, opt->quiet, err)) != TFM_OK)
        goto done;
    st = resuming ? resume(&t, err) : fresh_start(&t, err);
    if (st == TFM_OK && resuming) st = progress_trim(&t.prog, t.ts.step, err);
    if (st != TFM_OK) goto done;
    if ((st = load_data(&t, err)) != TFM_OK) goto done;
    if ((st = model_alloc_training(&t.model, cfg->train.batch_tokens, config_row_len(cfg->data.max_len),
                                   err)) != TFM_OK)
        goto done;
    t.run_start = now_s();
    if (opt->stop) opt->stop->started = 1;
    st = loop(&t, err);
done:
    progress_close(&t.prog);
    decoder_free(t.decoder);
    batcher_free(&t.train_b);
    batcher_free(&t.valid_b);
    corpus_free(&t.train);
    corpus_free(&t.valid);
    model_free(&t.model);
    adam_free(&t.adam);
    if (t.bpe) bpe_free(t.bpe);
    free(t.last_path);
    free(t.best_path);
    close(lock_fd);
    return st;
}
