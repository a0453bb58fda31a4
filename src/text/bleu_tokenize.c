/* bleu_tokenize: sacreBLEU 2.x's line preprocessing, the part of BLEU that
 * turns a raw line into the tokens it scores: Python str.lower (-lc),
 * str.rstrip, then the 13a, intl, zh, char or none tokenizer and str.split.
 * Every step mirrors a line of sacreBLEU (metrics/bleu.py _preprocess_segment,
 * tokenizers/tokenizer_13a.py, tokenizer_re.py, tokenizer_intl.py,
 * tokenizer_zh.py, tokenizer_char.py); comments name the Python they copy. Strings are handled
 * as UTF-8 bytes; where sacreBLEU works on code points (str.split,
 * str.rstrip, str.lower, \p{P}) we decode with unicode.c. Bytes that are not
 * valid UTF-8 (sacreBLEU would refuse the file) are kept as opaque one-byte
 * characters: not space, not punctuation, not a digit. N-gram counting and
 * scoring are in bleu.c. */
#include "text/bleu_tokenize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "text/unicode.h"

/* ---- small helpers ---- */

/* Room for `factor * n + extra` bytes: every tokenizer pass grows its input
 * at most threefold (a symbol becomes " s "). */
static TfmStatus buf_reserve(BleuBuf *b, size_t n, size_t factor, TfmErr *err)
{
    size_t need;
    if (!size_mul_ok(n, factor, &need) || need > SIZE_MAX - 16)
        return err_set(err, TFM_ERR_NOMEM, "bleu: line too long");
    return xgrow((void **)&b->p, &b->cap, need + 16, 1, err);
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Python str.isspace() for ASCII: \t \n \v \f \r, 0x1c..0x1f and space. */
static int ascii_space(unsigned char c)
{
    return c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f);
}

/* Is the character at p[i] whitespace (str.split's notion)? *len gets its size. */
static int space_at(const unsigned char *p, size_t n, size_t i, size_t *len)
{
    if (p[i] < 0x80) { *len = 1; return ascii_space(p[i]); }
    uint32_t cp;
    *len = unicode_decode(p + i, n - i, &cp);
    return cp != UNI_INVALID && (unicode_props(cp) & UNI_SPACE);
}

/* Length of s[0..n) after Python's str.rstrip(). Whitespace characters are
 * valid UTF-8, so stepping back to the last lead byte and decoding forward
 * finds them; anything else ends the strip. */
static size_t rstrip_len(const unsigned char *s, size_t n)
{
    while (n > 0) {
        if (s[n - 1] < 0x80) {
            if (!ascii_space(s[n - 1])) break;
            n--;
            continue;
        }
        size_t p = n - 1, back = 0;
        while (p > 0 && back < 3 && (s[p] & 0xC0) == 0x80) { p--; back++; }
        uint32_t cp;
        size_t len = unicode_decode(s + p, n - p, &cp);
        if (cp == UNI_INVALID || p + len != n || !(unicode_props(cp) & UNI_SPACE)) break;
        n = p;
    }
    return n;
}

static TfmStatus push_span(BleuTok *t, size_t off, size_t len, TfmErr *err)
{
    if (xgrow((void **)&t->spans, &t->cap_spans, t->n_spans + 1, sizeof *t->spans, err))
        return err->status;
    t->spans[t->n_spans].off = off;
    t->spans[t->n_spans].len = len;
    t->n_spans++;
    return TFM_OK;
}

/* ' '.join(line.split()) then .split(): the tokens are the maximal runs of
 * non-whitespace characters. */
static TfmStatus split_ws(BleuTok *t, const unsigned char *p, size_t n, TfmErr *err)
{
    size_t i = 0, len;
    while (i < n) {
        if (space_at(p, n, i, &len)) { i += len; continue; }
        size_t start = i;
        i += len;
        while (i < n && !space_at(p, n, i, &len)) i += len;
        if (push_span(t, start, i - start, err)) return err->status;
    }
    return TFM_OK;
}

/* tokenizer_char: " ".join(line) then split(): every non-space character
 * (an invalid byte counts as one) is a token. */
static TfmStatus split_chars(BleuTok *t, const unsigned char *p, size_t n, TfmErr *err)
{
    size_t i = 0, len;
    while (i < n) {
        int sp = space_at(p, n, i, &len);
        if (!sp && push_span(t, i, len, err)) return err->status;
        i += len;
    }
    return TFM_OK;
}

/* str.replace(pat, rep) in place; rep is never longer than pat. */
static size_t replace_all(unsigned char *p, size_t n, const char *pat, const char *rep)
{
    size_t pl = strlen(pat), rl = strlen(rep), r = 0, w = 0;
    if (!memchr(p, pat[0], n)) return n;
    while (r < n) {
        if (p[r] == (unsigned char)pat[0] && n - r >= pl && memcmp(p + r, pat, pl) == 0) {
            memcpy(p + w, rep, rl);
            w += rl;
            r += pl;
        } else {
            p[w++] = p[r++];
        }
    }
    return w;
}

/* ---- 13a (tokenizer_13a.py + tokenizer_re.py) ----
 * The regexes are ASCII, so they run on bytes: a multi-byte character can
 * only match [^0-9], and matching its last byte (or first, for a following
 * context) yields the same output as Python matching the whole character. */

/* r'([\{-\~\[-\` -\&\(-\+\:-\@\/])' -> r' \1 ' */
static int is_13a_punct(unsigned char c)
{
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

static size_t pass13a_punct(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_13a_punct(in[i])) { out[o++] = ' '; out[o++] = in[i]; out[o++] = ' '; }
        else out[o++] = in[i];
    }
    return o;
}

/* r'([^0-9])([\.,])' -> r'\1 \2 ' (matches do not overlap: the scan resumes
 * after the period, as re.sub does) */
static size_t pass13a_period_after(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        if (i + 1 < n && !is_digit(in[i]) && (in[i + 1] == '.' || in[i + 1] == ',')) {
            out[o++] = in[i]; out[o++] = ' '; out[o++] = in[i + 1]; out[o++] = ' ';
            i += 2;
        } else {
            out[o++] = in[i++];
        }
    }
    return o;
}

/* r'([\.,])([^0-9])' -> r' \1 \2' */
static size_t pass13a_period_before(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        if (i + 1 < n && (in[i] == '.' || in[i] == ',') && !is_digit(in[i + 1])) {
            out[o++] = ' '; out[o++] = in[i]; out[o++] = ' '; out[o++] = in[i + 1];
            i += 2;
        } else {
            out[o++] = in[i++];
        }
    }
    return o;
}

/* r'([0-9])(-)' -> r'\1 \2 ' */
static size_t pass13a_dash(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        if (i + 1 < n && is_digit(in[i]) && in[i + 1] == '-') {
            out[o++] = in[i]; out[o++] = ' '; out[o++] = '-'; out[o++] = ' ';
            i += 2;
        } else {
            out[o++] = in[i++];
        }
    }
    return o;
}

/* ---- intl (tokenizer_intl.py), on code points ---- */

static unsigned props_at(const unsigned char *p, size_t n, size_t i, size_t *len)
{
    if (p[i] < 0x80) { *len = 1; return unicode_props(p[i]); }
    uint32_t cp;
    *len = unicode_decode(p + i, n - i, &cp);
    return cp == UNI_INVALID ? 0 : unicode_props(cp);
}

/* regex r'(\P{N})(\p{P})' -> r'\1 \2 ' when punct_second, else
 * r'(\p{P})(\P{N})' -> r' \1 \2'. */
static size_t pass_intl_punct(const unsigned char *in, size_t n, unsigned char *out,
                              int punct_second)
{
    size_t o = 0, i = 0;
    while (i < n) {
        size_t l1, l2 = 0;
        unsigned p1 = props_at(in, n, i, &l1), p2 = 0;
        if (i + l1 < n) p2 = props_at(in, n, i + l1, &l2);
        int match = l2 && (punct_second ? !(p1 & UNI_NUMBER) && (p2 & UNI_PUNCT)
                                        : (p1 & UNI_PUNCT) && !(p2 & UNI_NUMBER));
        if (!match) {
            memcpy(out + o, in + i, l1);
            o += l1;
            i += l1;
            continue;
        }
        if (!punct_second) out[o++] = ' ';
        memcpy(out + o, in + i, l1);
        o += l1;
        out[o++] = ' ';
        memcpy(out + o, in + i + l1, l2);
        o += l2;
        if (punct_second) out[o++] = ' ';
        i += l1 + l2;
    }
    return o;
}

/* regex r'(\p{S})' -> r' \1 ' */
static size_t pass_intl_symbol(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        size_t l;
        unsigned p = props_at(in, n, i, &l);
        if (p & UNI_SYMBOL) out[o++] = ' ';
        memcpy(out + o, in + i, l);
        o += l;
        if (p & UNI_SYMBOL) out[o++] = ' ';
        i += l;
    }
    return o;
}

/* ---- zh (tokenizer_zh.py), on code points ----
 * Its table of "Chinese" ranges, as Python compares them: two entries are
 * written with five hex digits ('\u20000', '\u2a6d6'; '\u2f800', '\u2fa1d'),
 * which Python reads as a four-digit escape followed by a digit, so they are
 * two-character strings and cover U+2001-U+2A6D and U+2F81-U+2FA1, not the
 * supplementary planes. Sorted here (the order does not matter); its
 * U+2600-U+26FF and U+2700-U+27BF are left out, inside U+2001-U+2A6D. */
static const uint32_t zh_ranges[][2] = {
    {0x2001, 0x2A6D}, {0x2E80, 0x2EFF}, {0x2F00, 0x2FDF}, {0x2F81, 0x2FA1}, {0x2FF0, 0x2FFF},
    {0x3000, 0x303F}, {0x3100, 0x312F}, {0x31A0, 0x31BF}, {0x31C0, 0x31EF}, {0x3200, 0x32FF},
    {0x3300, 0x33FF}, {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D},
    {0xFA30, 0xFA6A}, {0xFA70, 0xFAD9}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F}, {0xFF00, 0xFFEF},
};

static int is_zh_char(uint32_t cp)
{
    for (size_t i = 0; i < sizeof zh_ranges / sizeof *zh_ranges; i++)
        if (cp >= zh_ranges[i][0] && cp <= zh_ranges[i][1]) return 1;
    return 0;
}

/* Length of the leading whitespace of s[0..n) (Python's str.lstrip). */
static size_t lstrip_len(const unsigned char *s, size_t n)
{
    size_t i = 0, len;
    while (i < n && space_at(s, n, i, &len)) i += len;
    return i;
}

/* The line without its leading whitespace, with " c " for each Chinese
 * character c (all 3 bytes in UTF-8, so the output is at most 5/3 of the input). */
static size_t pass_zh_chars(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0, i = lstrip_len(in, n);
    while (i < n) {
        if (in[i] < 0x80) { out[o++] = in[i++]; continue; }
        uint32_t cp;
        size_t l = unicode_decode(in + i, n - i, &cp);
        int zh = cp != UNI_INVALID && is_zh_char(cp);
        if (zh) out[o++] = ' ';
        memcpy(out + o, in + i, l);
        o += l;
        if (zh) out[o++] = ' ';
        i += l;
    }
    return o;
}

/* ---- preprocessing: BLEU._preprocess_segment ---- */

typedef size_t (*PassFn)(const unsigned char *in, size_t n, unsigned char *out);

/* Runs one pass from *cur into whichever ping-pong buffer *cur is not. */
static TfmStatus run_pass(BleuTok *t, const unsigned char **cur, size_t *n, PassFn fn,
                          TfmErr *err)
{
    BleuBuf *dst = *cur == t->a.p ? &t->b : &t->a;
    if (buf_reserve(dst, *n, 3, err)) return err->status;
    *n = fn(*cur, *n, dst->p);
    *cur = dst->p;
    return TFM_OK;
}

/* tokenizer_re.py's four regexes, shared by 13a and zh. */
static TfmStatus run_regexp(BleuTok *t, const unsigned char **cur, size_t *n, TfmErr *err)
{
    if (run_pass(t, cur, n, pass13a_punct, err)) return err->status;
    int has_period = memchr(*cur, '.', *n) || memchr(*cur, ',', *n);
    if (has_period && run_pass(t, cur, n, pass13a_period_after, err)) return err->status;
    if (has_period && run_pass(t, cur, n, pass13a_period_before, err)) return err->status;
    if (memchr(*cur, '-', *n) && run_pass(t, cur, n, pass13a_dash, err)) return err->status;
    return TFM_OK;
}

static size_t pass_intl_1(const unsigned char *in, size_t n, unsigned char *out)
{
    return pass_intl_punct(in, n, out, 1);
}

static size_t pass_intl_2(const unsigned char *in, size_t n, unsigned char *out)
{
    return pass_intl_punct(in, n, out, 0);
}

/* Fills t->spans with the tokens of line and sets *text to the bytes they
 * point into. */
TfmStatus bleu_tok_line(BleuTok *t, const BleuOptions *opt, const unsigned char *line,
                        size_t n, const unsigned char **text, TfmErr *err)
{
    const unsigned char *cur = line;
    t->n_spans = 0;
    /* if self.lowercase: sent = sent.lower() */
    if (opt->lowercase) {
        if (buf_reserve(&t->a, n, 3, err)) return err->status;
        n = unicode_lower_utf8(cur, n, t->a.p);
        cur = t->a.p;
    }
    /* self.tokenizer(sent.rstrip()) */
    n = rstrip_len(cur, n);
    switch (opt->tokenize) {
    case BLEU_TOK_NONE:
        break;
    case BLEU_TOK_CHAR:
        *text = cur;
        return split_chars(t, cur, n, err);
    case BLEU_TOK_13A: {
        /* " {} ".format(line) after the replacements (which never involve
         * the added spaces, so the order does not matter). */
        BleuBuf *dst = cur == t->a.p ? &t->b : &t->a;
        if (buf_reserve(dst, n, 1, err)) return err->status;
        dst->p[0] = ' ';
        memcpy(dst->p + 1, cur, n);
        size_t m = n + 1;
        m = replace_all(dst->p + 1, m - 1, "<skipped>", "") + 1;
        m = replace_all(dst->p + 1, m - 1, "-\n", "") + 1;
        m = replace_all(dst->p + 1, m - 1, "\n", " ") + 1;
        m = replace_all(dst->p + 1, m - 1, "&quot;", "\"") + 1;
        m = replace_all(dst->p + 1, m - 1, "&amp;", "&") + 1;
        m = replace_all(dst->p + 1, m - 1, "&lt;", "<") + 1;
        m = replace_all(dst->p + 1, m - 1, "&gt;", ">") + 1;
        dst->p[m++] = ' ';
        cur = dst->p;
        n = m;
        if (run_regexp(t, &cur, &n, err)) return err->status;
        break;
    }
    case BLEU_TOK_ZH: {
        /* line.strip() (rstrip done above), Chinese characters spaced out,
         * then tokenizer_re's regexes, with no spaces added around the line:
         * unlike 13a, a leading ".5" stays one token. */
        if (run_pass(t, &cur, &n, pass_zh_chars, err)) return err->status;
        if (run_regexp(t, &cur, &n, err)) return err->status;
        break;
    }
    case BLEU_TOK_INTL:
        if (run_pass(t, &cur, &n, pass_intl_1, err)) return err->status;
        if (run_pass(t, &cur, &n, pass_intl_2, err)) return err->status;
        if (run_pass(t, &cur, &n, pass_intl_symbol, err)) return err->status;
        break;
    }
    *text = cur;
    return split_ws(t, cur, n, err);
}

/* The tokens of line joined by single spaces (bleu_tokenize's job). */
TfmStatus bleu_tok_join(BleuTok *t, const BleuOptions *opt, const char *line, size_t len,
                        const char **out, size_t *out_len, TfmErr *err)
{
    const unsigned char *text = NULL;
    if (bleu_tok_line(t, opt, (const unsigned char *)line, len, &text, err)) return err->status;
    /* Join in whichever ping-pong buffer the tokens are not in. */
    BleuBuf *dst = text == t->a.p ? &t->b : &t->a;
    size_t total = 0;
    for (size_t i = 0; i < t->n_spans; i++) total += t->spans[i].len + 1;
    if (buf_reserve(dst, total, 1, err)) return err->status;
    size_t o = 0;
    for (size_t i = 0; i < t->n_spans; i++) {
        if (i) dst->p[o++] = ' ';
        memcpy(dst->p + o, text + t->spans[i].off, t->spans[i].len);
        o += t->spans[i].len;
    }
    dst->p[o] = '\0';
    *out = (const char *)dst->p;
    *out_len = o;
    return TFM_OK;
}

void bleu_tok_free(BleuTok *t)
{
    free(t->a.p);
    free(t->b.p);
    free(t->spans);
}
