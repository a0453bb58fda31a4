/* bpe: the vocabulary object (pieces, merges and the lookup tables built
 * from them), pre-tokenization, merge-rank encoding, decoding and escaping of
 * piece texts. Learning is in bpe_learn.c, the vocabulary file in bpe_file.c;
 * bpe_internal.h declares what the three share. */
#include "text/bpe.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bpe_internal.h"
#include "text/spm.h"
#include "base/fnv.h"
#include "base/text.h"

const char *const bpe_special_names[BPE_N_SPECIAL] = {"<pad>", "<unk>", "<s>", "</s>"};

#define MAX_WORD_SYMS (1 + 4 * BPE_MAX_WORD_CHARS)
#define NO_RANK INT_MAX

/* ---- hash maps (base/hash_index.h) ---- */

uint64_t bpe_hash_bytes(const char *s, size_t n)
{
    return fnv_hash_bytes8(s, n);
}

/* U64Map keeps its keys in its slots, not in a base/hash_index.h table:
 * its lookups (a word's characters and merge pairs, for every word encoded
 * or learned from) are one load there, where an index of ids makes them two
 * dependent ones; measured on Multi30k (2026-11-28, a loaded 2-core EPYC,
 * CPU seconds, paired runs), the index made `tfm bpe learn` 1.08x and
 * `tfm bpe encode` 1.04x slower. */
TfmStatus u64map_init(U64Map *m, size_t want, TfmErr *err)
{
    size_t cap = 16;
    while (cap < 2 * want) cap *= 2;
    m->keys = xmalloc(cap * sizeof *m->keys, err);
    m->vals = m->keys ? xmalloc(cap * sizeof *m->vals, err) : NULL;
    if (!m->vals) {
        free(m->keys);
        memset(m, 0, sizeof *m);
        return TFM_ERR_NOMEM;
    }
    memset(m->keys, 0xFF, cap * sizeof *m->keys);
    m->mask = cap - 1;
    m->n = 0;
    return TFM_OK;
}

void u64map_free(U64Map *m) { free(m->keys); free(m->vals); memset(m, 0, sizeof *m); }

bool u64map_get(const U64Map *m, uint64_t key, uint64_t *val)
{
    for (size_t i = fnv_mix64(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) { *val = m->vals[i]; return true; }
        if (m->keys[i] == UINT64_MAX) return false;
    }
}

/* Returns a pointer to key's value, inserting it (value 0) when absent. */
uint64_t *u64map_slot(U64Map *m, uint64_t key, TfmErr *err)
{
    if (2 * (m->n + 1) > m->mask + 1) {
        U64Map g;
        if (u64map_init(&g, m->mask + 1, err)) { u64map_free(&g); return NULL; }
        for (size_t i = 0; i <= m->mask; i++) {
            if (m->keys[i] == UINT64_MAX) continue;
            size_t j = fnv_mix64(m->keys[i]) & g.mask;
            while (g.keys[j] != UINT64_MAX) j = (j + 1) & g.mask;
            g.keys[j] = m->keys[i];
            g.vals[j] = m->vals[i];
        }
        g.n = m->n;
        u64map_free(m);
        *m = g;
    }
    size_t i = fnv_mix64(key) & m->mask;
    while (m->keys[i] != key && m->keys[i] != UINT64_MAX) i = (i + 1) & m->mask;
    if (m->keys[i] == UINT64_MAX) {
        m->keys[i] = key;
        m->vals[i] = 0;
        m->n++;
    }
    return &m->vals[i];
}

typedef struct {
    StrTable t;
    const char *s;
    size_t n;
    const uint32_t *hash;
    uint32_t h;
} StrKey;

static inline bool str_same(const void *ctx, uint32_t id)
{
    const StrKey *k = ctx;
    return k->hash[id] == k->h && k->t.len[id] == k->n &&
           memcmp(k->t.pool + k->t.off[id], k->s, k->n) == 0;
}

static inline bool never_same(const void *ctx, uint32_t id)
{
    (void)ctx, (void)id;
    return false;
}

TfmStatus stridx_init(StrIndex *x, size_t want, TfmErr *err)
{
    *x = (StrIndex){0};
    return hidx_reserve(x, want, 16, err);
}

int stridx_find(const StrIndex *x, StrTable t, const char *s, size_t n, uint64_t h)
{
    const StrKey k = {t, s, n, x->hash, (uint32_t)h};
    return (int)hidx_find(x, h, str_same, &k);
}

TfmStatus stridx_add(StrIndex *x, int id, uint64_t h, TfmErr *err)
{
    if ((uint32_t)id != x->n) return err_set(err, TFM_ERR_USAGE, "string index: ids out of order");
    if (hidx_reserve(x, (size_t)id + 1, 16, err)) return err->status;
    hidx_put(x, hidx_probe(x, h, never_same, NULL), h);
    return TFM_OK;
}

/* ---- growable byte buffer ---- */

TfmStatus bpe_buf_append(char **buf, size_t *len, size_t *cap, const void *s, size_t n,
                         TfmErr *err)
{
    if (xgrow((void **)buf, cap, *len + n + 1, 1, err)) return TFM_ERR_NOMEM;
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return TFM_OK;
}

/* ---- the vocabulary ---- */

static StrTable bpe_table(const Bpe *b) { return (StrTable){b->pool, b->off, b->len}; }

Bpe *bpe_alloc(TfmErr *err)
{
    Bpe *b = xcalloc(1, sizeof *b, err);
    if (!b) return NULL;
    if (stridx_init(&b->texts, 1024, err)) {
        hidx_free(&b->texts);   /* what a half-made table holds */
        free(b);
        return NULL;
    }
    return b;
}

void bpe_free(Bpe *b)
{
    if (!b) return;
    free(b->pool); free(b->off); free(b->len); free(b->kind);
    hidx_free(&b->texts); free(b->merges);
    u64map_free(&b->chars); u64map_free(&b->pairs);
    free(b->dec); free(b->dec_off); free(b->dec_len);
    spm_free(b->spm);
    free(b);
}

int bpe_vocab_size(const Bpe *b) { return b->n_pieces; }

const char *bpe_piece(const Bpe *b, int id, size_t *len)
{
    if (id < 0 || id >= b->n_pieces) return NULL;
    if (len) *len = b->len[id];
    return b->pool + b->off[id];
}

int bpe_piece_id(const Bpe *b, const char *s, size_t len)
{
    if (b->spm) return bpe_spm_piece_id(b, s, len);
    return stridx_find(&b->texts, bpe_table(b), s, len, bpe_hash_bytes(s, len));
}

/* Appends a piece; returns its id, or -1 (err set). The text must be new. */
int bpe_add_piece(Bpe *b, int kind, const char *s, size_t n, TfmErr *err)
{
    if (b->n_pieces == b->cap_pieces) {
        int c = b->cap_pieces ? 2 * b->cap_pieces : 512;
        size_t *off = xrealloc(b->off, (size_t)c * sizeof *off, err);
        if (!off) return -1;
        b->off = off;
        uint32_t *len = xrealloc(b->len, (size_t)c * sizeof *len, err);
        if (!len) return -1;
        b->len = len;
        uint8_t *k = xrealloc(b->kind, (size_t)c, err);
        if (!k) return -1;
        b->kind = k;
        b->cap_pieces = c;
    }
    if (xgrow((void **)&b->pool, &b->pool_cap, b->pool_len + n + 1, 1, err)) return -1;
    int id = b->n_pieces;
    memcpy(b->pool + b->pool_len, s, n);
    b->pool[b->pool_len + n] = '\0';     /* so bpe_piece returns C strings */
    b->off[id] = b->pool_len;
    b->len[id] = (uint32_t)n;
    b->kind[id] = (uint8_t)kind;
    b->pool_len += n + 1;
    b->n_pieces++;
    if (stridx_add(&b->texts, id, bpe_hash_bytes(s, n), err)) return -1;
    return id;
}

TfmStatus bpe_add_merge(Bpe *b, int left, int right, int result, TfmErr *err)
{
    if (b->n_merges == b->cap_merges) {
        int c = b->cap_merges ? 2 * b->cap_merges : 512;
        int *m = xrealloc(b->merges, (size_t)c * 3 * sizeof *m, err);
        if (!m) return TFM_ERR_NOMEM;
        b->merges = m;
        b->cap_merges = c;
    }
    int *m = b->merges + 3 * b->n_merges++;
    m[0] = left; m[1] = right; m[2] = result;
    return TFM_OK;
}

/* A printable ASCII byte piece is the character itself, so ASCII text needs
 * no separate char pieces (saving ~90 slots for merges); other bytes read
 * "<0xHH>". Returns the length written to name (8 bytes). */
size_t bpe_byte_piece_name(int byte, char *name)
{
    if (byte > 0x20 && byte < 0x7F) {
        name[0] = (char)byte;
        name[1] = '\0';
        return 1;
    }
    snprintf(name, 8, "<0x%02X>", byte);
    return 6;
}

/* Pieces that merges may combine: text that decodes to itself. */
bool bpe_mergeable(const Bpe *b, int id)
{
    if (b->kind[id] == KIND_BYTE) return id - BPE_BYTE0 > 0x20 && id - BPE_BYTE0 < 0x7F;
    return b->kind[id] >= KIND_MARKER;
}

/* Adds the fixed pieces: specials, the 256 bytes, the marker. */
TfmStatus bpe_add_fixed(Bpe *b, TfmErr *err)
{
    for (int i = 0; i < BPE_N_SPECIAL; i++)
        if (bpe_add_piece(b, KIND_SPECIAL, bpe_special_names[i], strlen(bpe_special_names[i]), err) < 0)
            return err->status;
    for (int i = 0; i < 256; i++) {
        char name[8];
        if (bpe_add_piece(b, KIND_BYTE, name, bpe_byte_piece_name(i, name), err) < 0) return err->status;
    }
    if (bpe_add_piece(b, KIND_MARKER, MARKER_UTF8, 3, err) < 0) return err->status;
    return TFM_OK;
}

/* Builds the encode/decode lookup tables from the final pieces and merges. */
TfmStatus bpe_index(Bpe *b, TfmErr *err)
{
    if (u64map_init(&b->chars, (size_t)b->n_pieces, err)) return TFM_ERR_NOMEM;
    if (u64map_init(&b->pairs, (size_t)b->n_merges, err)) return TFM_ERR_NOMEM;
    b->dec = xmalloc(b->pool_len + 1, err);
    b->dec_off = xmalloc((size_t)b->n_pieces * sizeof *b->dec_off, err);
    b->dec_len = xmalloc((size_t)b->n_pieces * sizeof *b->dec_len, err);
    if (!b->dec || !b->dec_off || !b->dec_len) return TFM_ERR_NOMEM;
    size_t d = 0;
    for (int id = 0; id < b->n_pieces; id++) {
        const unsigned char *s = (const unsigned char *)b->pool + b->off[id];
        size_t n = b->len[id];
        b->dec_off[id] = d;
        if (b->kind[id] == KIND_BYTE) {
            b->dec[d++] = (char)(id - BPE_BYTE0);
        } else if (b->kind[id] != KIND_SPECIAL) {
            for (size_t i = 0; i < n;) {
                if (i + 3 <= n && memcmp(s + i, MARKER_UTF8, 3) == 0) {
                    b->dec[d++] = ' ';
                    i += 3;
                } else {
                    b->dec[d++] = (char)s[i++];
                }
            }
        }
        b->dec_len[id] = (uint32_t)(d - b->dec_off[id]);
        if (b->kind[id] == KIND_CHAR) {
            uint32_t cp;
            text_utf8_decode(s, n, &cp);
            uint64_t *v = u64map_slot(&b->chars, cp, err);
            if (!v) return TFM_ERR_NOMEM;
            *v = (uint64_t)id;
        }
    }
    for (int r = 0; r < b->n_merges; r++) {
        const int *m = b->merges + 3 * r;
        uint64_t *v = u64map_slot(&b->pairs, (uint64_t)m[0] << 32 | (uint32_t)m[1], err);
        if (!v) return TFM_ERR_NOMEM;
        *v = (uint64_t)r << 32 | (uint32_t)m[2];
    }
    return TFM_OK;
}

/* ---- pre-tokenization ---- */

enum { CL_LETTER, CL_DIGIT, CL_PUNCT, CL_ALONE };

/* Word classes: a word never mixes letters, digits and punctuation (as
 * sentencepiece's split_by_unicode_script/split_by_number), so "dog." learns
 * "▁dog" and "." instead of spending pieces on "dog." and "dog,". Controls
 * and the literal marker stand alone. Everything else counts as a letter,
 * including marks, ZWJ and emoji, which keeps such sequences together. */
static int char_class(uint32_t cp)
{
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || cp == MARKER_CP) return CL_ALONE;
    if (cp >= '0' && cp <= '9') return CL_DIGIT;
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return CL_LETTER;
        return CL_PUNCT;
    }
    if ((cp >= 0xA0 && cp <= 0xBF) || cp == 0xD7 || cp == 0xF7 ||
        (cp >= 0x2010 && cp <= 0x2027) || (cp >= 0x2030 && cp <= 0x205E) ||
        (cp >= 0x3000 && cp <= 0x303F) || (cp >= 0xFF01 && cp <= 0xFF0F) ||
        (cp >= 0xFF1A && cp <= 0xFF20) || (cp >= 0xFF3B && cp <= 0xFF40) ||
        (cp >= 0xFF5B && cp <= 0xFF65))
        return CL_PUNCT;
    return CL_LETTER;
}

/* text_utf8_decode with ASCII inline: most characters of most text. */
static inline int utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    return text_utf8_decode(s, n, cp);
}

void pretok_init(Pretok *p, const char *s, size_t n)
{
    p->s = s;
    p->n = n;
    p->pos = 0;
    p->pending = n > 0;     /* the marker in front of the line; none for "" */
}

bool pretok_next(Pretok *p, Word *w)
{
    const unsigned char *s = (const unsigned char *)p->s;
    for (;;) {
        if (p->pos >= p->n) {
            if (!p->pending) return false;
            p->pending = false;
            *w = (Word){p->pos, p->pos, true, false};
            return true;
        }
        if (s[p->pos] == ' ') {
            p->pos++;
            /* Two markers in a row: the first becomes a word on its own. */
            if (p->pending) {
                *w = (Word){p->pos, p->pos, true, false};
                return true;
            }
            p->pending = true;
            continue;
        }
        uint32_t cp;
        int l = utf8_next(s + p->pos, p->n - p->pos, &cp);
        int cl = l ? char_class(cp) : CL_ALONE;
        if (cl == CL_ALONE) {
            if (p->pending) {
                p->pending = false;
                *w = (Word){p->pos, p->pos, true, false};
                return true;
            }
            size_t end = p->pos + (l ? (size_t)l : 1);
            *w = (Word){p->pos, end, false, !l || cp == MARKER_CP};
            p->pos = end;
            return true;
        }
        size_t end = p->pos + (size_t)l;
        int chars = 1;
        while (end < p->n && chars < BPE_MAX_WORD_CHARS && s[end] != ' ') {
            uint32_t c2;
            int l2 = utf8_next(s + end, p->n - end, &c2);
            if (!l2 || char_class(c2) != cl) break;
            end += (size_t)l2;
            chars++;
        }
        *w = (Word){p->pos, end, p->pending, false};
        p->pending = false;
        p->pos = end;
        return true;
    }
}

/* ---- encoding ---- */

static int char_piece(const Bpe *b, uint32_t cp)
{
    if (cp < 0x80) return BPE_BYTE0 + (int)cp;
    uint64_t v;
    return u64map_get(&b->chars, cp, &v) ? (int)v : -1;
}

/* The initial symbols of word w: marker, char pieces, byte pieces. */
static int word_symbols(const Bpe *b, const char *line, const Word *w, int *sym)
{
    const unsigned char *s = (const unsigned char *)line;
    int n = 0;
    if (w->marker) sym[n++] = BPE_MARKER;
    for (size_t i = w->start; i < w->end;) {
        uint32_t cp;
        int l = w->raw ? 0 : text_utf8_decode(s + i, w->end - i, &cp);
        int id = l ? char_piece(b, cp) : -1;
        if (id >= 0) {
            sym[n++] = id;
            i += (size_t)l;
        } else {
            size_t e = i + (l ? (size_t)l : 1);
            for (; i < e; i++) sym[n++] = BPE_BYTE0 + s[i];
        }
    }
    return n;
}

static int pair_rank(const Bpe *b, int left, int right, int *result)
{
    uint64_t v;
    if (!u64map_get(&b->pairs, (uint64_t)left << 32 | (uint32_t)right, &v)) return NO_RANK;
    *result = (int)(uint32_t)v;
    return (int)(v >> 32);
}

/* Applies merges lowest rank first, leftmost first among equal ranks (the
 * order in which learning applied them). Words are short (<= MAX_WORD_SYMS),
 * so a linear scan for the best pair beats a heap. With dropout (p > 0),
 * each candidate pair is skipped with probability p at every merge step
 * (BPE-dropout, Provilkov et al. 2020), and the word is done when a step
 * skips them all. Returns the new length. */
static int apply_merges(const Bpe *b, int *sym, int n, float p, Rng *rng)
{
    int rank[MAX_WORD_SYMS], res[MAX_WORD_SYMS];
    for (int i = 0; i + 1 < n; i++) rank[i] = pair_rank(b, sym[i], sym[i + 1], &res[i]);
    while (n > 1) {
        int best = -1, br = NO_RANK;
        for (int i = 0; i + 1 < n; i++)
            if (rank[i] < br && (p <= 0 || rng_uniform(rng) >= p)) { br = rank[i]; best = i; }
        if (best < 0) break;
        sym[best] = res[best];
        memmove(sym + best + 1, sym + best + 2, (size_t)(n - best - 2) * sizeof *sym);
        memmove(rank + best + 1, rank + best + 2, (size_t)(n - best - 2) * sizeof *rank);
        memmove(res + best + 1, res + best + 2, (size_t)(n - best - 2) * sizeof *res);
        n--;
        if (best + 1 < n) rank[best] = pair_rank(b, sym[best], sym[best + 1], &res[best]);
        if (best > 0) rank[best - 1] = pair_rank(b, sym[best - 1], sym[best], &res[best - 1]);
    }
    return n;
}

TfmStatus bpe_encode(const Bpe *b, const char *line, size_t len, int **ids, int *n, int *cap,
                     TfmErr *err)
{
    return bpe_encode_dropout(b, line, len, 0.0f, NULL, ids, n, cap, err);
}

int bpe_word_pieces(const Bpe *b, const char *line, const Word *w, int *sym)
{
    return apply_merges(b, sym, word_symbols(b, line, w, sym), 0.0f, NULL);
}

TfmStatus bpe_encode_dropout(const Bpe *b, const char *line, size_t len, float p, Rng *rng,
                             int **ids, int *n, int *cap, TfmErr *err)
{
    /* no BPE-dropout for a SentencePiece model: the trainer refuses it */
    if (b->spm) return bpe_spm_encode(b, line, len, ids, n, cap, err);
    Pretok words;
    Word w;
    int sym[MAX_WORD_SYMS];
    pretok_init(&words, line, len);
    *n = 0;
    while (pretok_next(&words, &w)) {
        int k = apply_merges(b, sym, word_symbols(b, line, &w, sym), p, rng);
        if (bpe_ids_append(ids, n, cap, sym, k, err)) return err->status;
    }
    return TFM_OK;
}

TfmStatus bpe_ids_append(int **ids, int *n, int *cap, const int *add, int k, TfmErr *err)
{
    if (*n > INT_MAX - k) return err_set(err, TFM_ERR_NOMEM, "line too long to encode");
    if (*n + k > *cap) {
        int c = *cap > 0 ? *cap : 64;
        while (c < *n + k) c = c > INT_MAX / 2 ? INT_MAX : 2 * c;
        int *q = xrealloc(*ids, (size_t)c * sizeof *q, err);
        if (!q) return TFM_ERR_NOMEM;
        *ids = q;
        *cap = c;
    }
    memcpy(*ids + *n, add, (size_t)k * sizeof *add);
    *n += k;
    return TFM_OK;
}

/* ---- decoding ---- */

int bpe_next_text_id(const Bpe *b, const int *ids, int n, int *i, TfmErr *err)
{
    while (*i < n) {
        int id = ids[(*i)++];
        if (id < 0 || id >= b->n_pieces) {
            err_set(err, TFM_ERR_FORMAT, "id %d out of range (vocabulary of %d pieces)", id,
                    b->n_pieces);
            return -2;
        }
        if (id != TOK_PAD && id != TOK_BOS && id != TOK_EOS) return id;
    }
    return -1;
}

TfmStatus bpe_decode(const Bpe *b, const int *ids, int n, char **out, size_t *len, size_t *cap,
                     TfmErr *err)
{
    if (b->spm) return bpe_spm_decode(b, ids, n, out, len, cap, err);
    *len = 0;
    if (xgrow((void **)out, cap, 1, 1, err)) return TFM_ERR_NOMEM;
    (*out)[0] = '\0';
    bool first = true;
    int id;
    for (int i = 0; (id = bpe_next_text_id(b, ids, n, &i, err)) >= 0;) {
        const char *s = id == TOK_UNK ? "<unk>" : b->dec + b->dec_off[id];
        size_t k = id == TOK_UNK ? 5 : b->dec_len[id];
        /* The marker in front of the line is not a space of the text. */
        if (first && b->kind[id] >= KIND_MARKER && k > 0 && s[0] == ' ') { s++; k--; }
        first = false;
        if (bpe_buf_append(out, len, cap, s, k, err)) return TFM_ERR_NOMEM;
    }
    if (id == -2) return TFM_ERR_FORMAT;
    return TFM_OK;
}

/* ---- escaping ---- */

static bool needs_escape(unsigned char c) { return c <= 0x20 || c == 0x7F || c == '\\'; }

TfmStatus bpe_escape(const char *s, size_t n, char **out, size_t *len, size_t *cap, TfmErr *err)
{
    static const char hex[] = "0123456789ABCDEF";
    if (xgrow((void **)out, cap, *len + 4 * n + 1, 1, err)) return TFM_ERR_NOMEM;
    char *o = *out + *len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (needs_escape(c)) {
            *o++ = '\\'; *o++ = 'x'; *o++ = hex[c >> 4]; *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o = '\0';
    *len = (size_t)(o - *out);
    return TFM_OK;
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

bool bpe_unescape(char *s, size_t *n)
{
    size_t j = 0;
    for (size_t i = 0; i < *n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\') {
            if (i + 3 >= *n) return false;
            if (s[i + 1] != 'x') return false;
            int hi = hex_val(s[i + 2]), lo = hex_val(s[i + 3]);
            if (hi < 0 || lo < 0) return false;
            s[j++] = (char)(hi << 4 | lo);
            i += 3;
        } else if (needs_escape(c)) {
            return false;
        } else {
            s[j++] = (char)c;
        }
    }
    *n = j;
    return true;
}
