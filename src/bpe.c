/* bpe: pre-tokenization, learning (word counts + incrementally updated pair
 * counts in a lazy max-heap), merge-rank encoding, decoding, and the
 * vocabulary file (docs/vocab-format.md). */
#include "bpe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "text.h"

enum { KIND_SPECIAL, KIND_BYTE, KIND_MARKER, KIND_CHAR, KIND_MERGED };
static const char *const kind_names[] = {"special", "byte", "marker", "char", "merged"};
static const char *const special_names[BPE_N_SPECIAL] = {"<pad>", "<unk>", "<s>", "</s>"};

#define MARKER_UTF8 "\xE2\x96\x81"   /* U+2581 */
#define MARKER_CP 0x2581u
#define MAX_WORD_SYMS (1 + 4 * BPE_MAX_WORD_CHARS)
#define NO_RANK INT_MAX

/* ---- hash maps ---- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;           /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return mix64(h);
}

/* uint64 -> uint64 with linear probing; UINT64_MAX is the empty key. */
typedef struct { uint64_t *keys, *vals; size_t mask, n; } U64Map;

static TfmStatus u64map_init(U64Map *m, size_t want, TfmErr *err)
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

static void u64map_free(U64Map *m) { free(m->keys); free(m->vals); memset(m, 0, sizeof *m); }

static bool u64map_get(const U64Map *m, uint64_t key, uint64_t *val)
{
    for (size_t i = mix64(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) { *val = m->vals[i]; return true; }
        if (m->keys[i] == UINT64_MAX) return false;
    }
}

/* Returns a pointer to key's value, inserting it (value 0) when absent. */
static uint64_t *u64map_slot(U64Map *m, uint64_t key, TfmErr *err)
{
    if (2 * (m->n + 1) > m->mask + 1) {
        U64Map g;
        if (u64map_init(&g, m->mask + 1, err)) { u64map_free(&g); return NULL; }
        for (size_t i = 0; i <= m->mask; i++) {
            if (m->keys[i] == UINT64_MAX) continue;
            size_t j = mix64(m->keys[i]) & g.mask;
            while (g.keys[j] != UINT64_MAX) j = (j + 1) & g.mask;
            g.keys[j] = m->keys[i];
            g.vals[j] = m->vals[i];
        }
        g.n = m->n;
        u64map_free(m);
        *m = g;
    }
    size_t i = mix64(key) & m->mask;
    while (m->keys[i] != key && m->keys[i] != UINT64_MAX) i = (i + 1) & m->mask;
    if (m->keys[i] == UINT64_MAX) {
        m->keys[i] = key;
        m->vals[i] = 0;
        m->n++;
    }
    return &m->vals[i];
}

/* Strings (kept by the caller as pool + off/len arrays) -> their index. */
typedef struct { int id; uint32_t h; } StrSlot;
typedef struct { StrSlot *slots; size_t mask, n; } StrIndex;

typedef struct { const char *pool; const size_t *off; const uint32_t *len; } StrTable;

static TfmStatus stridx_init(StrIndex *x, size_t want, TfmErr *err)
{
    size_t cap = 16;
    while (cap < 2 * want) cap *= 2;
    x->slots = xmalloc(cap * sizeof *x->slots, err);
    if (!x->slots) return TFM_ERR_NOMEM;
    for (size_t i = 0; i < cap; i++) x->slots[i].id = -1;
    x->mask = cap - 1;
    x->n = 0;
    return TFM_OK;
}

static int stridx_find(const StrIndex *x, StrTable t, const char *s, size_t n, uint64_t h)
{
    for (size_t i = h & x->mask;; i = (i + 1) & x->mask) {
        int id = x->slots[i].id;
        if (id < 0) return -1;
        if (x->slots[i].h == (uint32_t)h && t.len[id] == n && memcmp(t.pool + t.off[id], s, n) == 0)
            return id;
    }
}

/* Adds id (not present yet) under hash h. */
static TfmStatus stridx_add(StrIndex *x, int id, uint64_t h, TfmErr *err)
{
    if (2 * (x->n + 1) > x->mask + 1) {
        StrIndex g;
        if (stridx_init(&g, x->mask + 1, err)) return TFM_ERR_NOMEM;
        for (size_t i = 0; i <= x->mask; i++) {
            if (x->slots[i].id < 0) continue;
            size_t j = x->slots[i].h & g.mask;
            while (g.slots[j].id >= 0) j = (j + 1) & g.mask;
            g.slots[j] = x->slots[i];
        }
        g.n = x->n;
        free(x->slots);
        *x = g;
    }
    size_t i = h & x->mask;
    while (x->slots[i].id >= 0) i = (i + 1) & x->mask;
    x->slots[i].id = id;
    x->slots[i].h = (uint32_t)h;
    x->n++;
    return TFM_OK;
}

/* ---- growable byte buffer ---- */

static TfmStatus buf_reserve(char **buf, size_t *cap, size_t need, TfmErr *err)
{
    if (need <= *cap) return TFM_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need) {
        if (c > SIZE_MAX / 2) return err_set(err, TFM_ERR_NOMEM, "out of memory");
        c *= 2;
    }
    char *p = xrealloc(*buf, c, err);
    if (!p) return TFM_ERR_NOMEM;
    *buf = p;
    *cap = c;
    return TFM_OK;
}

static TfmStatus buf_append(char **buf, size_t *len, size_t *cap, const void *s, size_t n,
                            TfmErr *err)
{
    if (buf_reserve(buf, cap, *len + n + 1, err)) return TFM_ERR_NOMEM;
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return TFM_OK;
}

/* ---- the vocabulary ---- */

struct Bpe {
    int n_pieces, cap_pieces;
    char *pool;                 /* piece texts, back to back */
    size_t pool_len, pool_cap;
    size_t *off;
    uint32_t *len;
    uint8_t *kind;
    StrIndex texts;             /* piece text -> id */
    int n_merges, cap_merges;
    int *merges;                /* (left, right, result) per rank */
    /* Built by bpe_index once the pieces and merges are final. */
    U64Map chars;               /* code point -> char piece */
    U64Map pairs;               /* left << 32 | right -> rank << 32 | result */
    char *dec;                  /* decoded bytes of each piece ("▁" -> " ") */
    size_t *dec_off;
    uint32_t *dec_len;
};

static StrTable bpe_table(const Bpe *b) { return (StrTable){b->pool, b->off, b->len}; }

static Bpe *bpe_alloc(TfmErr *err)
{
    Bpe *b = xcalloc(1, sizeof *b, err);
    if (!b) return NULL;
    if (stridx_init(&b->texts, 1024, err)) { free(b); return NULL; }
    return b;
}

void bpe_free(Bpe *b)
{
    if (!b) return;
    free(b->pool); free(b->off); free(b->len); free(b->kind);
    free(b->texts.slots); free(b->merges);
    u64map_free(&b->chars); u64map_free(&b->pairs);
    free(b->dec); free(b->dec_off); free(b->dec_len);
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
    return stridx_find(&b->texts, bpe_table(b), s, len, hash_bytes(s, len));
}

/* Appends a piece; returns its id, or -1 (err set). The text must be new. */
static int bpe_add_piece(Bpe *b, int kind, const char *s, size_t n, TfmErr *err)
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
    if (buf_reserve(&b->pool, &b->pool_cap, b->pool_len + n + 1, err)) return -1;
    int id = b->n_pieces;
    memcpy(b->pool + b->pool_len, s, n);
    b->pool[b->pool_len + n] = '\0';     /* so bpe_piece returns C strings */
    b->off[id] = b->pool_len;
    b->len[id] = (uint32_t)n;
    b->kind[id] = (uint8_t)kind;
    b->pool_len += n + 1;
    b->n_pieces++;
    if (stridx_add(&b->texts, id, hash_bytes(s, n), err)) return -1;
    return id;
}

static TfmStatus bpe_add_merge(Bpe *b, int left, int right, int result, TfmErr *err)
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
static size_t byte_piece_name(int byte, char *name)
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
static bool mergeable(const Bpe *b, int id)
{
    if (b->kind[id] == KIND_BYTE) return id - BPE_BYTE0 > 0x20 && id - BPE_BYTE0 < 0x7F;
    return b->kind[id] >= KIND_MARKER;
}

/* Adds the fixed pieces: specials, the 256 bytes, the marker. */
static TfmStatus bpe_add_fixed(Bpe *b, TfmErr *err)
{
    for (int i = 0; i < BPE_N_SPECIAL; i++)
        if (bpe_add_piece(b, KIND_SPECIAL, special_names[i], strlen(special_names[i]), err) < 0)
            return err->status;
    for (int i = 0; i < 256; i++) {
        char name[8];
        if (bpe_add_piece(b, KIND_BYTE, name, byte_piece_name(i, name), err) < 0) return err->status;
    }
    if (bpe_add_piece(b, KIND_MARKER, MARKER_UTF8, 3, err) < 0) return err->status;
    return TFM_OK;
}

/* Builds the encode/decode lookup tables from the final pieces and merges. */
static TfmStatus bpe_index(Bpe *b, TfmErr *err)
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

/* One word: bytes [start, end) of the line, preceded by the marker when
 * `marker`; `raw` words (a literal "▁" or an invalid byte) are spelled in
 * byte pieces and never merged. */
typedef struct { size_t start, end; bool marker, raw; } Word;
typedef struct { const char *s; size_t n, pos; bool pending; } Pretok;

static void pretok_init(Pretok *p, const char *s, size_t n)
{
    p->s = s;
    p->n = n;
    p->pos = 0;
    p->pending = n > 0;     /* the marker in front of the line; none for "" */
}

static bool pretok_next(Pretok *p, Word *w)
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
        int l = text_utf8_decode(s + p->pos, p->n - p->pos, &cp);
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
            int l2 = text_utf8_decode(s + end, p->n - end, &c2);
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
 * so a linear scan for the best pair beats a heap. Returns the new length. */
static int apply_merges(const Bpe *b, int *sym, int n)
{
    int rank[MAX_WORD_SYMS], res[MAX_WORD_SYMS];
    for (int i = 0; i + 1 < n; i++) rank[i] = pair_rank(b, sym[i], sym[i + 1], &res[i]);
    while (n > 1) {
        int best = -1, br = NO_RANK;
        for (int i = 0; i + 1 < n; i++)
            if (rank[i] < br) { br = rank[i]; best = i; }
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
    Pretok p;
    Word w;
    int sym[MAX_WORD_SYMS];
    pretok_init(&p, line, len);
    *n = 0;
    while (pretok_next(&p, &w)) {
        int k = apply_merges(b, sym, word_symbols(b, line, &w, sym));
        if (*n > INT_MAX - k) return err_set(err, TFM_ERR_NOMEM, "line too long to encode");
        if (*n + k > *cap) {
            int c = *cap > 0 ? *cap : 64;
            while (c < *n + k) c = c > INT_MAX / 2 ? INT_MAX : 2 * c;
            int *q = xrealloc(*ids, (size_t)c * sizeof *q, err);
            if (!q) return TFM_ERR_NOMEM;
            *ids = q;
            *cap = c;
        }
        memcpy(*ids + *n, sym, (size_t)k * sizeof *sym);
        *n += k;
    }
    return TFM_OK;
}

/* ---- decoding ---- */

TfmStatus bpe_decode(const Bpe *b, const int *ids, int n, char **out, size_t *len, size_t *cap,
                     TfmErr *err)
{
    *len = 0;
    if (buf_reserve(out, cap, 1, err)) return TFM_ERR_NOMEM;
    (*out)[0] = '\0';
    bool first = true;
    for (int i = 0; i < n; i++) {
        int id = ids[i];
        if (id < 0 || id >= b->n_pieces)
            return err_set(err, TFM_ERR_FORMAT, "id %d out of range (vocabulary of %d pieces)",
                           id, b->n_pieces);
        if (id == 0 || id == 2 || id == 3) continue;
        const char *s = id == 1 ? "<unk>" : b->dec + b->dec_off[id];
        size_t k = id == 1 ? 5 : b->dec_len[id];
        /* The marker in front of the line is not a space of the text. */
        if (first && b->kind[id] >= KIND_MARKER && k > 0 && s[0] == ' ') { s++; k--; }
        first = false;
        if (buf_append(out, len, cap, s, k, err)) return TFM_ERR_NOMEM;
    }
    return TFM_OK;
}

/* ---- escaping ---- */

static bool needs_escape(unsigned char c) { return c <= 0x20 || c == 0x7F || c == '\\'; }

TfmStatus bpe_escape(const char *s, size_t n, char **out, size_t *len, size_t *cap, TfmErr *err)
{
    static const char hex[] = "0123456789ABCDEF";
    if (buf_reserve(out, cap, *len + 4 * n + 1, err)) return TFM_ERR_NOMEM;
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

/* ---- learning ---- */

/* Distinct words with their counts. A key is a flag byte (1 = starts with the
 * marker) followed by the word's bytes. */
typedef struct {
    char *pool;
    size_t pool_len, pool_cap;
    size_t *off;
    uint32_t *len;
    int64_t *count;
    int n, cap;
    StrIndex index;
} WordTable;

static void words_free(WordTable *t)
{
    free(t->pool); free(t->off); free(t->len); free(t->count); free(t->index.slots);
}

static TfmStatus words_add(WordTable *t, const char *key, size_t n, TfmErr *err)
{
    uint64_t h = hash_bytes(key, n);
    int id = stridx_find(&t->index, (StrTable){t->pool, t->off, t->len}, key, n, h);
    if (id >= 0) {
        t->count[id]++;
        return TFM_OK;
    }
    if (t->n == t->cap) {
        if (t->cap > INT_MAX / 2) return err_set(err, TFM_ERR_NOMEM, "too many distinct words");
        int c = t->cap ? 2 * t->cap : 4096;
        size_t *off = xrealloc(t->off, (size_t)c * sizeof *off, err);
        if (!off) return TFM_ERR_NOMEM;
        t->off = off;
        uint32_t *len = xrealloc(t->len, (size_t)c * sizeof *len, err);
        if (!len) return TFM_ERR_NOMEM;
        t->len = len;
        int64_t *cnt = xrealloc(t->count, (size_t)c * sizeof *cnt, err);
        if (!cnt) return TFM_ERR_NOMEM;
        t->count = cnt;
        t->cap = c;
    }
    if (buf_reserve(&t->pool, &t->pool_cap, t->pool_len + n, err)) return TFM_ERR_NOMEM;
    memcpy(t->pool + t->pool_len, key, n);
    t->off[t->n] = t->pool_len;
    t->len[t->n] = (uint32_t)n;
    t->count[t->n] = 1;
    t->pool_len += n;
    return stridx_add(&t->index, t->n++, h, err);
}

/* Counts the words of every line of every file. */
static TfmStatus words_read(WordTable *t, const char *const *paths, int n_paths, TfmErr *err)
{
    char key[1 + 4 * BPE_MAX_WORD_CHARS];
    for (int f = 0; f < n_paths; f++) {
        LineReader r;
        if (text_reader_open(&r, paths[f], err)) { text_reader_close(&r); return err->status; }
        char *line;
        size_t len;
        int got;
        while ((got = text_read_line(&r, &line, &len, err)) > 0) {
            Pretok p;
            Word w;
            pretok_init(&p, line, len);
            while (pretok_next(&p, &w)) {
                if (w.raw) continue;
                key[0] = (char)w.marker;
                memcpy(key + 1, line + w.start, w.end - w.start);
                if (words_add(t, key, 1 + w.end - w.start, err)) { got = -1; break; }
            }
            if (got < 0) break;
        }
        text_reader_close(&r);
        if (got < 0) return err->status;
    }
    return TFM_OK;
}

typedef struct { uint32_t cp; int64_t count; } CharCount;

static int char_count_cmp(const void *x, const void *y)
{
    const CharCount *a = x, *b = y;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return a->cp < b->cp ? -1 : a->cp > b->cp;
}

/* Adds the alphabet to b: every non-ASCII character seen at least twice, most
 * frequent first (ties by code point), as long as the vocabulary has room.
 * Rarer ones are spelled in byte pieces; ASCII is the byte pieces. */
static TfmStatus learn_alphabet(Bpe *b, const WordTable *t, int vocab_size, TfmErr *err)
{
    U64Map counts = {0};
    CharCount *cc = NULL;
    TfmStatus st = u64map_init(&counts, 1024, err);
    if (st) goto fail;
    for (int w = 0; w < t->n; w++) {
        const unsigned char *s = (const unsigned char *)t->pool + t->off[w] + 1;
        size_t n = t->len[w] - 1;
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            int l = text_utf8_decode(s + i, n - i, &cp);
            i += (size_t)l;
            if (cp < 0x80) continue;
            uint64_t *v = u64map_slot(&counts, cp, err);
            if (!v) { st = TFM_ERR_NOMEM; goto fail; }
            *v += (uint64_t)t->count[w];
        }
    }
    cc = xmalloc((counts.n + 1) * sizeof *cc, err);
    if (!cc) { st = TFM_ERR_NOMEM; goto fail; }
    size_t k = 0;
    for (size_t i = 0; i <= counts.mask; i++)
        if (counts.keys[i] != UINT64_MAX)
            cc[k++] = (CharCount){(uint32_t)counts.keys[i], (int64_t)counts.vals[i]};
    qsort(cc, k, sizeof *cc, char_count_cmp);
    for (size_t i = 0; i < k && b->n_pieces < vocab_size && cc[i].count >= 2; i++) {
        unsigned char u[4];
        uint32_t cp = cc[i].cp;
        int l;
        if (cp < 0x800) { u[0] = (unsigned char)(0xC0 | cp >> 6); u[1] = (unsigned char)(0x80 | (cp & 63)); l = 2; }
        else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xE0 | cp >> 12); u[1] = (unsigned char)(0x80 | (cp >> 6 & 63));
            u[2] = (unsigned char)(0x80 | (cp & 63)); l = 3;
        } else {
            u[0] = (unsigned char)(0xF0 | cp >> 18); u[1] = (unsigned char)(0x80 | (cp >> 12 & 63));
            u[2] = (unsigned char)(0x80 | (cp >> 6 & 63)); u[3] = (unsigned char)(0x80 | (cp & 63)); l = 4;
        }
        if (bpe_add_piece(b, KIND_CHAR, (const char *)u, (size_t)l, err) < 0) { st = err->status; goto fail; }
    }
fail:
    u64map_free(&counts);
    free(cc);
    return st;
}

typedef struct {
    int a, b;
    int64_t count;          /* weighted by word counts */
    int *occ;               /* words that contain (or once contained) the pair */
    int n_occ, cap_occ;
    int stamp;              /* last merge that queued it for a heap push */
} Pair;

typedef struct { int64_t count; int pair; } HeapItem;

/* Pair counts are kept exact at all times; the heap is lazy: an entry's
 * count may be stale (too high) for pairs whose count fell, and is then
 * re-pushed with the true count when it reaches the top. Every increase
 * pushes a fresh entry, so each live pair has an entry >= its count. */
typedef struct {
    Bpe *bpe;
    Pair *pairs;
    int n_pairs, cap_pairs;
    U64Map index;           /* a << 32 | b -> pair */
    HeapItem *heap;
    size_t n_heap, cap_heap;
    int *touched;
    int n_touched, cap_touched;
} Learner;

static int piece_cmp(const Bpe *b, int x, int y)
{
    size_t lx = b->len[x], ly = b->len[y];
    int c = memcmp(b->pool + b->off[x], b->pool + b->off[y], lx < ly ? lx : ly);
    if (c) return c;
    return lx < ly ? -1 : lx > ly;
}

/* Heap order: higher count first; ties by the bytes of left, then right. */
static bool heap_before(const Learner *L, HeapItem x, HeapItem y)
{
    if (x.count != y.count) return x.count > y.count;
    const Pair *p = &L->pairs[x.pair], *q = &L->pairs[y.pair];
    int c = piece_cmp(L->bpe, p->a, q->a);
    if (c) return c < 0;
    return piece_cmp(L->bpe, p->b, q->b) < 0;
}

static TfmStatus heap_push(Learner *L, int64_t count, int pair, TfmErr *err)
{
    if (L->n_heap == L->cap_heap) {
        size_t c = L->cap_heap ? 2 * L->cap_heap : 4096;
        HeapItem *h = xrealloc(L->heap, c * sizeof *h, err);
        if (!h) return TFM_ERR_NOMEM;
        L->heap = h;
        L->cap_heap = c;
    }
    HeapItem it = {count, pair};
    size_t i = L->n_heap++;
    while (i > 0 && heap_before(L, it, L->heap[(i - 1) / 2])) {
        L->heap[i] = L->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    L->heap[i] = it;
    return TFM_OK;
}

static HeapItem heap_pop(Learner *L)
{
    HeapItem top = L->heap[0], last = L->heap[--L->n_heap];
    size_t i = 0, n = L->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_before(L, L->heap[c + 1], L->heap[c])) c++;
        if (!heap_before(L, L->heap[c], last)) break;
        L->heap[i] = L->heap[c];
        i = c;
    }
    if (n) L->heap[i] = last;
    return top;
}

/* Adds delta to the count of pair (a, b), creating it; when word >= 0, also
 * records that the word contains it. Returns the pair index or -1. */
static int pair_update(Learner *L, int a, int b, int64_t delta, int word, TfmErr *err)
{
    uint64_t *slot = u64map_slot(&L->index, (uint64_t)a << 32 | (uint32_t)b, err);
    if (!slot) return -1;
    if (*slot == 0) {       /* new: indices are stored + 1 so 0 means absent */
        if (L->n_pairs == L->cap_pairs) {
            int c = L->cap_pairs ? 2 * L->cap_pairs : 4096;
            Pair *p = xrealloc(L->pairs, (size_t)c * sizeof *p, err);
            if (!p) return -1;
            L->pairs = p;
            L->cap_pairs = c;
        }
        L->pairs[L->n_pairs] = (Pair){.a = a, .b = b, .stamp = -1};
        *slot = (uint64_t)++L->n_pairs;
    }
    int idx = (int)*slot - 1;
    Pair *p = &L->pairs[idx];
    p->count += delta;
    if (word >= 0 && (p->n_occ == 0 || p->occ[p->n_occ - 1] != word)) {
        if (p->n_occ == p->cap_occ) {
            int c = p->cap_occ ? 2 * p->cap_occ : 4;
            int *o = xrealloc(p->occ, (size_t)c * sizeof *o, err);
            if (!o) return -1;
            p->occ = o;
            p->cap_occ = c;
        }
        p->occ[p->n_occ++] = word;
    }
    return idx;
}

/* Replaces (a, b) by c in every word that contains it, keeping the pair
 * counts exact, and queues the pairs that gained count for a heap push. */
static TfmStatus learn_merge(Learner *L, int pi, int c, int merge_no, int *sym_pool,
                             const size_t *sym_off, int *sym_len, const int64_t *wcount,
                             int *word_stamp, TfmErr *err)
{
    int a = L->pairs[pi].a, b = L->pairs[pi].b;
    int *occ = L->pairs[pi].occ, n_occ = L->pairs[pi].n_occ;
    L->n_touched = 0;
    for (int k = 0; k < n_occ; k++) {
        int w = occ[k];
        if (word_stamp[w] == merge_no) continue;
        word_stamp[w] = merge_no;
        int *s = sym_pool + sym_off[w], n = sym_len[w];
        bool found = false;
        for (int i = 0; i + 1 < n && !found; i++) found = s[i] == a && s[i + 1] == b;
        if (!found) continue;
        for (int i = 0; i + 1 < n; i++)
            if (s[i] >= 0 && s[i + 1] >= 0 && pair_update(L, s[i], s[i + 1], -wcount[w], -1, err) < 0)
                return TFM_ERR_NOMEM;
        int j = 0;
        for (int i = 0; i < n;) {
            if (i + 1 < n && s[i] == a && s[i + 1] == b) { s[j++] = c; i += 2; }
            else s[j++] = s[i++];
        }
        sym_len[w] = n = j;
        for (int i = 0; i + 1 < n; i++) {
            if (s[i] < 0 || s[i + 1] < 0) continue;
            bool fresh = s[i] == c || s[i + 1] == c;
            int q = pair_update(L, s[i], s[i + 1], wcount[w], fresh ? w : -1, err);
            if (q < 0) return TFM_ERR_NOMEM;
            if (fresh && L->pairs[q].stamp != merge_no) {
                L->pairs[q].stamp = merge_no;
                if (L->n_touched == L->cap_touched) {
                    int cap = L->cap_touched ? 2 * L->cap_touched : 256;
                    int *t = xrealloc(L->touched, (size_t)cap * sizeof *t, err);
                    if (!t) return TFM_ERR_NOMEM;
                    L->touched = t;
                    L->cap_touched = cap;
                }
                L->touched[L->n_touched++] = q;
            }
        }
    }
    Pair *p = &L->pairs[pi];
    p->count = 0;
    free(p->occ);
    p->occ = NULL;
    p->n_occ = p->cap_occ = 0;
    for (int k = 0; k < L->n_touched; k++) {
        int q = L->touched[k];
        if (L->pairs[q].count > 0 && heap_push(L, L->pairs[q].count, q, err)) return TFM_ERR_NOMEM;
    }
    return TFM_OK;
}

/* Pops the pair with the highest true count (>= 2), or returns -1. */
static int learn_best(Learner *L, TfmErr *err)
{
    while (L->n_heap > 0) {
        HeapItem it = heap_pop(L);
        int64_t now = L->pairs[it.pair].count;
        if (now == it.count) {
            if (now < 2) return -1;
            return it.pair;
        }
        if (now > 0 && now < it.count && heap_push(L, now, it.pair, err)) return -2;
    }
    return -1;
}

TfmStatus bpe_learn(Bpe **out, const char *const *paths, int n_paths, int vocab_size, TfmErr *err)
{
    *out = NULL;
    if (vocab_size < BPE_MIN_VOCAB || vocab_size > BPE_MAX_VOCAB)
        return err_set(err, TFM_ERR_CONFIG,
                       "vocabulary size %d out of range [%d, %d] (4 specials + 256 bytes + "
                       "the word marker at least)", vocab_size, BPE_MIN_VOCAB, BPE_MAX_VOCAB);
    WordTable t = {0};
    Learner L = {0};
    Bpe *b = NULL;
    int *sym_pool = NULL, *sym_len = NULL, *word_stamp = NULL;
    size_t *sym_off = NULL;
    TfmStatus st = stridx_init(&t.index, 1 << 15, err);
    if (st) goto fail;
    if ((st = words_read(&t, paths, n_paths, err))) goto fail;
    if (t.n == 0) {
        if (n_paths == 1) st = err_set(err, TFM_ERR_FORMAT, "%s: no text to learn from", paths[0]);
        else st = err_set(err, TFM_ERR_FORMAT, "no text to learn from in %s and %d other files",
                          paths[0], n_paths - 1);
        goto fail;
    }
    b = bpe_alloc(err);
    if (!b) { st = TFM_ERR_NOMEM; goto fail; }
    if ((st = bpe_add_fixed(b, err))) goto fail;
    if ((st = learn_alphabet(b, &t, vocab_size, err))) goto fail;
    int n_alpha = b->n_pieces;

    /* Each word as symbols: the marker, then char pieces or -1 (a character
     * spelled in bytes: no merge can cross it). */
    U64Map chars = {0};
    if ((st = u64map_init(&chars, (size_t)n_alpha, err))) goto fail;
    for (int id = BPE_MARKER + 1; id < n_alpha; id++) {
        uint32_t cp;
        text_utf8_decode((const unsigned char *)b->pool + b->off[id], b->len[id], &cp);
        uint64_t *v = u64map_slot(&chars, cp, err);
        if (!v) { u64map_free(&chars); st = TFM_ERR_NOMEM; goto fail; }
        *v = (uint64_t)id;
    }
    sym_off = xmalloc((size_t)t.n * sizeof *sym_off, err);
    sym_len = xmalloc((size_t)t.n * sizeof *sym_len, err);
    word_stamp = xmalloc((size_t)t.n * sizeof *word_stamp, err);
    sym_pool = xmalloc(t.pool_len * sizeof *sym_pool, err);   /* >= symbols: 1 per byte */
    if (!sym_off || !sym_len || !word_stamp || !sym_pool) {
        u64map_free(&chars);
        st = TFM_ERR_NOMEM;
        goto fail;
    }
    size_t total = 0;
    for (int w = 0; w < t.n; w++) {
        const unsigned char *s = (const unsigned char *)t.pool + t.off[w];
        size_t n = t.len[w];
        sym_off[w] = total;
        word_stamp[w] = -1;
        int k = 0;
        int *sym = sym_pool + total;
        if (s[0]) sym[k++] = BPE_MARKER;
        for (size_t i = 1; i < n;) {
            uint32_t cp;
            i += (size_t)text_utf8_decode(s + i, n - i, &cp);
            uint64_t v;
            if (cp < 0x80) sym[k++] = mergeable(b, BPE_BYTE0 + (int)cp) ? BPE_BYTE0 + (int)cp : -1;
            else sym[k++] = u64map_get(&chars, cp, &v) ? (int)v : -1;
        }
        sym_len[w] = k;
        total += (size_t)k;
    }
    u64map_free(&chars);

    L.bpe = b;
    if ((st = u64map_init(&L.index, 1 << 16, err))) goto fail;
    for (int w = 0; w < t.n; w++) {
        const int *s = sym_pool + sym_off[w];
        for (int i = 0; i + 1 < sym_len[w]; i++)
            if (s[i] >= 0 && s[i + 1] >= 0 && pair_update(&L, s[i], s[i + 1], t.count[w], w, err) < 0) {
                st = TFM_ERR_NOMEM;
                goto fail;
            }
    }
    for (int q = 0; q < L.n_pairs; q++)
        if ((st = heap_push(&L, L.pairs[q].count, q, err))) goto fail;

    char *cat = NULL;
    size_t cat_cap = 0;
    for (int merge_no = 0; b->n_pieces < vocab_size; merge_no++) {
        int pi = learn_best(&L, err);
        if (pi == -2) { st = TFM_ERR_NOMEM; break; }
        if (pi < 0) break;
        int a = L.pairs[pi].a, bb = L.pairs[pi].b;
        size_t la = b->len[a], lb = b->len[bb];
        if ((st = buf_reserve(&cat, &cat_cap, la + lb + 1, err))) break;
        memcpy(cat, b->pool + b->off[a], la);
        memcpy(cat + la, b->pool + b->off[bb], lb);
        /* The same string can come from two different pairs ("▁a"+"bc" and
         * "▁ab"+"c"): the second merge reuses the piece and costs no slot. */
        int c = bpe_piece_id(b, cat, la + lb);
        if (c < 0) c = bpe_add_piece(b, KIND_MERGED, cat, la + lb, err);
        if (c < 0) { st = err->status; break; }
        if ((st = bpe_add_merge(b, a, bb, c, err))) break;
        if ((st = learn_merge(&L, pi, c, merge_no, sym_pool, sym_off, sym_len, t.count,
                              word_stamp, err)))
            break;
    }
    free(cat);
    if (st) goto fail;
    if ((st = bpe_index(b, err))) goto fail;
    *out = b;
    b = NULL;
fail:
    bpe_free(b);
    words_free(&t);
    for (int q = 0; q < L.n_pairs; q++) free(L.pairs[q].occ);
    free(L.pairs);
    u64map_free(&L.index);
    free(L.heap);
    free(L.touched);
    free(sym_pool); free(sym_off); free(sym_len); free(word_stamp);
    return st;
}

/* ---- the vocabulary file ---- */

#define BPE_MAGIC "tfm-bpe 1"

char *bpe_serialize(const Bpe *b, size_t *out_len)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    char tmp[96];
    TfmErr e;
    int n = snprintf(tmp, sizeof tmp, BPE_MAGIC "\npieces %d merges %d\n", b->n_pieces, b->n_merges);
    if (buf_append(&buf, &len, &cap, tmp, (size_t)n, &e)) goto fail;
    for (int id = 0; id < b->n_pieces; id++) {
        n = snprintf(tmp, sizeof tmp, "%d %s ", id, kind_names[b->kind[id]]);
        if (buf_append(&buf, &len, &cap, tmp, (size_t)n, &e)) goto fail;
        if (bpe_escape(b->pool + b->off[id], b->len[id], &buf, &len, &cap, &e)) goto fail;
        if (buf_append(&buf, &len, &cap, "\n", 1, &e)) goto fail;
    }
    for (int r = 0; r < b->n_merges; r++) {
        n = snprintf(tmp, sizeof tmp, "merge %d %d\n", b->merges[3 * r], b->merges[3 * r + 1]);
        if (buf_append(&buf, &len, &cap, tmp, (size_t)n, &e)) goto fail;
    }
    *out_len = len;
    return buf;
fail:
    free(buf);
    return NULL;
}

TfmStatus bpe_save(const Bpe *b, const char *path, TfmErr *err)
{
    size_t len = 0;
    char *data = bpe_serialize(b, &len);
    if (!data) return err_set(err, TFM_ERR_NOMEM, "%s: out of memory", path);
    AtomicFile af;
    TfmStatus st = atomic_open(&af, path, err);
    if (st == TFM_OK) {
        if (fwrite(data, 1, len, af.f) != len) {
            st = err_set(err, TFM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
            atomic_abort(&af);
        } else {
            st = atomic_commit(&af, err);
        }
    }
    free(data);
    return st;
}

TfmStatus bpe_load(Bpe **out, const char *path, TfmErr *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(err, TFM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *data = NULL;
    size_t len = 0, cap = 0;
    TfmStatus st = TFM_OK;
    for (;;) {
        if ((st = buf_reserve(&data, &cap, len + 65536, err))) goto done;
        size_t k = fread(data + len, 1, cap - len, f);
        len += k;
        if (k == 0) break;
    }
    if (ferror(f)) {
        st = err_set(err, TFM_ERR_IO, "%s: read error: %s", path, strerror(errno ? errno : EIO));
        goto done;
    }
    st = bpe_deserialize(out, data, len, path, err);
done:
    fclose(f);
    free(data);
    return st;
}

/* Parses a decimal int in [0, INT_MAX] that spans s[0..n) exactly. */
static bool parse_int(const char *s, size_t n, int *v)
{
    if (n == 0 || n > 10) return false;
    long long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        x = x * 10 + (s[i] - '0');
    }
    if (x > INT_MAX) return false;
    *v = (int)x;
    return true;
}

/* Splits line[0..n) into at most max fields at single spaces; the last field
 * takes the rest. Returns the number of fields, or -1 on an empty field. */
static int split_fields(const char *line, size_t n, int max, const char **f, size_t *fl)
{
    int k = 0;
    size_t i = 0;
    while (k < max) {
        size_t j = i;
        if (k < max - 1) while (j < n && line[j] != ' ') j++;
        else j = n;
        if (j == i) return -1;
        f[k] = line + i;
        fl[k++] = j - i;
        if (j >= n) break;
        i = j + 1;
    }
    return k;
}

static bool field_is(const char *f, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(f, word, n) == 0;
}

static int count_chars(const char *s, size_t n, bool *marker_inside)
{
    int k = 0;
    *marker_inside = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)text_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (cp == MARKER_CP && k > 0) *marker_inside = true;
        k++;
    }
    return k;
}

TfmStatus bpe_deserialize(Bpe **out, const char *buf, size_t len, const char *name, TfmErr *err)
{
    *out = NULL;
    Bpe *b = bpe_alloc(err);
    if (!b) return TFM_ERR_NOMEM;
    TfmStatus st = TFM_OK;
    char *text = NULL;
    size_t text_cap = 0;
    int *produced_by = NULL;
    U64Map seen = {0};
    long line_no = 0;
    size_t pos = 0;
    int n_pieces = 0, n_merges = 0;
    const char *line;
    size_t n;

#define BAD(...) do { st = err_set(err, TFM_ERR_FORMAT, __VA_ARGS__); \
                      err_prefix(err, "%s: line %ld: ", name, line_no); goto fail; } while (0)
#define NEXT_LINE() do { \
        if (pos >= len) { line_no++; BAD("unexpected end of file"); } \
        const char *nl_ = memchr(buf + pos, '\n', len - pos); \
        line = buf + pos; n = nl_ ? (size_t)(nl_ - line) : len - pos; \
        pos += n + (nl_ != NULL); line_no++; \
        if (n > 0 && line[n - 1] == '\r') n--; \
    } while (0)

    NEXT_LINE();
    if (!(n == strlen(BPE_MAGIC) && memcmp(line, BPE_MAGIC, n) == 0)) {
        if (n > 8 && memcmp(line, "tfm-bpe ", 8) == 0)
            BAD("unsupported vocabulary version '%.*s' (expected 1)", (int)(n - 8 > 20 ? 20 : n - 8), line + 8);
        BAD("not a tfm-bpe vocabulary (expected '%s')", BPE_MAGIC);
    }
    NEXT_LINE();
    {
        const char *f[4];
        size_t fl[4];
        if (split_fields(line, n, 4, f, fl) != 4 || !field_is(f[0], fl[0], "pieces") ||
            !field_is(f[2], fl[2], "merges") || !parse_int(f[1], fl[1], &n_pieces) ||
            !parse_int(f[3], fl[3], &n_merges))
            BAD("expected 'pieces N merges M'");
        if (n_pieces < BPE_MIN_VOCAB || n_pieces > BPE_MAX_VOCAB)
            BAD("piece count %d out of range [%d, %d]", n_pieces, BPE_MIN_VOCAB, BPE_MAX_VOCAB);
        if (n_merges > n_pieces * 4 + 1024)   /* duplicates are rare; this bounds the work */
            BAD("merge count %d is implausible for %d pieces", n_merges, n_pieces);
    }
    for (int id = 0; id < n_pieces; id++) {
        NEXT_LINE();
        const char *f[3];
        size_t fl[3];
        int got_id, kind = -1;
        if (split_fields(line, n, 3, f, fl) != 3 || !parse_int(f[0], fl[0], &got_id))
            BAD("expected 'ID KIND TEXT'");
        if (got_id != id) BAD("expected piece id %d, got %d", id, got_id);
        for (int k = 0; k < 5; k++)
            if (field_is(f[1], fl[1], kind_names[k])) kind = k;
        if (kind < 0) BAD("unknown piece kind '%.*s'", (int)(fl[1] > 20 ? 20 : fl[1]), f[1]);
        size_t tl = fl[2];
        if ((st = buf_reserve(&text, &text_cap, tl + 1, err))) goto fail;
        memcpy(text, f[2], tl);
        if (!bpe_unescape(text, &tl)) BAD("bad escape or raw control byte in piece text");
        int want = id < BPE_N_SPECIAL ? KIND_SPECIAL : id < BPE_MARKER ? KIND_BYTE
                 : id == BPE_MARKER ? KIND_MARKER : -1;
        if (want >= 0 && kind != want) BAD("piece %d must be of kind '%s'", id, kind_names[want]);
        if (want < 0 && kind != KIND_CHAR && kind != KIND_MERGED)
            BAD("piece %d must be of kind 'char' or 'merged'", id);
        if (kind == KIND_SPECIAL && !(tl == strlen(special_names[id]) && memcmp(text, special_names[id], tl) == 0))
            BAD("piece %d must be %s", id, special_names[id]);
        if (kind == KIND_BYTE) {
            char want_name[8];
            size_t wl = byte_piece_name(id - BPE_BYTE0, want_name);
            if (!(tl == wl && memcmp(text, want_name, wl) == 0)) BAD("piece %d must be %s", id, want_name);
        }
        if (kind == KIND_MARKER && !(tl == 3 && memcmp(text, MARKER_UTF8, 3) == 0))
            BAD("piece %d must be the marker " MARKER_UTF8, id);
        if (kind == KIND_CHAR || kind == KIND_MERGED) {
            size_t bad;
            if (!text_utf8_valid(text, tl, &bad)) BAD("piece text is not valid UTF-8");
            if (memchr(text, ' ', tl)) BAD("piece text contains a space");
            bool inside;
            int chars = count_chars(text, tl, &inside);
            if (kind == KIND_CHAR && (chars != 1 || (unsigned char)text[0] < 0x80))
                BAD("a char piece must be one non-ASCII character");
            if (kind == KIND_CHAR && tl == 3 && memcmp(text, MARKER_UTF8, 3) == 0)
                BAD("a char piece cannot be the marker");
            if (kind == KIND_MERGED && chars < 2) BAD("a merged piece must have two characters or more");
            if (inside) BAD("the marker may only start a piece");
        }
        if (bpe_piece_id(b, text, tl) >= 0) BAD("duplicate piece");
        if (bpe_add_piece(b, kind, text, tl, err) < 0) { st = err->status; goto fail; }
    }
    produced_by = xcalloc((size_t)n_pieces, sizeof *produced_by, err);
    if (!produced_by) { st = TFM_ERR_NOMEM; goto fail; }
    if ((st = u64map_init(&seen, (size_t)n_merges, err))) goto fail;
    for (int r = 0; r < n_merges; r++) {
        NEXT_LINE();
        const char *f[3];
        size_t fl[3];
        int l, rr;
        if (split_fields(line, n, 3, f, fl) != 3 || !field_is(f[0], fl[0], "merge") ||
            !parse_int(f[1], fl[1], &l) || !parse_int(f[2], fl[2], &rr))
            BAD("expected 'merge LEFT RIGHT'");
        if (l >= n_pieces || rr >= n_pieces || !mergeable(b, l) || !mergeable(b, rr))
            BAD("merge %d %d: not two mergeable pieces (printable ASCII, marker, char or "
                "merged)", l, rr);
        size_t ll = b->len[l], rl = b->len[rr];
        if ((st = buf_reserve(&text, &text_cap, ll + rl + 1, err))) goto fail;
        memcpy(text, b->pool + b->off[l], ll);
        memcpy(text + ll, b->pool + b->off[rr], rl);
        int c = bpe_piece_id(b, text, ll + rl);
        if (c < 0 || b->kind[c] != KIND_MERGED) BAD("merge %d %d produces no merged piece", l, rr);
        uint64_t *v = u64map_slot(&seen, (uint64_t)l << 32 | (uint32_t)rr, err);
        if (!v) { st = TFM_ERR_NOMEM; goto fail; }
        if (*v) BAD("duplicate merge %d %d", l, rr);
        *v = 1;
        produced_by[c] = 1;
        if ((st = bpe_add_merge(b, l, rr, c, err))) goto fail;
    }
    if (pos < len) {
        line_no++;
        BAD("unexpected text after the last merge");
    }
    for (int id = BPE_MARKER + 1; id < n_pieces; id++)
        if (b->kind[id] == KIND_MERGED && !produced_by[id]) {
            line_no = 3 + id;
            BAD("merged piece %d is produced by no merge", id);
        }
#undef BAD
#undef NEXT_LINE
    if ((st = bpe_index(b, err))) goto fail;
    *out = b;
    b = NULL;
fail:
    bpe_free(b);
    free(text);
    free(produced_by);
    u64map_free(&seen);
    return st;
}
