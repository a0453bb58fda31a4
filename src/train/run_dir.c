/* run_dir: the output folder of a training run (train.out_dir) — creating
 * it, locking it against a second run, refusing outputs that would overwrite
 * the run's inputs, clearing a crashed run's temp files, --restart, and the
 * numbered checkpoints (listing, pruning). What a run writes there is
 * train.c's (last, best, numbered) and evaluate.c's (average). */
#include "train/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/path.h"
#include "model/ckpt.h"

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

static bool has_file(const char *dir, const char *name)
{
    char *p = path_join(dir, name, NULL);
    bool yes = p && access(p, F_OK) == 0;
    free(p);
    return yes;
}

bool run_dir_file_exists(const char *path)
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

/* The one spelling of a numbered checkpoint's name: ckpt.STEP.tfm. */
static const char CKPT_HEAD[] = "ckpt.", CKPT_TAIL[] = ".tfm";

char *run_dir_checkpoint_path(const char *dir, long step, TfmErr *err)
{
    char name[64];
    snprintf(name, sizeof name, "%s%ld%s", CKPT_HEAD, step, CKPT_TAIL);
    return path_join(dir, name, err);
}

/* Whether name[0..len) is ckpt.STEP.tfm (STEP in digits); *step is STEP. */
static bool checkpoint_step(const char *name, size_t len, long *step)
{
    const size_t head = sizeof CKPT_HEAD - 1, tail = sizeof CKPT_TAIL - 1;
    if (len <= head + tail || len > head + tail + 18 || memcmp(name, CKPT_HEAD, head) != 0 ||
        memcmp(name + len - tail, CKPT_TAIL, tail) != 0)
        return false;
    long s = 0;
    for (size_t i = head; i < len - tail; i++) {
        if (name[i] < '0' || name[i] > '9') return false;
        s = s * 10 + (name[i] - '0');
    }
    *step = s;
    return true;
}

/* True for the names of files tfm writes in out_dir: last.tfm, best.tfm,
 * average.tfm, ema.tfm, vocab.txt, ckpt.STEP.tfm. */
static bool is_own_file(const char *name, size_t len)
{
    static const char *const fixed[] = {"last.tfm", "best.tfm", "average.tfm", "ema.tfm",
                                        "vocab.txt"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (len == strlen(fixed[i]) && memcmp(name, fixed[i], len) == 0) return true;
    long step;
    return checkpoint_step(name, len, &step);
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
    enum { FIXED_INPUTS = 5, MAX_INPUTS = 64 };
    struct { const char *path, *key; } inputs[MAX_INPUTS] = {
        {cfg->data.valid_src, "data.valid_src"}, {cfg->data.valid_tgt, "data.valid_tgt"},
        {cfg->data.vocab, "data.vocab"}, {cfg->train.init, "train.init"},
        {config_path, "the config file"},
    };
    size_t n_inputs = FIXED_INPUTS;
    /* the training files (the first MAX_INPUTS of long lists: a clash is a slip) */
    for (int i = 0; i < cfg->data.train_src.n && n_inputs + 2 <= MAX_INPUTS; i++) {
        inputs[n_inputs].path = cfg->data.train_src.v[i];
        inputs[n_inputs++].key = "data.train_src";
        inputs[n_inputs].path = cfg->data.train_tgt.v[i];
        inputs[n_inputs++].key = "data.train_tgt";
    }
    static const char *const fixed[] = {"last.tfm", "best.tfm", "vocab.txt", "log.jsonl"};
    struct stat out_dir;
    const bool have_out_dir = stat(cfg->train.out_dir, &out_dir) == 0;
    if (have_out_dir && written_by_run(cfg->train.model, &out_dir))
        return err_set(err, TFM_ERR_CONFIG, "train.model: '%s' is a file that tfm train keeps in "
                       "train.out_dir; choose another name", cfg->train.model);
    for (size_t i = 0; i < n_inputs; i++) {
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
    long step;
    while ((e = readdir(d))) n += checkpoint_step(e->d_name, strlen(e->d_name), &step);
    closedir(d);
    if (n == 0) return TFM_OK;
    return err_set(err, TFM_ERR_IO, "%s: holds %ld numbered checkpoint%s of an earlier run but no "
                   "last.tfm to resume from; --restart removes them", dir, n, n == 1 ? "" : "s");
}

static int compare_steps(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int run_dir_list_checkpoints(const char *dir, long *steps)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < RUN_DIR_MAX_CHECKPOINTS)
        if (checkpoint_step(e->d_name, strlen(e->d_name), &steps[n])) n++;
    closedir(d);
    qsort(steps, (size_t)n, sizeof *steps, compare_steps);
    return n;
}

void run_dir_prune_checkpoints(const char *dir, int keep)
{
    long steps[RUN_DIR_MAX_CHECKPOINTS];
    int n = run_dir_list_checkpoints(dir, steps);
    for (int i = 0; i + keep < n; i++) {
        char *path = run_dir_checkpoint_path(dir, steps[i], NULL);
        if (path) unlink(path);
        free(path);
    }
}

TfmStatus run_dir_open(RunDir *rd, const TfmConfig *cfg, const char *config_path, bool restart,
                       TfmErr *err)
{
    *rd = (RunDir){.lock_fd = -1};
    TfmStatus st;
    if ((st = check_outputs_spare_inputs(cfg, config_path, err)) != TFM_OK) {
        if (config_path) err_prefix(err, "%s: ", config_path);
        return st;
    }
    const size_t existed = existing_prefix(cfg->train.out_dir);
    const bool new_out_dir = existed < strlen(cfg->train.out_dir);
    if ((st = make_dirs(cfg->train.out_dir, err)) != TFM_OK) return st;
    /* the checks that compare with out_dir's files need it to exist: again
     * for a new one (train.model "ck/last.tfm" with out_dir "ck") */
    if (new_out_dir && (st = check_outputs_spare_inputs(cfg, config_path, err)) != TFM_OK) {
        remove_made_dirs(cfg->train.out_dir, existed);
        if (config_path) err_prefix(err, "%s: ", config_path);
        return st;
    }
    if (!(rd->out_dir = xstrdup(cfg->train.out_dir, err))) {
        remove_made_dirs(cfg->train.out_dir, existed);
        return TFM_ERR_NOMEM;
    }
    rd->out_dir_existed = existed;
    rd->had_lock = has_file(rd->out_dir, "lock");
    rd->had_log = has_file(rd->out_dir, "log.jsonl");
    rd->had_vocab = has_file(rd->out_dir, "vocab.txt");
    if ((st = lock_out_dir(cfg->train.out_dir, &rd->lock_fd, err)) != TFM_OK) {
        free(rd->out_dir);
        rd->out_dir = NULL;
        return st;
    }
    /* the model's folder now, not after hours of training, and before
     * --restart removes anything: a refused run changes nothing */
    char *model_dir = xstrdup(cfg->train.model, NULL);
    st = model_dir ? make_dirs(dirname(model_dir), err) : err_set(err, TFM_ERR_NOMEM, "out of memory");
    free(model_dir);
    /* and a train.model that cannot be replaced (a FIFO, a device, a file
     * that is not a model, a read-only folder) too */
    if (st == TFM_OK) st = atomic_check_target(cfg->train.model, err);
    if (st == TFM_OK) st = ckpt_check_replaceable(cfg->train.model, err);
    if (st != TFM_OK) goto fail;
    remove_stale_temps(cfg->train.out_dir);
    remove_stale_model_temps(cfg->train.model);
    if (restart) remove_checkpoints(cfg->train.out_dir);
    if (!(rd->last_path = path_join(cfg->train.out_dir, "last.tfm", err)) ||
        !(rd->best_path = path_join(cfg->train.out_dir, "best.tfm", err)) ||
        !(rd->average_path = path_join(cfg->train.out_dir, "average.tfm", err)) ||
        !(rd->ema_path = path_join(cfg->train.out_dir, "ema.tfm", err))) {
        st = TFM_ERR_NOMEM;
        goto fail;
    }
    rd->resuming = !restart && run_dir_file_exists(rd->last_path);
    if (!rd->resuming && !restart &&
        (st = check_no_orphan_checkpoints(cfg->train.out_dir, err)) != TFM_OK)
        goto fail;
    return TFM_OK;
fail:
    run_dir_close(rd);
    return st;
}

static void remove_file_in(const char *dir, const char *name)
{
    char *p = path_join(dir, name, NULL);
    if (p) unlink(p);
    free(p);
}

void run_dir_abandon(RunDir *rd)
{
    if (rd->out_dir) {
        if (!rd->had_log) remove_file_in(rd->out_dir, "log.jsonl");
        if (!rd->had_vocab) remove_file_in(rd->out_dir, "vocab.txt");
        if (!rd->had_lock) remove_file_in(rd->out_dir, "lock");
        remove_made_dirs(rd->out_dir, rd->out_dir_existed);   /* only empty ones go */
    }
    run_dir_close(rd);
}

void run_dir_close(RunDir *rd)
{
    FREE_ALL(rd->out_dir, rd->last_path, rd->best_path, rd->average_path, rd->ema_path);
    if (rd->lock_fd >= 0) close(rd->lock_fd);
    *rd = (RunDir){.lock_fd = -1};
}
