/* bpe_spm: a SentencePiece model behind the Bpe interface, so that the
 * trainer, the model file and the translator use one vocabulary type (see
 * bpe.h): the vocabulary is tfm's four specials (TOK_PAD, TOK_UNK, TOK_BOS,
 * TOK_EOS) and then the model's pieces, id 4 + the model's own id. Encoding
 * and decoding are spm.h's, so a model trained on it writes text as
 * spm_decode would. The per-call scratch is one SpmWork per thread, kept
 * until the thread ends, so encoding a line allocates nothing once warm. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "text/bpe_internal.h"
#include "text/spm.h"

enum { SPM_ID0 = BPE_N_SPECIAL };  /* tfm id of the model's piece 0 */

/* A thread's scratch, freed when the thread ends (a pthread key rather
 * than _Thread_local, whose memory a finished thread would leak: training's
 * reader thread and the server's workers come and go). */
typedef struct {
    SpmWork work;
    SpmTok *tok;
    size_t tok_cap;
} Scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

static void scratch_free(void *p)
{
    Scratch *s = p;
    spm_work_free(&s->work);
    free(s->tok);
    free(s);
}

static void scratch_key_init(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }

static Scratch *scratch(TfmErr *err)
{
    pthread_once(&scratch_once, scratch_key_init);
    if (!scratch_key_ok) {
        err_set(err, TFM_ERR_NOMEM, "no thread-local storage left for SentencePiece encoding");
        return NULL;
    }
    Scratch *s = pthread_getspecific(scratch_key);
    if (s) return s;
    if (!(s = xcalloc(1, sizeof *s, err))) return NULL;
    if (pthread_setspecific(scratch_key, s) != 0) {
        free(s);
        err_set(err, TFM_ERR_NOMEM, "no thread-local storage left for SentencePiece encoding");
        return NULL;
    }
    return s;
}

TfmStatus bpe_spm_wrap(Bpe **out, Spm *m, TfmErr *err)
{
    *out = NULL;
    if (spm_vocab_size(m) > BPE_MAX_VOCAB - SPM_ID0) {
        int n = spm_vocab_size(m);
        spm_free(m);
        return err_set(err, TFM_ERR_FORMAT, "SentencePiece model of %d pieces (at most %d)", n,
                       BPE_MAX_VOCAB - SPM_ID0);
    }
    Bpe *b = xcalloc(1, sizeof *b, err);
    if (!b) {
        spm_free(m);
        return TFM_ERR_NOMEM;
    }
    b->spm = m;
    b->n_pieces = SPM_ID0 + spm_vocab_size(m);
    /* the piece texts in pool/off/len, NUL-terminated, as tfm's own: bpe_piece
     * reads them the same way */
    size_t total = 0;
    for (int id = 0; id < b->n_pieces; id++) {
        size_t n;
        total += (id < SPM_ID0 ? strlen(bpe_special_names[id]) : (spm_piece(m, id - SPM_ID0, &n), n)) + 1;
    }
    b->off = xmalloc((size_t)b->n_pieces * sizeof *b->off, err);
    b->len = xmalloc((size_t)b->n_pieces * sizeof *b->len, err);
    b->pool = xmalloc(total, err);
    if (!b->off || !b->len || !b->pool) {
        bpe_free(b);
        return TFM_ERR_NOMEM;
    }
    for (int id = 0; id < b->n_pieces; id++) {
        size_t n;
        const char *t = id < SPM_ID0 ? bpe_special_names[id] : spm_piece(m, id - SPM_ID0, &n);
        if (id < SPM_ID0) n = strlen(t);
        memcpy(b->pool + b->pool_len, t, n);
        b->pool[b->pool_len + n] = '\0';
        b->off[id] = b->pool_len;
        b->len[id] = (uint32_t)n;
        b->pool_len += n + 1;
    }
    *out = b;
    return TFM_OK;
}

int bpe_spm_piece_id(const Bpe *b, const char *s, size_t len)
{
    for (int i = 0; i < SPM_ID0; i++)
        if (strlen(bpe_special_names[i]) == len && memcmp(bpe_special_names[i], s, len) == 0) return i;
    int id = spm_piece_id(b->spm, s, len);
    size_t ul;
    const char *unk = spm_piece(b->spm, id, &ul);
    if (id == spm_unk_id(b->spm) && !(ul == len && memcmp(unk, s, len) == 0)) return -1;
    return SPM_ID0 + id;
}

TfmStatus bpe_spm_encode(const Bpe *b, const char *line, size_t len, int **ids, int *n, int *cap,
                         TfmErr *err)
{
    *n = 0;
    Scratch *sc = scratch(err);
    if (!sc) return TFM_ERR_NOMEM;
    SpmWork *w = &sc->work;
    TfmStatus st = spm_encode(b->spm, w, line, len, err);
    if (st) return st;
    if (w->n_tok > (size_t)(BPE_MAX_VOCAB * 64))
        return err_set(err, TFM_ERR_NOMEM, "line too long to encode");
    if ((int)w->n_tok > *cap) {
        int *q = xrealloc(*ids, w->n_tok * sizeof *q, err);
        if (!q) return TFM_ERR_NOMEM;
        *ids = q;
        *cap = (int)w->n_tok;
    }
    for (size_t i = 0; i < w->n_tok; i++) (*ids)[i] = SPM_ID0 + w->tok[i].id;
    *n = (int)w->n_tok;
    return TFM_OK;
}

TfmStatus bpe_spm_decode(const Bpe *b, const int *ids, int n, char **out, size_t *len, size_t *cap,
                         TfmErr *err)
{
    Scratch *sc = scratch(err);
    if (!sc) return TFM_ERR_NOMEM;
    if ((size_t)n > sc->tok_cap &&
        xgrow((void **)&sc->tok, &sc->tok_cap, (size_t)n, sizeof *sc->tok, err))
        return TFM_ERR_NOMEM;
    SpmTok *tok = sc->tok;
    size_t k = 0;
    int id;
    for (int i = 0; (id = bpe_next_text_id(b, ids, n, &i, err)) >= 0;) {
        int sid = id == TOK_UNK ? spm_unk_id(b->spm) : id - SPM_ID0;
        size_t pl;
        const char *p = spm_piece(b->spm, sid, &pl);
        tok[k++] = (SpmTok){sid, (uint32_t)pl, p};
    }
    if (id == -2) return TFM_ERR_FORMAT;
    return spm_decode(b->spm, tok, k, out, len, cap, err);
}

char *bpe_spm_serialize(const Bpe *b, size_t *len)
{
    const void *bytes = spm_bytes(b->spm, len);
    TfmErr e;
    char *out = xmalloc(*len ? *len : 1, &e);
    if (out) memcpy(out, bytes, *len);
    return out;
}

const char *bpe_kind(const Bpe *b)
{
    if (!b->spm) return "tfm BPE";
    return strcmp(spm_kind(b->spm), "bpe") == 0 ? "SentencePiece bpe" : "SentencePiece unigram";
}
