/* ter_normalize: tercom's normalization as sacreBLEU writes it (see
 * ter_normalize.h). Each of sacreBLEU's regular-expression substitutions is
 * one pass over the code points, left to right without overlaps as
 * Python's re.sub matches. */
#include "text/ter_normalize.h"

#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "text/unicode.h"

void ter_norm_free(TerNorm *t)
{
    free(t->a);
    free(t->b);
    free(t->out);
    memset(t, 0, sizeof *t);
}

/* Makes room for n code points in b (the output of the next pass). */
static TfmStatus reserve_b(TerNorm *t, size_t n, TfmErr *err)
{
    return xgrow((void **)&t->b, &t->cap_b, n, sizeof *t->b, err);
}

static void swap_buffers(TerNorm *t, size_t n)
{
    uint32_t *p = t->a;
    size_t c = t->cap_a;
    t->a = t->b, t->cap_a = t->cap_b;
    t->b = p, t->cap_b = c;
    t->n = n;
}

/* Replaces each non-overlapping occurrence of the ASCII string `from` by
 * `to` (no longer than 2x from + 2). */
static TfmStatus replace(TerNorm *t, const char *from, const char *to, TfmErr *err)
{
    const size_t nf = strlen(from), nt = strlen(to);
    if (reserve_b(t, t->n * (nt > nf ? nt : nf) + 1, err)) return err->status;
    size_t k = 0;
    for (size_t i = 0; i < t->n;) {
        size_t j = 0;
        while (j < nf && i + j < t->n && t->a[i + j] == (unsigned char)from[j]) j++;
        if (j == nf) {
            for (size_t q = 0; q < nt; q++) t->b[k++] = (unsigned char)to[q];
            i += nf;
        } else {
            t->b[k++] = t->a[i++];
        }
    }
    swap_buffers(t, k);
    return TFM_OK;
}

static bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static bool is_period_comma(uint32_t c) { return c == '.' || c == ','; }

/* sacreBLEU's class [{-~[-` -&(-+:-@/]: ASCII punctuation and the space,
 * but not ' , - . or digits and letters. */
static bool is_split_punct(uint32_t c)
{
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

/* Pairs (x, y) with first(x) and second(y), non-overlapping from the left:
 * each becomes pre x mid y post (each a string of spaces, possibly empty). */
static TfmStatus pairs(TerNorm *t, bool (*first)(uint32_t), bool (*second)(uint32_t),
                       bool first_negated, bool second_negated, const char *pre,
                       const char *mid, const char *post, TfmErr *err)
{
    if (reserve_b(t, t->n * 3 + 1, err)) return err->status;
    size_t k = 0;
    for (size_t i = 0; i < t->n;) {
        if (i + 1 < t->n && first(t->a[i]) != first_negated &&
            second(t->a[i + 1]) != second_negated) {
            for (const char *s = pre; *s; s++) t->b[k++] = (unsigned char)*s;
            t->b[k++] = t->a[i];
            for (const char *s = mid; *s; s++) t->b[k++] = (unsigned char)*s;
            t->b[k++] = t->a[i + 1];
            for (const char *s = post; *s; s++) t->b[k++] = (unsigned char)*s;
            i += 2;
        } else {
            t->b[k++] = t->a[i++];
        }
    }
    swap_buffers(t, k);
    return TFM_OK;
}

/* Each code point for which `pick` holds becomes " c " (keep) or is
 * dropped (!keep). */
static TfmStatus each(TerNorm *t, bool (*pick)(uint32_t), bool keep, TfmErr *err)
{
    if (reserve_b(t, t->n * 3 + 1, err)) return err->status;
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!pick(t->a[i])) {
            t->b[k++] = t->a[i];
        } else if (keep) {
            t->b[k++] = ' ';
            t->b[k++] = t->a[i];
            t->b[k++] = ' ';
        }
    }
    swap_buffers(t, k);
    return TFM_OK;
}

static bool in(uint32_t c, uint32_t lo, uint32_t hi) { return c >= lo && c <= hi; }

/* sacreBLEU's ASIAN_PUNCT and FULL_WIDTH_PUNCT */
static bool is_asian_punct(uint32_t c)
{
    return c == 0x3001 || c == 0x3002 || in(c, 0x3008, 0x3011) || in(c, 0x3014, 0x301f) ||
           in(c, 0xff61, 0xff65) || c == 0x30fb || c == 0xff0e || c == 0xff0c ||
           c == 0xff1f || c == 0xff1a || c == 0xff1b || c == 0xff01 || c == 0xff02 ||
           c == 0xff08 || c == 0xff09;
}

/* The characters _normalize_asian splits apart: CJK ideographs (and their
 * extension A), strokes, radicals, compatibility forms, the range
 * 3200-3F22 its comment calls enclosed letters, and the punctuation above.
 * Its three Hiragana/Katakana substitutions are left out: their patterns
 * ("(^|^[...])([...]+)(?=$|^[...])") match only a line made of those
 * characters alone, and the line always starts with the space that the
 * western normalization put there, so they never match. */
static bool is_asian_split(uint32_t c)
{
    return in(c, 0x4e00, 0x9fff) || in(c, 0x3400, 0x4dbf) || in(c, 0x31c0, 0x31ef) ||
           in(c, 0x2e80, 0x2eff) || in(c, 0x3300, 0x33ff) || in(c, 0xf900, 0xfaff) ||
           in(c, 0xfe30, 0xfe4f) || in(c, 0x3200, 0x3f22) || is_asian_punct(c);
}

static bool is_dash(uint32_t c) { return c == '-'; }

static TfmStatus western(TerNorm *t, TfmErr *err)
{
    /* end-of-line hyphenation and line joins (a line has no newline,
     * kept for fidelity), then XML entities, in sacreBLEU's order */
    static const char *const subs[][2] = {
        {"\n-", ""}, {"\n", " "}, {"&quot;", "\""}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}};
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        if (replace(t, subs[i][0], subs[i][1], err)) return err->status;
    /* f" {sent} " */
    if (reserve_b(t, t->n + 2, err)) return err->status;
    t->b[0] = ' ';
    memcpy(t->b + 1, t->a, t->n * sizeof *t->a);
    t->b[t->n + 1] = ' ';
    swap_buffers(t, t->n + 2);
    if (each(t, is_split_punct, true, err) ||
        replace(t, "'s ", " 's ", err))
        return err->status;
    /* 's$: the line ends with the space added above, so this never applies;
     * kept for fidelity */
    if (t->n >= 2 && t->a[t->n - 2] == '\'' && t->a[t->n - 1] == 's') {
        if (reserve_b(t, t->n + 1, err)) return err->status;
        memcpy(t->b, t->a, (t->n - 2) * sizeof *t->a);
        t->b[t->n - 2] = ' ', t->b[t->n - 1] = '\'', t->b[t->n] = 's';
        swap_buffers(t, t->n + 1);
    }
    /* ([^0-9])([\.,]) -> "\1 \2 ", ([\.,])([^0-9]) -> " \1 \2",
     * ([0-9])(-) -> "\1 \2 " */
    if (pairs(t, is_digit, is_period_comma, true, false, "", " ", " ", err) ||
        pairs(t, is_period_comma, is_digit, false, true, " ", " ", "", err) ||
        pairs(t, is_digit, is_dash, false, false, "", " ", " ", err))
        return err->status;
    return TFM_OK;
}

TfmStatus ter_norm_apply(TerNorm *t, const unsigned char *line, size_t len, bool normalize,
                         bool asian, bool asian_punct_remove, TfmErr *err)
{
    if (xgrow((void **)&t->a, &t->cap_a, len + 1, sizeof *t->a, err)) return err->status;
    t->n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int step = text_utf8_decode(line + i, len - i, &cp);
        if (step <= 0) return err_set(err, TFM_ERR_FORMAT, "ter: invalid UTF-8");
        t->a[t->n++] = cp;
        i += (size_t)step;
    }
    if (normalize) {
        if (western(t, err)) return err->status;
        if (asian && each(t, is_asian_split, true, err)) return err->status;
    }
    if (asian_punct_remove && each(t, is_asian_punct, false, err)) return err->status;
    if (xgrow((void **)&t->out, &t->cap_out, t->n * 4 + 1, 1, err)) return err->status;
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) k += unicode_encode(t->a[i], t->out + k);
    t->out[k] = 0;
    t->out_len = k;
    return TFM_OK;
}
