/* spm_normalize: sentencepiece's normalizer (normalizer.cc, 0.1.97): the
 * precompiled charsmap, whitespace handling and the "▁" meta symbol.
 *
 * The charsmap is <uint32 trie size><darts-clone double array><strings>:
 * a common-prefix search of the double array finds the rules that match at
 * the input's start; the longest wins and its leaf value is the offset of
 * its replacement, a NUL-terminated string. Where no rule matches, a valid
 * UTF-8 character is copied and an invalid byte becomes U+FFFD. A prefix
 * that is a user-defined piece is copied as it is, unnormalized. */
#include <stdlib.h>
#include <string.h>

#include "text/spm_internal.h"

/* darts-clone's unit layout (darts.h DoubleArrayUnit). */
static inline bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static inline uint32_t unit_value(uint32_t u) { return u & 0x7FFFFFFFu; }
static inline uint32_t unit_label(uint32_t u) { return u & (0x80000000u | 0xFF); }
static inline uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

TfmStatus spm_charsmap_init(SpmCharsmap *cm, uint32_t **units, SpmStr blob, const char *name,
                            TfmErr *err)
{
    *cm = (SpmCharsmap){0};
    *units = NULL;
    const unsigned char *b = (const unsigned char *)blob.s;
    if (blob.n <= 4) goto broken;
    uint32_t trie_size = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                         (uint32_t)b[3] << 24;
    if (trie_size >= blob.n - 4 + 1 || trie_size < 4) goto broken;
    size_t n = trie_size / 4;
    uint32_t *u = xmalloc(n * sizeof *u, err);
    if (!u) return TFM_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *q = b + 4 + 4 * i;
        u[i] = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    }
    *units = u;
    cm->unit = u;
    cm->n_units = n;
    cm->normalized = blob.s + 4 + trie_size;
    cm->normalized_len = blob.n - 4 - trie_size;
    /* Every leaf that a search can reach must name a NUL-terminated string
     * inside the blob: walk every node once (a damaged array may loop, so
     * nodes are marked) and check the leaves now, so encoding never finds a
     * bad one halfway through a file. Transitions that leave the array are
     * no transitions, at search time as here. */
    unsigned char *seen = xcalloc(n, 1, err);
    uint32_t *stack = xmalloc(n * sizeof *stack, err);
    TfmStatus st = TFM_OK;
    if (!seen || !stack) { st = TFM_ERR_NOMEM; goto done; }
    if (cm->normalized_len > 0 && cm->normalized[cm->normalized_len - 1] != '\0') goto bad;
    size_t top = 0;
    stack[top++] = 0;
    seen[0] = 1;
    while (top > 0) {
        uint32_t id = stack[--top];
        uint32_t base = id ^ unit_offset(u[id]);
        if (id != 0 && unit_has_leaf(u[id])) {
            if (base >= n || unit_value(u[base]) >= cm->normalized_len) goto bad;
        }
        for (uint32_t c = 0; c < 256; c++) {
            uint32_t child = base ^ c;
            if (child >= n || unit_label(u[child]) != c || seen[child]) continue;
            seen[child] = 1;
            stack[top++] = child;
        }
    }
    goto done;
bad:
    st = err_set(err, TFM_ERR_FORMAT, "%s: damaged SentencePiece model (normalization rules "
                 "point outside their table)", name);
done:
    free(seen);
    free(stack);
    return st;
broken:
    return err_set(err, TFM_ERR_FORMAT, "%s: damaged SentencePiece model (precompiled_charsmap "
                   "is broken)", name);
}

/* The longest charsmap rule matching s[0..n): its replacement (*out), and
 * the bytes it consumes (0: none matches). darts.h commonPrefixSearch, with
 * the array's bounds checked. */
static size_t charsmap_match(const SpmCharsmap *cm, const char *s, size_t n, const char **out)
{
    const uint32_t *u = cm->unit;
    size_t best = 0;
    uint32_t pos = unit_offset(u[0]);
    for (size_t i = 0; i < n; i++) {
        uint32_t c = (unsigned char)s[i];
        pos ^= c;
        if (pos >= cm->n_units) break;
        uint32_t unit = u[pos];
        if (unit_label(unit) != c) break;
        pos ^= unit_offset(unit);
        if (unit_has_leaf(unit)) {
            /* checked at load for every leaf the walk from the root meets;
             * checked here too, for one a damaged array reaches by coming
             * back to the root as a child (the walk marks the root seen):
             * the strings end in a NUL inside the blob (checked at load),
             * so one that starts inside it ends inside it */
            if (pos >= cm->n_units || unit_value(u[pos]) >= cm->normalized_len) break;
            best = i + 1;
            *out = cm->normalized + unit_value(u[pos]);
        }
    }
    return best;
}

size_t spm_valid_char(const char *s, size_t n)
{
    const unsigned char *b = (const unsigned char *)s;
#define TRAIL(x) (((x) & 0xC0) == 0x80)
    if (b[0] < 0x80) return 1;
    if (n >= 2 && (b[0] & 0xE0) == 0xC0) {
        uint32_t cp = (uint32_t)(b[0] & 0x1F) << 6 | (b[1] & 0x3F);
        return TRAIL(b[1]) && cp >= 0x80 ? 2 : 0;
    }
    if (n >= 3 && (b[0] & 0xF0) == 0xE0) {
        uint32_t cp = (uint32_t)(b[0] & 0x0F) << 12 | (uint32_t)(b[1] & 0x3F) << 6 | (b[2] & 0x3F);
        return TRAIL(b[1]) && TRAIL(b[2]) && cp >= 0x800 && (cp < 0xD800 || cp >= 0xE000) ? 3 : 0;
    }
    if (n >= 4 && (b[0] & 0xF8) == 0xF0) {
        uint32_t cp = (uint32_t)(b[0] & 0x07) << 18 | (uint32_t)(b[1] & 0x3F) << 12 |
                      (uint32_t)(b[2] & 0x3F) << 6 | (b[3] & 0x3F);
        return TRAIL(b[1]) && TRAIL(b[2]) && TRAIL(b[3]) && cp >= 0x10000 && cp <= 0x10FFFF ? 4 : 0;
    }
#undef TRAIL
    return 0;
}

/* normalizer.cc NormalizePrefix: what the start of s[0..n) (n > 0) becomes
 * (*out, *out_len) and how many bytes it consumes. */
static size_t normalize_prefix(const Spm *m, const char *s, size_t n, const char **out,
                               size_t *out_len)
{
    if (m->has_user_defined) {
        size_t k = spm_user_defined_prefix(m, s, n);
        if (k > 0) {
            *out = s;
            *out_len = k;
            return k;
        }
    }
    if (m->has_cm) {
        size_t k = charsmap_match(&m->cm, s, n, out);
        if (k > 0) {
            *out_len = strlen(*out);
            return k;
        }
    }
    size_t k = spm_valid_char(s, n);
    if (k == 0) {
        *out = "\xEF\xBF\xBD";      /* U+FFFD for one invalid byte */
        *out_len = 3;
        return 1;
    }
    *out = s;
    *out_len = k;
    return k;
}

static TfmStatus room(SpmWork *w, size_t need, TfmErr *err)
{
    if (need <= w->norm_cap) return TFM_OK;
    return xgrow((void **)&w->norm, &w->norm_cap, need, 1, err);
}

#define META "\xE2\x96\x81"     /* U+2581, the whitespace meta symbol */

TfmStatus spm_normalize(const Spm *m, SpmWork *w, const char *in, size_t n, size_t *out_len,
                        TfmErr *err)
{
    const SpmProto *p = &m->p;
    const bool rm_ws = p->remove_extra_ws;
    size_t len = 0;
    TfmStatus st;
    *out_len = 0;
    if (n == 0) return TFM_OK;
    const char *o;
    size_t on;
    if (rm_ws) {        /* heading spaces */
        while (n > 0) {
            size_t k = normalize_prefix(m, in, n, &o, &on);
            if (!(on == 1 && o[0] == ' ')) break;
            in += k;
            n -= k;
        }
        if (n == 0) return TFM_OK;
    }
    if ((st = room(w, 3 * n + 16, err))) return st;
    if (p->add_dummy_prefix) {
        memcpy(w->norm, META, 3);
        len = 3;
    }
    bool prev_space = rm_ws;
    while (n > 0) {
        size_t k = normalize_prefix(m, in, n, &o, &on);
        if (prev_space)
            while (on > 0 && o[0] == ' ') o++, on--;
        if (on > 0) {
            if ((st = room(w, len + 3 * on + 3 * n + 16, err))) return st;
            for (size_t i = 0; i < on; i++) {
                if (o[i] == ' ') {
                    memcpy(w->norm + len, META, 3);
                    len += 3;
                } else {
                    w->norm[len++] = o[i];
                }
            }
            prev_space = o[on - 1] == ' ';
        }
        in += k;
        n -= k;
        if (!rm_ws) prev_space = false;
    }
    if (rm_ws)          /* trailing spaces, the dummy prefix too if alone */
        while (len >= 3 && memcmp(w->norm + len - 3, META, 3) == 0) len -= 3;
    *out_len = len;
    return TFM_OK;
}
