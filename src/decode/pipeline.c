/* pipeline: see pipeline.h. Moved out of cmd_translate.c so that `tfm
 * serve` translates a line exactly as `tfm translate` does. */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/text.h"
#include "nn/blas.h"
#include "nn/gemm_bf16.h"
#include "decode/pipeline.h"

TfmStatus pipeline_parse_weights(const char *who, const char *arg, int n, float *w, TfmErr *err)
{
    const char *p = arg;
    int count = 0;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v >= 0) || v > 1e6 || (*end && *end != ','))
            return err_set(err, TFM_ERR_USAGE, "%s: --weights: expected comma-separated "
                           "numbers >= 0, got '%s'", who, arg);
        if (count < n) w[count] = (float)v;
        count++;
        p = *end ? end + 1 : end;
    }
    if (count != n)
        return err_set(err, TFM_ERR_USAGE, "%s: --weights has %d values for %d models (-m)",
                       who, count, n);
    return TFM_OK;
}

/* --precision int8 quantizes the weights; fp32 or bf16 on an int8 model
 * runs float products over its int8 weights; none keeps the model's. */
static void use_int8(Model *m, const char *precision)
{
    if (!precision) return;
    if (strcmp(precision, "int8") != 0) m->int8 = false;
    else if (!m->int8) model_quantize(m);
}

/* --precision, else the model's: int8 for an int8 model file, else its
 * train.precision. */
static TfmStatus choose_precision(Pipeline *p, const PipelineSpec *s, TfmErr *err)
{
    char what[64];
    use_int8(&p->mf.model, s->precision);
    if (s->precision) {
        if (strcmp(s->precision, "bf16") != 0) return TFM_OK;
        snprintf(what, sizeof what, "%s: --precision bf16", s->who);
        return blas_use_bf16(what, err);
    }
    if (p->mf.model.int8 || p->mf.cfg.train.precision != PRECISION_BF16) return TFM_OK;
    if (!bf16_available()) {
        p->bf16_fallback = true;
        return TFM_OK;
    }
    snprintf(what, sizeof what, "%s: the model's train.precision bf16", s->who);
    return blas_use_bf16(what, err);
}

TfmStatus pipeline_load(Pipeline *p, const PipelineSpec *s, TfmErr *err)
{
    memset(p, 0, sizeof *p);
    const char *model = s->models[0];
    /* the default model.tfm is easy to forget: say how to name another */
    if (*model && access(model, F_OK) != 0 && errno == ENOENT)
        return err_set(err, TFM_ERR_IO, "%s: cannot open: %s (choose the model with -m MODEL or "
                       "$TFM_MODEL)", model, strerror(ENOENT));
    TfmStatus st = ckpt_load(model, &p->mf, false, err);
    if (st != TFM_OK) return st;
    p->max_src = config_max_sentence(p->mf.model.cfg.max_len);
    if ((st = choose_precision(p, s, err)) != TFM_OK) return st;
    const DecodeConfig *dc = &p->mf.cfg.decode;
    DecodeOptions *o = &p->dopt;
    o->beam = s->have_beam ? s->beam : dc->beam;
    /* a model written before decode.* had these limits may hold more */
    o->alpha = s->have_alpha ? s->alpha : fminf(dc->alpha, (float)DECODE_MAX_ALPHA);
    o->max_len_a = s->have_a ? s->max_len_a : fminf(dc->max_len_a, (float)DECODE_MAX_LEN_A);
    o->max_len_b = s->have_b ? s->max_len_b
                             : (dc->max_len_b < DECODE_MAX_LEN_B ? dc->max_len_b : DECODE_MAX_LEN_B);
    o->nbest = s->nbest > 0 ? s->nbest : 1;
    o->no_repeat_ngram = s->no_repeat;
    return TFM_OK;
}

/* The other models of an ensemble: loaded, checked against the first, and
 * made members of p->dec. */
static TfmStatus start_ensemble(Pipeline *p, const PipelineSpec *s, int max_sents, int max_beam,
                                TfmErr *err)
{
    TfmStatus st;
    if (s->weights) {
        if ((st = pipeline_parse_weights(s->who, s->weights, s->n_models, p->weights, err)) != TFM_OK)
            return st;
        p->have_weights = true;
    }
    if (s->n_models < 2) return TFM_OK;
    const int n = s->n_models - 1;
    p->extra_mf = xcalloc((size_t)n, sizeof *p->extra_mf, err);
    p->extra_dec = xcalloc((size_t)n, sizeof *p->extra_dec, err);
    if (!p->extra_mf || !p->extra_dec) return TFM_ERR_NOMEM;
    size_t vlen0, vlen;
    char *v0 = bpe_serialize(p->mf.bpe, &vlen0);
    if (!v0) return err_set(err, TFM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const char *path = s->models[i + 1];
        if ((st = ckpt_load(path, &p->extra_mf[i], false, err)) != TFM_OK) break;
        p->n_extra = i + 1;
        char *v = bpe_serialize(p->extra_mf[i].bpe, &vlen);
        bool same = v && vlen == vlen0 && memcmp(v, v0, vlen) == 0;
        free(v);
        if (!same) {
            st = err_set(err, TFM_ERR_FORMAT, "%s: its vocabulary differs from %s's (an ensemble "
                         "needs models with one vocabulary)", path, s->models[0]);
            break;
        }
        if (p->extra_mf[i].model.cfg.max_len != p->mf.model.cfg.max_len) {
            st = err_set(err, TFM_ERR_FORMAT, "%s: data.max_len %d differs from %s's %d (an "
                         "ensemble needs one length limit)", path,
                         config_data_max_len(p->extra_mf[i].model.cfg.max_len), s->models[0],
                         config_data_max_len(p->mf.model.cfg.max_len));
            break;
        }
        use_int8(&p->extra_mf[i].model, s->precision);
        if ((st = decoder_init(&p->extra_dec[i], &p->extra_mf[i].model, max_sents, max_beam,
                               err)) != TFM_OK)
            break;
    }
    free(v0);
    if (st != TFM_OK) return st;
    return decoder_set_ensemble(p->dec, p->extra_dec, n, p->have_weights ? p->weights : NULL, err);
}

TfmStatus pipeline_start(Pipeline *p, const PipelineSpec *s, int max_sents, int max_beam,
                         TfmErr *err)
{
    TfmStatus st;
    if (s->shortlist) {     /* before the packing: a wrong file fails fast */
        if ((st = shortlist_load(&p->sl, s->shortlist, p->mf.bpe, err)) != TFM_OK) return st;
    }
    st = decoder_init(&p->dec, &p->mf.model, max_sents, max_beam, err);
    if (st == TFM_OK) st = start_ensemble(p, s, max_sents, max_beam, err);
    if (st == TFM_OK && s->shortlist) {
        st = decoder_set_shortlist(p->dec, &p->sl, err);
        if (st != TFM_OK) err_prefix(err, "%s: %s: ", s->who, s->shortlist);
    }
    if (st == TFM_OK && p->n_extra == 0 && omp_get_max_threads() == 2 &&
        max_sents >= LANES_MIN_SENTS && lanes_fit(&p->mf.model))
        st = lanes_new(&p->lanes, &p->mf.model, s->shortlist ? &p->sl : NULL, max_sents,
                       max_beam, err);
    if (st != TFM_OK) return st;
    /* every product is packed now: its float weights are dead */
    model_release_matrices(&p->mf.model);
    for (int i = 0; i < p->n_extra; i++) model_release_matrices(&p->extra_mf[i].model);
    return TFM_OK;
}

TfmStatus pipeline_encode(const Pipeline *p, const char *line, size_t len, int **ids, int *n,
                          int *cap, int *full_len, TfmErr *err)
{
    TfmStatus st = bpe_encode(p->mf.bpe, line, len, ids, n, cap, err);
    if (st != TFM_OK) return st;
    /* A blank line (spaces, tabs) has nothing to translate: it gives an
     * empty line, like an empty one, not whatever the model makes of its
     * markers. */
    if (strspn(line, " \t\r\v\f") >= len) *n = 0;
    if (full_len) *full_len = *n;
    if (*n > p->max_src) *n = p->max_src;
    return TFM_OK;
}

TfmStatus pipeline_text(const Pipeline *p, const Hypothesis *h, char **text, size_t *len,
                        size_t *cap, TfmErr *err)
{
    TfmStatus st = bpe_decode(p->mf.bpe, h->tokens, h->len, text, len, cap, err);
    if (st != TFM_OK) return st;
    char *t = *text;
    for (size_t i = 0; i < *len; i++)
        if (t[i] == '\n' || t[i] == '\r' || t[i] == '\0') t[i] = ' ';
    size_t bad;
    if (text_utf8_valid(t, *len, &bad)) return TFM_OK;
    size_t n = *len, clean_cap = 3 * n + 1, o = 0;
    char *clean = xmalloc(clean_cap, err);
    if (!clean) return TFM_ERR_NOMEM;
    for (size_t i = 0; i < n;) {
        size_t off;
        if (text_utf8_valid(t + i, n - i, &off)) off = n - i;
        memcpy(clean + o, t + i, off);
        o += off;
        i += off;
        if (i < n) {
            memcpy(clean + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    clean[o] = '\0';
    free(*text);
    *text = clean;
    *len = o;
    *cap = clean_cap;
    return TFM_OK;
}

long pipeline_lines_guarded(const Pipeline *p)
{
    if (!p->dec) return 0;
    return decoder_lines_guarded(p->dec) + (p->lanes ? lanes_lines_guarded(p->lanes) : 0);
}

void pipeline_free(Pipeline *p)
{
    lanes_free(p->lanes);
    decoder_free(p->dec);
    ckpt_free(&p->mf);
    for (int i = 0; i < p->n_extra; i++) {
        decoder_free(p->extra_dec ? p->extra_dec[i] : NULL);
        ckpt_free(&p->extra_mf[i]);
    }
    free(p->extra_dec);
    free(p->extra_mf);
    shortlist_free(&p->sl);
    memset(p, 0, sizeof *p);
}
