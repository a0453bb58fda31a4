/* unicode: the generated Python-compatible tables and lowercasing. */
#include "text/unicode.h"

#include <stdbool.h>

typedef struct { uint32_t lo, hi; unsigned char props; } UniRange;
typedef struct { uint32_t from, to; } UniLower;
typedef struct { uint32_t from; uint32_t to[3]; } UniLowerMulti;

#include "base/text.h"
#include "text/unicode_tables.h"

#define N_RANGES (sizeof uni_prop_ranges / sizeof *uni_prop_ranges)
#define N_LOWER (sizeof uni_lower_pairs / sizeof *uni_lower_pairs)
#define N_LOWER_MULTI (sizeof uni_lower_multi / sizeof *uni_lower_multi)

size_t unicode_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    int len = text_utf8_decode(s, n, cp);
    if (len > 0) return (size_t)len;
    *cp = UNI_INVALID;
    return 1;
}

size_t unicode_encode(uint32_t cp, unsigned char out[4])
{
    if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

unsigned unicode_props(uint32_t cp)
{
    if (cp < 256) return uni_latin1_props[cp];
    size_t lo = 0, hi = N_RANGES;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < uni_prop_ranges[mid].lo) hi = mid;
        else if (cp > uni_prop_ranges[mid].hi) lo = mid + 1;
        else return uni_prop_ranges[mid].props;
    }
    return 0;
}

size_t unicode_lower(uint32_t cp, uint32_t out[3])
{
    if (cp < 0x80) {
        out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
        return 1;
    }
    size_t lo = 0, hi = N_LOWER;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < uni_lower_pairs[mid].from) hi = mid;
        else if (cp > uni_lower_pairs[mid].from) lo = mid + 1;
        else { out[0] = uni_lower_pairs[mid].to; return 1; }
    }
    for (size_t i = 0; i < N_LOWER_MULTI; i++) {
        if (uni_lower_multi[i].from != cp) continue;
        size_t k = 0;
        while (k < 3 && uni_lower_multi[i].to[k]) { out[k] = uni_lower_multi[i].to[k]; k++; }
        return k;
    }
    out[0] = cp;
    return 1;
}

/* CPython's handle_capital_sigma: U+03A3 becomes final sigma U+03C2 when a
 * cased letter precedes it and none follows (case-ignorables are skipped on
 * both sides). `prev_cased` carries the backward half from the caller. */
static bool final_sigma_follows(const unsigned char *s, size_t n, size_t i)
{
    while (i < n) {
        uint32_t cp;
        int len = text_utf8_decode(s + i, n - i, &cp);
        i += len > 0 ? (size_t)len : 1;
        unsigned p = len > 0 ? unicode_props(cp) : 0;
        if (!(p & UNI_IGNORABLE)) return !(p & UNI_CASED);
    }
    return true;
}

size_t unicode_lower_utf8(const unsigned char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    bool prev_cased = false;
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            unsigned char b = s[i++];
            out[o++] = b >= 'A' && b <= 'Z' ? (unsigned char)(b + 32) : b;
            unsigned p = uni_latin1_props[b];
            if (!(p & UNI_IGNORABLE)) prev_cased = (p & UNI_CASED) != 0;
            continue;
        }
        uint32_t cp;
        int dec = text_utf8_decode(s + i, n - i, &cp);
        if (dec == 0) {             /* not UTF-8: the byte stays as it is */
            out[o++] = s[i++];
            prev_cased = false;
            continue;
        }
        size_t len = (size_t)dec;
        unsigned p = unicode_props(cp);
        uint32_t low[3];
        size_t k;
        if (cp == 0x3A3) {
            low[0] = prev_cased && final_sigma_follows(s, n, i + len) ? 0x3C2 : 0x3C3;
            k = 1;
        } else {
            k = unicode_lower(cp, low);
        }
        for (size_t j = 0; j < k; j++) o += unicode_encode(low[j], out + o);
        if (!(p & UNI_IGNORABLE)) prev_cased = (p & UNI_CASED) != 0;
        i += len;
    }
    return o;
}

const char *unicode_data_version(void)
{
    return UNICODE_DATA_VERSION;
}
