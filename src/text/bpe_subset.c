/* bpe_subset: each piece outside the subset gets its spelling in the subset
 * once, when the subset is made (a table of V entries), so that rewriting a
 * line is a lookup per id. */
#include "text/bpe_subset.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/bpe_internal.h"
#include "text/spm.h"

struct BpeSubset {
    int n_pieces;
    bool *in;
    long *exp_off;      /* (n_pieces + 1): piece id's spelling is exp[exp_off[id] .. exp_off[id+1]) */
    int *exp;
};

/* A piece's text spelled out: markers, char pieces in the subset, else bytes. */
static long spell_out(const BpeSubset *s, const Bpe *b, int id, int *dst)
{
    const unsigned char *t = (const unsigned char *)b->pool + b->off[id];
    const size_t len = b->len[id];
    long k = 0;
    for (size_t i = 0; i < len;) {
        if (i + 3 <= len && memcmp(t + i, MARKER_UTF8, 3) == 0) {
            if (dst) dst[k] = BPE_MARKER;
            k++;
            i += 3;
            continue;
        }
        size_t l = 1;                                  /* one UTF-8 character */
        while (i + l < len && (t[i + l] & 0xC0) == 0x80) l++;
        int c = bpe_piece_id(b, (const char *)t + i, l);
        if (c >= 0 && c < s->n_pieces && s->in[c] && b->kind[c] == KIND_CHAR) {
            if (dst) dst[k] = c;
            k++;
        } else {
            for (size_t j = 0; j < l; j++, k++)
                if (dst) dst[k] = BPE_BYTE0 + t[i + j];
        }
        i += l;
    }
    return k;
}

/* parts[2 id], parts[2 id + 1]: the pieces the first merge that made id
 * joined (-1 for pieces no merge made, or whose parts are not older). */
static int *merge_parts(const Bpe *b, TfmErr *err)
{
    int *parts = xmalloc(sizeof(int) * 2 * (size_t)b->n_pieces, err);
    if (!parts) return NULL;
    memset(parts, 0xFF, sizeof(int) * 2 * (size_t)b->n_pieces);
    for (int r = 0; r < b->n_merges; r++) {
        const int *m = b->merges + 3 * r;
        if (m[2] < 0 || m[2] >= b->n_pieces || parts[2 * m[2]] >= 0) continue;
        if (m[0] < 0 || m[0] >= m[2] || m[1] < 0 || m[1] >= m[2]) continue;
        parts[2 * m[2]] = m[0];
        parts[2 * m[2] + 1] = m[1];
    }
    return parts;
}

void bpe_subset_mark_writable(const Bpe *b, bool *in)
{
    if (b->spm) {
        for (int id = 0; id < BPE_N_SPECIAL; id++) in[id] = true;
        spm_mark_writable(b->spm, in + BPE_N_SPECIAL);
        return;
    }
    for (int id = 0; id < BPE_MIN_VOCAB && id < b->n_pieces; id++) in[id] = true;
}

/* A SentencePiece piece's spelling in tfm ids (spm_spell over the model's
 * own ids, which start after tfm's specials); -1 on NOMEM. */
static long spell_spm(const Bpe *b, const bool *in, int id, int *dst, TfmErr *err)
{
    if (id < BPE_N_SPECIAL) {
        if (dst) dst[0] = id;
        return 1;
    }
    const long k = spm_spell(b->spm, in + BPE_N_SPECIAL, id - BPE_N_SPECIAL, dst, err);
    for (long i = 0; dst && i < k; i++) dst[i] += BPE_N_SPECIAL;
    return k;
}

TfmStatus bpe_subset_check(const Bpe *b, const bool *in, TfmErr *err)
{
    const int V = b->n_pieces;
    bool *need = xcalloc((size_t)V, sizeof *need, err);
    if (!need) return TFM_ERR_NOMEM;
    bpe_subset_mark_writable(b, need);
    int missing = -1;
    for (int id = 0; id < V && missing < 0; id++)
        if (need[id] && !in[id]) missing = id;
    free(need);
    if (missing < 0) return TFM_OK;
    return err_set(err, TFM_ERR_FORMAT, "output vocabulary: piece %d (%s) is missing; every text "
                   "must stay writable", missing,
                   b->spm ? "a special, <unk>, a byte or one character" :
                            "a special, byte or the marker");
}

TfmStatus bpe_subset_new(BpeSubset **out, const Bpe *b, const bool *in, TfmErr *err)
{
    *out = NULL;
    const int V = b->n_pieces;
    TfmStatus st = bpe_subset_check(b, in, err);
    if (st != TFM_OK) return st;
    BpeSubset *s = xmalloc(sizeof *s, err);
    if (!s) return TFM_ERR_NOMEM;
    *s = (BpeSubset){.n_pieces = V};
    s->in = xmalloc(sizeof(bool) * (size_t)V, err);
    s->exp_off = xmalloc(sizeof(long) * ((size_t)V + 1), err);
    int *parts = b->spm ? NULL : merge_parts(b, err);
    if (!s->in || !s->exp_off || (!b->spm && !parts)) goto nomem;
    memcpy(s->in, in, sizeof(bool) * (size_t)V);
    /* Sizes first (parts are older pieces, so their sizes are known), then
     * the spellings, in id order for the same reason. */
    long total = 0;
    for (int id = 0; id < V; id++) {
        long k;
        if (in[id]) k = 1;
        else if (b->spm) {
            if ((k = spell_spm(b, in, id, NULL, err)) < 0) goto nomem;
        } else if (parts[2 * id] >= 0)
            k = (s->exp_off[parts[2 * id] + 1] - s->exp_off[parts[2 * id]]) +
                (s->exp_off[parts[2 * id + 1] + 1] - s->exp_off[parts[2 * id + 1]]);
        else k = spell_out(s, b, id, NULL);
        s->exp_off[id] = total;
        s->exp_off[id + 1] = total + k;     /* read by later pieces before their turn */
        total += k;
    }
    s->exp = xmalloc(sizeof(int) * (size_t)(total > 0 ? total : 1), err);
    if (!s->exp) goto nomem;
    for (int id = 0; id < V; id++) {
        int *d = s->exp + s->exp_off[id];
        if (in[id]) {
            *d = id;
        } else if (b->spm) {
            if (spell_spm(b, in, id, d, err) < 0) goto nomem;
        } else if (parts[2 * id] >= 0) {
            for (int h = 0; h < 2; h++) {
                const int p = parts[2 * id + h];
                const long k = s->exp_off[p + 1] - s->exp_off[p];
                memcpy(d, s->exp + s->exp_off[p], sizeof(int) * (size_t)k);
                d += k;
            }
        } else {
            spell_out(s, b, id, d);
        }
    }
    free(parts);
    *out = s;
    return TFM_OK;
nomem:
    free(parts);
    bpe_subset_free(s);
    return TFM_ERR_NOMEM;
}

bool bpe_subset_has(const BpeSubset *s, int id)
{
    return id >= 0 && id < s->n_pieces && s->in[id];
}

TfmStatus bpe_subset_apply(const BpeSubset *s, int **ids, int *n, int *cap, TfmErr *err)
{
    long want = 0;
    bool all_in = true;
    for (int i = 0; i < *n; i++) {
        const int id = (*ids)[i];
        if (bpe_subset_has(s, id)) { want++; continue; }
        all_in = false;
        want += id >= 0 && id < s->n_pieces ? s->exp_off[id + 1] - s->exp_off[id] : 1;
    }
    if (all_in) return TFM_OK;
    if (want > INT_MAX) return err_set(err, TFM_ERR_NOMEM, "line too long to encode");
    if (want > *cap) {
        int *q = xrealloc(*ids, sizeof(int) * (size_t)want, err);
        if (!q) return TFM_ERR_NOMEM;
        *ids = q;
        *cap = (int)want;
    }
    /* From the end: a spelling is never shorter than its piece, so the
     * write position stays at or after the read position. */
    long w = want;
    for (int i = *n - 1; i >= 0; i--) {
        const int id = (*ids)[i];
        if (bpe_subset_has(s, id) || id < 0 || id >= s->n_pieces) {
            (*ids)[--w] = id;
            continue;
        }
        const long k = s->exp_off[id + 1] - s->exp_off[id];
        w -= k;
        memmove(*ids + w, s->exp + s->exp_off[id], sizeof(int) * (size_t)k);
    }
    *n = (int)want;
    return TFM_OK;
}

void bpe_subset_free(BpeSubset *s)
{
    if (!s) return;
    FREE_ALL(s->in, s->exp_off, s->exp, s);
}
