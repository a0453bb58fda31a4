/* bpe_cache: encoding with a cache of word pieces. */
#include "text/bpe_cache.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/bpe_internal.h"

struct BpeCache {
    int max_words, n;
    StrIndex index;         /* key -> word */
    char *keys;             /* a key: the flags byte (marker, raw), then the word's bytes */
    size_t keys_len, keys_cap;
    size_t *key_off;
    uint32_t *key_len;
    int *ids;               /* word i's pieces: ids[id_off[i] .. + n_ids[i]) */
    size_t ids_len, ids_cap;
    size_t *id_off;
    int *n_ids;
};

BpeCache *bpe_cache_new(int max_words, TfmErr *err)
{
    BpeCache *c = xcalloc(1, sizeof *c, err);
    if (!c) return NULL;
    c->max_words = max_words;
    c->key_off = xmalloc((size_t)max_words * sizeof *c->key_off, err);
    c->key_len = xmalloc((size_t)max_words * sizeof *c->key_len, err);
    c->id_off = xmalloc((size_t)max_words * sizeof *c->id_off, err);
    c->n_ids = xmalloc((size_t)max_words * sizeof *c->n_ids, err);
    if (!c->key_off || !c->key_len || !c->id_off || !c->n_ids ||
        stridx_init(&c->index, 1024, err) != TFM_OK) {     /* grows: small stays in cache */
        bpe_cache_free(c);
        return NULL;
    }
    return c;
}

void bpe_cache_free(BpeCache *c)
{
    if (!c) return;
    hidx_free(&c->index);
    FREE_ALL(c->keys, c->key_off, c->key_len, c->ids, c->id_off, c->n_ids, c);
}

/* Forgets every word (the index keeps its size). */
static void forget(BpeCache *c)
{
    hidx_reset(&c->index);
    c->n = 0;
    c->keys_len = c->ids_len = 0;
}

/* Word w's pieces: from the cache, or merged and remembered. */
static TfmStatus word_pieces(const Bpe *b, BpeCache *c, const char *line, const Word *w,
                             const int **out, int *k, int *sym, TfmErr *err)
{
    char key[1 + 4 * BPE_MAX_WORD_CHARS];
    size_t n = w->end - w->start;
    if (n + 1 > sizeof key) {       /* not a word pretok makes: not cached */
        *k = bpe_word_pieces(b, line, w, sym);
        *out = sym;
        return TFM_OK;
    }
    key[0] = (char)(w->marker | w->raw << 1);
    memcpy(key + 1, line + w->start, n);
    uint64_t h = bpe_hash_bytes(key, n + 1);
    StrTable t = {c->keys, c->key_off, c->key_len};
    int id = stridx_find(&c->index, t, key, n + 1, h);
    if (id >= 0) {
        *out = c->ids + c->id_off[id];
        *k = c->n_ids[id];
        return TFM_OK;
    }
    *k = bpe_word_pieces(b, line, w, sym);
    *out = sym;
    if (c->n == c->max_words) forget(c);
    if (xgrow((void **)&c->keys, &c->keys_cap, c->keys_len + n + 1, 1, err) ||
        xgrow((void **)&c->ids, &c->ids_cap, c->ids_len + (size_t)*k, sizeof(int), err))
        return TFM_ERR_NOMEM;
    memcpy(c->keys + c->keys_len, key, n + 1);
    memcpy(c->ids + c->ids_len, sym, (size_t)*k * sizeof(int));
    c->key_off[c->n] = c->keys_len;
    c->key_len[c->n] = (uint32_t)(n + 1);
    c->id_off[c->n] = c->ids_len;
    c->n_ids[c->n] = *k;
    c->keys_len += n + 1;
    c->ids_len += (size_t)*k;
    return stridx_add(&c->index, c->n++, h, err);
}

TfmStatus bpe_encode_cached(const Bpe *b, BpeCache *c, const char *line, size_t len, int **ids,
                            int *n, int *cap, TfmErr *err)
{
    if (b->spm) return bpe_encode(b, line, len, ids, n, cap, err);  /* words are BPE's */
    Pretok words;
    Word w;
    int sym[BPE_MAX_WORD_PIECES];
    pretok_init(&words, line, len);
    *n = 0;
    while (pretok_next(&words, &w)) {
        const int *pieces;
        int k;
        if (word_pieces(b, c, line, &w, &pieces, &k, sym, err) != TFM_OK ||
            bpe_ids_append(ids, n, cap, pieces, k, err) != TFM_OK)
            return err->status;
    }
    return TFM_OK;
}
