/* ckpt: model files. Layout (all integers little-endian; see docs/model-format.md):
 *   "TFMMODEL" u32 version u32 flags
 *   sections: char tag[4], u64 length, payload
 *     "CONF" config JSON   "VOCB" vocabulary file   "TENS" named tensors
 *     "OUTV" the output pieces (model.output_vocab "target")
 *     "ADAM" optimizer moments (checkpoints)   "TRST" trainer state (checkpoints)
 *     "EMAW" the weights' moving average (checkpoints with train.ema)
 *     "QTEN" int8 models only (format version 2): the matrices as int8 with
 *            a scale per row; TENS then holds the other tensors
 *     "DATA" the fingerprint of the run's data files (checkpoints; text)
 *     "END " u64 FNV-1a-64 of every byte before this section
 * Readers check the checksum before parsing anything else. */
#include "model/ckpt.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/atomic_file.h"
#include "base/fnv.h"
#include "base/text.h"
#include "nn/packed_int8.h"
#include "text/bpe_subset.h"

#define MAGIC "TFMMODEL"
/* version 2: an int8 model (a QTEN section); older tfm refuse it by its
 * version instead of misreading it */
enum { FORMAT_VERSION = 1, FORMAT_VERSION_INT8 = 2, HEADER_SIZE = 16, SECTION_HEAD = 12, MAX_SECTIONS = 64 };
/* TRST: step, epoch, batch, rng[4], best, flags, bad validations, elapsed
 * (80 bytes), then (since 2026-11-23) the log sums; files without them are
 * read too */
enum {
    TRST_SIZE_V1 = 8 * 3 + 8 * 4 + 8 + 4 + 4 + 8,
    TRST_SIZE_V2 = TRST_SIZE_V1 + 8 * 5,     /* + the log sums */
    TRST_SIZE_V3 = TRST_SIZE_V2 + 8,         /* + the warm-up's end */
    TRST_SIZE = TRST_SIZE_V3 + 16            /* + the chunk, train.init's checksum */
};
enum { TRST_HAS_BEST = 1, TRST_VALIDATED = 2 };

/* ---- writing ---- */

typedef struct {
    FILE *f;
    uint64_t hash;
    int failed;
} Writer;

static void put(Writer *w, const void *data, size_t n)
{
    w->hash = fnv1a64(w->hash, data, n);
    if (n && fwrite(data, 1, n, w->f) != n) w->failed = 1;
}

static void put_u32(Writer *w, uint32_t v)
{
    unsigned char b[4] = {v, v >> 8, v >> 16, v >> 24};
    put(w, b, 4);
}

static void put_u64(Writer *w, uint64_t v)
{
    put_u32(w, (uint32_t)v);
    put_u32(w, (uint32_t)(v >> 32));
}

static void put_f64(Writer *w, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_u64(w, v);
}

static void put_section(Writer *w, const char tag[4], uint64_t len)
{
    put(w, tag, 4);
    put_u64(w, len);
}

/* Whether tensor t goes to QTEN (int8) rather than TENS. */
static bool stored_int8(const Model *m, const TensorInfo *t)
{
    return m->int8 && model_tensor_int8(t);
}

/* TENS (int8 false) or QTEN (true): count and payload bytes. */
static uint64_t tensors_payload_size(const Model *m, bool int8, uint32_t *count)
{
    uint64_t n = 4;
    *count = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        if (stored_int8(m, t) != int8) continue;
        ++*count;
        n += 12 + strlen(t->name) +
             (int8 ? 4ull * t->rows + (uint64_t)t->rows * t->cols : 4ull * t->rows * t->cols);
    }
    return n;
}

static void put_tensor_head(Writer *w, const TensorInfo *t)
{
    size_t name_len = strlen(t->name);
    put_u32(w, (uint32_t)name_len);
    put(w, t->name, name_len);
    put_u32(w, (uint32_t)t->rows);
    put_u32(w, (uint32_t)t->cols);
}

/* QTEN: per matrix, its rows' scales, then its int8 values; quantizing the
 * weights model_quantize left gives back their int8 values exactly. */
static TfmStatus put_int8_tensors(Writer *w, const Model *m, const char *path, TfmErr *err)
{
    uint32_t count;
    put_section(w, "QTEN", tensors_payload_size(m, true, &count));
    put_u32(w, count);
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        if (!stored_int8(m, t)) continue;
        int8_t *q = xmalloc((size_t)t->rows * t->cols, err);
        float *s = xmalloc(sizeof(float) * t->rows, err);
        if (!q || !s) {
            free(q);
            free(s);
            return err_set(err, TFM_ERR_NOMEM, "%s: out of memory", path);
        }
        for (int r = 0; r < t->rows; r++)
            s[r] = int8_quantize_row(q + (size_t)r * t->cols,
                                     m->params + t->offset + (size_t)r * t->cols, t->cols);
        put_tensor_head(w, t);
        put(w, s, sizeof(float) * t->rows);
        put(w, q, (size_t)t->rows * t->cols);
        free(q);
        free(s);
    }
    return TFM_OK;
}

TfmStatus ckpt_save(const char *path, const TfmConfig *cfg, const Bpe *bpe,
                    const Model *model, const Adam *adam, const float *ema,
                    const TrainState *ts, TfmErr *err)
{
    return ckpt_save_run(path, cfg, bpe, model, adam, ema, ts, NULL, err);
}

TfmStatus ckpt_save_run(const char *path, const TfmConfig *cfg, const Bpe *bpe,
                        const Model *model, const Adam *adam, const float *ema,
                        const TrainState *ts, const char *data_print, TfmErr *err)
{
    /* the architecture is the model's own: a caller's config that said
     * otherwise must not end up in the file above these weights */
    TfmConfig as_is = *cfg;
    as_is.model = model->cfg;
    as_is.data.max_len = config_data_max_len(model->cfg.max_len);
    char *json = config_to_json(&as_is);
    size_t vocab_len = 0;
    char *vocab = bpe_serialize(bpe, &vocab_len);
    AtomicFile af = {0};
    TfmStatus st = TFM_OK;
    if (!json || !vocab) {
        st = err_set(err, TFM_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if ((st = atomic_open(&af, path, err)) != TFM_OK) goto done;
    setvbuf(af.f, NULL, _IOFBF, 1 << 20);
    Writer w = {af.f, FNV1A64_START, 0};
    bool train = adam && ts;
    put(&w, MAGIC, 8);
    put_u32(&w, model->int8 ? FORMAT_VERSION_INT8 : FORMAT_VERSION);
    put_u32(&w, train ? 1 : 0);

    put_section(&w, "CONF", strlen(json));
    put(&w, json, strlen(json));
    put_section(&w, "VOCB", vocab_len);
    put(&w, vocab, vocab_len);

    uint32_t n_float;
    put_section(&w, "TENS", tensors_payload_size(model, false, &n_float));
    put_u32(&w, n_float);
    for (int i = 0; i < model->n_tensors; i++) {
        const TensorInfo *t = &model->tensors[i];
        if (stored_int8(model, t)) continue;
        put_tensor_head(&w, t);
        put(&w, model->params + t->offset, sizeof(float) * (size_t)t->rows * t->cols);
    }
    if (model->int8 && (st = put_int8_tensors(&w, model, path, err)) != TFM_OK) {
        atomic_abort(&af);
        goto done;
    }
    if (model->out_ids) {               /* model.output_vocab "target" */
        put_section(&w, "OUTV", 4 + 4ull * (uint64_t)model->n_out);
        put_u32(&w, (uint32_t)model->n_out);
        for (int i = 0; i < model->n_out; i++) put_u32(&w, (uint32_t)model->out_ids[i]);
    }
    if (train) {
        put_section(&w, "ADAM", 16 + 8ull * adam->n);
        put_u64(&w, (uint64_t)adam->step);
        put_u64(&w, adam->n);
        put(&w, adam->m, sizeof(float) * adam->n);
        put(&w, adam->v, sizeof(float) * adam->n);
        if (ema) {
            put_section(&w, "EMAW", 8 + 4ull * model->n_params);
            put_u64(&w, model->n_params);
            put(&w, ema, sizeof(float) * model->n_params);
        }
    }
    /* a model (no ADAM) keeps the trainer state too: `tfm info` shows its step */
    if (ts) {
        put_section(&w, "TRST", TRST_SIZE);
        put_u64(&w, (uint64_t)ts->step);
        put_u64(&w, (uint64_t)ts->epoch);
        put_u64(&w, (uint64_t)ts->batch_in_epoch);
        for (int i = 0; i < 4; i++) put_u64(&w, ts->dropout_rng.s[i]);
        put_f64(&w, ts->best_metric);
        put_u32(&w, (ts->has_best ? TRST_HAS_BEST : 0) | (ts->validated ? TRST_VALIDATED : 0));
        put_u32(&w, (uint32_t)ts->bad_validations);
        put_f64(&w, ts->elapsed_s);
        put_f64(&w, ts->log_loss);
        put_f64(&w, ts->log_nll);
        put_f64(&w, ts->log_step_s);
        put_u64(&w, (uint64_t)ts->log_tokens);
        put_u64(&w, (uint64_t)ts->log_real_tokens);
        put_f64(&w, ts->warmup_end_s);
        put_u64(&w, (uint64_t)ts->chunk);
        put_u64(&w, ts->init_sum);
    }
    if (data_print) {
        put_section(&w, "DATA", strlen(data_print));
        put(&w, data_print, strlen(data_print));
    }
    uint64_t sum = w.hash;
    put_section(&w, "END ", 8);
    put_u64(&w, sum);
    if (w.failed) {
        st = err_set(err, TFM_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        atomic_abort(&af);
        goto done;
    }
    st = atomic_commit(&af, err);
done:
    free(json);
    free(vocab);
    return st;
}

/* ---- reading ---- */

typedef struct {
    const unsigned char *p;
    size_t len, pos;
    int short_read;
} Reader;

static const unsigned char *take(Reader *r, size_t n)
{
    if (r->short_read || n > r->len - r->pos) {
        r->short_read = 1;
        return NULL;
    }
    const unsigned char *p = r->p + r->pos;
    r->pos += n;
    return p;
}

static uint32_t get_u32(Reader *r)
{
    const unsigned char *b = take(r, 4);
    return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
}

static uint64_t get_u64(Reader *r)
{
    uint64_t lo = get_u32(r);
    return lo | (uint64_t)get_u32(r) << 32;
}

static double get_f64(Reader *r)
{
    uint64_t v = get_u64(r);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static uint64_t le_u64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

bool ckpt_file_is_model(const char *path)
{
    FILE *f = text_open_regular(path, NULL);
    if (!f) return false;
    char head[8];
    const bool is = fread(head, 1, sizeof head, f) == sizeof head && memcmp(head, MAGIC, 8) == 0;
    fclose(f);
    return is;
}

/* Checks the magic, the version and that the section lengths chain up to an
 * END section that ends the file, reading only the heads: a large file that
 * is not a model fails here, before its size in memory is asked for. */
static TfmStatus check_layout(FILE *f, uint64_t size, const char *path, TfmErr *err)
{
    unsigned char head[HEADER_SIZE];
    size_t got = size < HEADER_SIZE ? fread(head, 1, (size_t)size, f)
                                    : fread(head, 1, HEADER_SIZE, f);
    if (got == 0 || memcmp(head, MAGIC, got < 8 ? got : 8) != 0)
        return err_set(err, TFM_ERR_FORMAT, "%s: not a tfm model file (bad magic)", path);
    if (got < HEADER_SIZE) return err_set(err, TFM_ERR_FORMAT, "%s: truncated file", path);
    uint32_t version = (uint32_t)le_u64(head + 8), flags = (uint32_t)(le_u64(head + 8) >> 32);
    if (version != FORMAT_VERSION && version != FORMAT_VERSION_INT8)
        return err_set(err, TFM_ERR_FORMAT, "%s: unsupported model format version %u (this tfm reads "
                       "%d and %d)", path, version, FORMAT_VERSION, FORMAT_VERSION_INT8);
    if (flags > 1)      /* 1: a checkpoint (ADAM follows); nothing else is defined */
        return err_set(err, TFM_ERR_FORMAT, "%s: unknown header flags 0x%X (damaged file)", path,
                       flags);
    uint64_t pos = HEADER_SIZE;
    for (int count = 0;; count++) {
        /* a writer makes six; zero-length ones must not walk a huge file */
        if (count == MAX_SECTIONS)
            return err_set(err, TFM_ERR_FORMAT, "%s: more than %d sections (damaged file)", path,
                           MAX_SECTIONS);
        unsigned char sec[SECTION_HEAD];
        if (size - pos < SECTION_HEAD || fseeko(f, (off_t)pos, SEEK_SET) != 0 ||
            fread(sec, 1, SECTION_HEAD, f) != SECTION_HEAD)
            return err_set(err, TFM_ERR_FORMAT, "%s: truncated file", path);
        uint64_t n = le_u64(sec + 4);
        pos += SECTION_HEAD;
        if (n > size - pos) return err_set(err, TFM_ERR_FORMAT, "%s: truncated file", path);
        pos += n;
        if (memcmp(sec, "END ", 4) == 0) break;
    }
    if (pos != size) return err_set(err, TFM_ERR_FORMAT, "%s: unexpected data after the end", path);
    if (fseeko(f, 0, SEEK_SET) != 0)
        return err_set(err, TFM_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
    return TFM_OK;
}

/* The whole model file, its layout checked before its size is allocated. */
static TfmStatus read_model_file(const char *path, unsigned char **out, size_t *len, TfmErr *err)
{
    /* "tfm: : cannot open" would not say what is wrong */
    if (!*path) return err_set(err, TFM_ERR_IO, "model path is empty");
    char *buf;
    TfmStatus st = text_read_file(path, SIZE_MAX - 1, "a model", check_layout, &buf, len, err);
    if (st == TFM_OK) *out = (unsigned char *)buf;
    return st;
}

/* Finds the sections; checks the checksum. */
typedef struct {
    Reader conf, vocb, tens, adam, trst, ema, outv, qten, data;
    bool has_adam, has_trst, has_ema, has_outv, has_qten, has_data;
    uint64_t checksum;
} Sections;

static TfmStatus split_sections(const unsigned char *buf, size_t len, const char *path,
                                Sections *s, TfmErr *err)
{
    memset(s, 0, sizeof *s);
    /* the header was checked by check_layout */
    Reader r = {buf, len, HEADER_SIZE, 0};
    bool seen_end = false, seen_conf = false, seen_vocb = false, seen_tens = false;
    while (!seen_end) {
        size_t start = r.pos;
        const unsigned char *tag = take(&r, 4);
        uint64_t n = get_u64(&r);
        if (r.short_read || n > r.len - r.pos)
            return err_set(err, TFM_ERR_FORMAT, "%s: truncated file", path);
        Reader body = {r.p + r.pos, (size_t)n, 0, 0};
        r.pos += (size_t)n;
        if (memcmp(tag, "END ", 4) == 0) {
            uint64_t h = fnv1a64(FNV1A64_START, buf, start);
            const uint64_t stored = n == 8 ? get_u64(&body) : 0;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
            h = stored;     /* the fuzzer (tests/fuzz) gets past the checksum to the parser */
#endif
            if (n != 8 || stored != h)
                return err_set(err, TFM_ERR_FORMAT, "%s: checksum mismatch (corrupted file)", path);
            if (r.pos != r.len)
                return err_set(err, TFM_ERR_FORMAT, "%s: unexpected data after the end", path);
            s->checksum = stored;
            seen_end = true;
            continue;
        }
        Reader *dst = NULL;
        bool *seen = NULL;
        if (memcmp(tag, "CONF", 4) == 0) { dst = &s->conf; seen = &seen_conf; }
        else if (memcmp(tag, "VOCB", 4) == 0) { dst = &s->vocb; seen = &seen_vocb; }
        else if (memcmp(tag, "TENS", 4) == 0) { dst = &s->tens; seen = &seen_tens; }
        else if (memcmp(tag, "ADAM", 4) == 0) { dst = &s->adam; seen = &s->has_adam; }
        else if (memcmp(tag, "TRST", 4) == 0) { dst = &s->trst; seen = &s->has_trst; }
        else if (memcmp(tag, "EMAW", 4) == 0) { dst = &s->ema; seen = &s->has_ema; }
        else if (memcmp(tag, "OUTV", 4) == 0) { dst = &s->outv; seen = &s->has_outv; }
        else if (memcmp(tag, "QTEN", 4) == 0) { dst = &s->qten; seen = &s->has_qten; }
        else if (memcmp(tag, "DATA", 4) == 0) { dst = &s->data; seen = &s->has_data; }
        /* unknown sections are skipped: newer writers may add some */
        if (!dst) continue;
        /* two of one section: which one is meant is anyone's guess */
        if (*seen)
            return err_set(err, TFM_ERR_FORMAT, "%s: duplicate %.4s section", path, (const char *)tag);
        *dst = body;
        *seen = true;
    }
    if (!seen_conf || !seen_vocb || !seen_tens)
        return err_set(err, TFM_ERR_FORMAT, "%s: missing %s section", path,
                       !seen_conf ? "config" : !seen_vocb ? "vocabulary" : "tensor");
    return TFM_OK;
}

/* Whether every value is finite and at least lo (NaN fails both tests). */
static bool all_in(const float *v, size_t n, float lo)
{
    for (size_t i = 0; i < n; i++)
        if (!(v[i] >= lo && v[i] <= FLT_MAX)) return false;
    return true;
}

/* TENS (float32) or QTEN (int8: each row's scale, then the values, which
 * are dequantized into params exactly as model_quantize leaves them).
 * seen: which tensors an earlier section held already. */
static TfmStatus read_tensors(Reader *r, Model *m, char *seen, bool int8, const char *path,
                              TfmErr *err)
{
    const uint32_t count = get_u32(r);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t name_len = get_u32(r);
        const unsigned char *name = take(r, name_len);
        uint32_t rows = get_u32(r), cols = get_u32(r);
        if (r->short_read || name_len >= sizeof m->tensors[0].name)
            return err_set(err, TFM_ERR_FORMAT, "%s: malformed tensor table", path);
        char nm[sizeof m->tensors[0].name];
        memcpy(nm, name, name_len);
        nm[name_len] = '\0';
        const TensorInfo *t = model_tensor(m, nm);
        if (!t || seen[t - m->tensors])
            return err_set(err, TFM_ERR_FORMAT, "%s: %s tensor '%s'", path,
                           t ? "duplicate" : "unexpected", nm);
        if ((int)rows != t->rows || (int)cols != t->cols)
            return err_set(err, TFM_ERR_FORMAT, "%s: tensor '%s' is %ux%u, the config needs %dx%d",
                           path, nm, rows, cols, t->rows, t->cols);
        if (int8 && !model_tensor_int8(t))
            return err_set(err, TFM_ERR_FORMAT, "%s: tensor '%s' cannot be int8", path, nm);
        size_t nv = (size_t)rows * cols;
        float *dst = m->params + t->offset;
        if (!int8) {
            const unsigned char *data = take(r, nv * sizeof(float));
            if (!data) return err_set(err, TFM_ERR_FORMAT, "%s: truncated tensor '%s'", path, nm);
            memcpy(dst, data, nv * sizeof(float));
            if (!all_in(dst, nv, -FLT_MAX))
                return err_set(err, TFM_ERR_FORMAT, "%s: tensor '%s' holds NaN or Inf", path, nm);
        } else {
            const unsigned char *scales = take(r, (size_t)rows * sizeof(float));
            const int8_t *q = (const int8_t *)take(r, nv);
            if (!scales || !q)
                return err_set(err, TFM_ERR_FORMAT, "%s: truncated tensor '%s'", path, nm);
            for (uint32_t row = 0; row < rows; row++) {
                float sc;
                memcpy(&sc, scales + 4 * (size_t)row, sizeof sc);
                /* a scale of 0 is a row of zeros; -128 is outside the
                 * symmetric range the kernels assume */
                if (!all_in(&sc, 1, 0))
                    return err_set(err, TFM_ERR_FORMAT, "%s: int8 tensor '%s' has a negative, "
                                   "NaN or Inf scale", path, nm);
                const int8_t *qr = q + (size_t)row * cols;
                float *dr = dst + (size_t)row * cols;
                int least = 0, most = 0;        /* reductions, so the loops vectorize */
                for (uint32_t c = 0; c < cols; c++) {
                    least = qr[c] < least ? qr[c] : least;
                    most = qr[c] > most ? qr[c] : most;
                }
                if (least == -128)
                    return err_set(err, TFM_ERR_FORMAT, "%s: int8 tensor '%s' holds -128", path,
                                   nm);
                /* the largest |value| times the scale: finite, or the row is not */
                if (!((float)(most > -least ? most : -least) * sc <= FLT_MAX))
                    return err_set(err, TFM_ERR_FORMAT, "%s: tensor '%s' holds NaN or Inf", path,
                                   nm);
                for (uint32_t c = 0; c < cols; c++) dr[c] = (float)qr[c] * sc;
            }
        }
        seen[t - m->tensors] = 1;
    }
    if (r->short_read) return err_set(err, TFM_ERR_FORMAT, "%s: malformed tensor table", path);
    if (r->pos != r->len)
        return err_set(err, TFM_ERR_FORMAT, "%s: unexpected data after the last tensor", path);
    return TFM_OK;
}

/* TENS, and QTEN in an int8 model: every tensor the config implies, once. */
static TfmStatus read_all_tensors(Sections *s, Model *m, const char *path, TfmErr *err)
{
    Reader peek_f = s->tens, peek_q = s->qten;
    const uint32_t nf = get_u32(&peek_f), nq = s->has_qten ? get_u32(&peek_q) : 0;
    if (peek_f.short_read || peek_q.short_read || (uint64_t)nf + nq != (uint64_t)m->n_tensors)
        return err_set(err, TFM_ERR_FORMAT, "%s: has %llu tensors, the config needs %d", path,
                       (unsigned long long)nf + nq, m->n_tensors);
    char *seen = xcalloc((size_t)m->n_tensors, 1, err);
    if (!seen) return TFM_ERR_NOMEM;
    TfmStatus st = read_tensors(&s->tens, m, seen, false, path, err);
    if (st == TFM_OK && s->has_qten) st = read_tensors(&s->qten, m, seen, true, path, err);
    free(seen);
    m->int8 = s->has_qten;
    return st;
}

static TfmStatus read_trainer_state(const Sections *s, ModelFile *mf, const char *path, TfmErr *err)
{
    Reader tr = s->trst;
    TrainState *ts = &mf->ts;
    ts->step = (long)get_u64(&tr);
    ts->epoch = (long)get_u64(&tr);
    ts->batch_in_epoch = (long)get_u64(&tr);
    for (int i = 0; i < 4; i++) ts->dropout_rng.s[i] = get_u64(&tr);
    ts->best_metric = get_f64(&tr);
    uint32_t flags = get_u32(&tr);
    ts->has_best = flags & TRST_HAS_BEST;
    ts->validated = flags & TRST_VALIDATED;
    ts->bad_validations = (int)get_u32(&tr);
    ts->elapsed_s = get_f64(&tr);
    if (tr.len >= TRST_SIZE_V2) {   /* files before the log sums have none */
        ts->log_loss = get_f64(&tr);
        ts->log_nll = get_f64(&tr);
        ts->log_step_s = get_f64(&tr);
        ts->log_tokens = (long)get_u64(&tr);
        ts->log_real_tokens = (long)get_u64(&tr);
    }
    if (tr.len >= TRST_SIZE_V3) ts->warmup_end_s = get_f64(&tr);
    if (tr.len >= TRST_SIZE) {
        ts->chunk = (long)get_u64(&tr);
        ts->init_sum = get_u64(&tr);
    }
    bool rng_zero = !(ts->dropout_rng.s[0] | ts->dropout_rng.s[1] | ts->dropout_rng.s[2] |
                      ts->dropout_rng.s[3]);    /* xoshiro would stay at zero */
    if (tr.short_read || tr.pos != tr.len || ts->step < 0 || ts->epoch < 0 ||
        ts->batch_in_epoch < 0 || ts->chunk < 0 || ts->bad_validations < 0 || !isfinite(ts->elapsed_s) ||
        ts->elapsed_s < 0 || (flags & ~(uint32_t)(TRST_HAS_BEST | TRST_VALIDATED)) || rng_zero ||
        !isfinite(ts->log_loss) || !isfinite(ts->log_nll) || !isfinite(ts->log_step_s) ||
        ts->log_step_s < 0 || ts->log_tokens < 0 || ts->log_real_tokens < 0 ||
        !isfinite(ts->warmup_end_s) || ts->warmup_end_s < 0)
        return err_set(err, TFM_ERR_FORMAT, "%s: malformed trainer state", path);
    mf->has_step = true;
    return TFM_OK;
}

static TfmStatus read_optimizer_state(const Sections *s, ModelFile *mf, const char *path, TfmErr *err)
{
    Reader ar = s->adam;
    long step = (long)get_u64(&ar);
    uint64_t n = get_u64(&ar);
    if (ar.short_read || n != mf->model.n_params || ar.len - ar.pos != 8 * n)
        return err_set(err, TFM_ERR_FORMAT, "%s: optimizer state does not match the model", path);
    const AdamConfig ac = config_adam(&mf->cfg.train);
    TfmStatus st = adam_init(&mf->adam, mf->model.n_params, &ac, err);
    if (st != TFM_OK) return st;
    mf->adam.step = step;
    memcpy(mf->adam.m, take(&ar, 4 * n), 4 * n);
    memcpy(mf->adam.v, take(&ar, 4 * n), 4 * n);
    /* a resumed run would turn such a state into NaN weights at its first step */
    if (!all_in(mf->adam.m, n, -FLT_MAX) || !all_in(mf->adam.v, n, 0))
        return err_set(err, TFM_ERR_FORMAT, "%s: optimizer state holds NaN, Inf or a "
                       "negative second moment", path);
    if (!s->has_ema) return TFM_OK;
    Reader er = s->ema;
    n = get_u64(&er);
    if (er.short_read || n != mf->model.n_params || er.len - er.pos != 4 * n)
        return err_set(err, TFM_ERR_FORMAT, "%s: weight average does not match the model", path);
    if (!(mf->ema = xmalloc(4 * n, err))) return TFM_ERR_NOMEM;
    memcpy(mf->ema, take(&er, 4 * n), 4 * n);
    if (!all_in(mf->ema, n, -FLT_MAX))
        return err_set(err, TFM_ERR_FORMAT, "%s: weight average holds NaN or Inf", path);
    return TFM_OK;
}

/* model.output_vocab "target" models carry their output pieces (OUTV); the
 * others must not. */
static TfmStatus read_output_vocab(const Sections *s, Model *m, const Bpe *bpe, const char *path,
                                   TfmErr *err)
{
    const bool want = m->cfg.output_vocab == OUTPUT_TARGET;
    if (want != s->has_outv)
        return err_set(err, TFM_ERR_FORMAT, "%s: %s", path, want ?
                       "model.output_vocab \"target\" but no output vocabulary (OUTV section)" :
                       "an output vocabulary (OUTV section) but model.output_vocab \"all\"");
    if (!want) return TFM_OK;
    Reader r = s->outv;
    const uint32_t n = get_u32(&r);
    if (r.short_read || n > (uint32_t)m->cfg.vocab_size || r.len - r.pos != 4ull * n)
        return err_set(err, TFM_ERR_FORMAT, "%s: OUTV section of the wrong size", path);
    int *ids = xmalloc(sizeof(int) * (n ? n : 1), err);
    if (!ids) return TFM_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t v = get_u32(&r);
        ids[i] = v > INT32_MAX ? -1 : (int)v;
    }
    TfmStatus st = model_set_output_vocab(m, ids, (int)n, err);
    free(ids);
    if (st == TFM_OK) {     /* and the vocabulary can write any text in them */
        bool *in = xcalloc((size_t)m->cfg.vocab_size, sizeof *in, err);
        if (!in) return TFM_ERR_NOMEM;
        for (int i = 0; i < m->n_out; i++) in[m->out_ids[i]] = true;
        st = bpe_subset_check(bpe, in, err);
        free(in);
    }
    if (st == TFM_ERR_FORMAT) err_prefix(err, "%s: ", path);
    return st;
}

TfmStatus ckpt_load(const char *path, ModelFile *mf, bool want_train_state, TfmErr *err)
{
    memset(mf, 0, sizeof *mf);
    config_defaults(&mf->cfg);
    unsigned char *buf = NULL;
    size_t len = 0;
    char *json = NULL;
    TfmStatus st = read_model_file(path, &buf, &len, err);
    if (st != TFM_OK) goto fail;
    Sections s;
    if ((st = split_sections(buf, len, path, &s, err)) != TFM_OK) goto fail;
    /* version 2 is an int8 model, and only it has int8 tensors */
    if ((buf[8] == FORMAT_VERSION_INT8) != s.has_qten) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: %s", path, s.has_qten ?
                     "int8 tensors (QTEN section) in a version 1 file" :
                     "a version 2 (int8) file without int8 tensors (QTEN section)");
        goto fail;
    }

    json = xmalloc(s.conf.len + 1, err);
    if (!json) { st = TFM_ERR_NOMEM; goto fail; }
    memcpy(json, s.conf.p, s.conf.len);
    json[s.conf.len] = '\0';
    config_free(&mf->cfg);
    if ((st = config_parse(&mf->cfg, json, NULL, false, err)) != TFM_OK) {
        err_prefix(err, "%s: embedded config: ", path);
        st = TFM_ERR_FORMAT;
        goto fail;
    }
    if ((st = bpe_deserialize(&mf->bpe, (const char *)s.vocb.p, s.vocb.len, path, err)) != TFM_OK)
        goto fail;
    mf->cfg.model.vocab_size = bpe_vocab_size(mf->bpe);
    mf->cfg.model.max_len = config_positions(mf->cfg.data.max_len);
    /* the tensors must be in the file before their memory is asked for */
    size_t want = model_param_count(&mf->cfg.model);
    if (want == 0 || want > s.tens.len / sizeof(float) + s.qten.len) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: the config needs %zu parameters, the file holds "
                     "fewer", path, want);
        goto fail;
    }
    if ((st = model_init(&mf->model, &mf->cfg.model, err)) != TFM_OK) goto fail;
    if ((st = read_all_tensors(&s, &mf->model, path, err)) != TFM_OK) goto fail;
    if ((st = read_output_vocab(&s, &mf->model, mf->bpe, path, err)) != TFM_OK) goto fail;
    if (s.has_trst && (st = read_trainer_state(&s, mf, path, err)) != TFM_OK) goto fail;
    mf->checksum = s.checksum;
    if (s.has_data) {
        if (!(mf->data_print = xmalloc(s.data.len + 1, err))) { st = TFM_ERR_NOMEM; goto fail; }
        memcpy(mf->data_print, s.data.p, s.data.len);
        mf->data_print[s.data.len] = '\0';
    }
    if (s.has_trst && s.has_adam) {
        mf->has_train_state = true;
        mf->has_ema = s.has_ema;
        if (want_train_state && (st = read_optimizer_state(&s, mf, path, err)) != TFM_OK) goto fail;
    }
    free(json);
    free(buf);
    return TFM_OK;
fail:
    free(json);
    free(buf);
    ckpt_free(mf);
    return st;
}

void ckpt_free(ModelFile *mf)
{
    config_free(&mf->cfg);
    if (mf->bpe) bpe_free(mf->bpe);
    model_free(&mf->model);
    adam_free(&mf->adam);
    free(mf->ema);
    free(mf->data_print);
    memset(mf, 0, sizeof *mf);
}

TfmStatus ckpt_copy(const char *from, const char *to, TfmErr *err)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    TfmStatus st = read_model_file(from, &buf, &len, err);
    if (st != TFM_OK) return st;
    /* a damaged source is an error here, not a damaged copy found later */
    Sections s;
    if ((st = split_sections(buf, len, from, &s, err)) != TFM_OK) {
        free(buf);
        return st;
    }
    AtomicFile af;
    if ((st = atomic_open(&af, to, err)) == TFM_OK) {
        if (fwrite(buf, 1, len, af.f) != len) {
            atomic_abort(&af);
            st = err_set(err, TFM_ERR_IO, "%s: write failed: %s", to, strerror(errno));
        } else {
            st = atomic_commit(&af, err);
        }
    }
    free(buf);
    return st;
}

TfmStatus ckpt_check_replaceable(const char *path, TfmErr *err)
{
    return atomic_check_own_kind(path, MAGIC, "tfm model", err);
}
