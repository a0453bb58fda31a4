/* unicode: the few Unicode facts `tfm bleu` needs to match sacreBLEU, which
 * works on Python strings (decoded by text_utf8_decode, base/text.h): Python's notion of whitespace
 * (str.split/str.rstrip), general categories P*, S*, N* (the intl tokenizer),
 * and str.lower() with its Final_Sigma rule. scripts/gen_unicode.py writes
 * the tables: categories from Unicode 17.0 (as the `regex` package that
 * sacreBLEU uses), whitespace and lowercase from /usr/bin/python3.
 * Not a general text library: no normalization, no other case mappings. */
#ifndef TFM_UNICODE_H
#define TFM_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* Properties returned by unicode_props (bit flags). */
enum {
    UNI_SPACE = 1,      /* Python str.isspace() */
    UNI_PUNCT = 2,      /* general category P* */
    UNI_SYMBOL = 4,     /* general category S* */
    UNI_NUMBER = 8,     /* general category N* */
    UNI_CASED = 16,     /* cased and not case-ignorable (CPython's sigma rule) */
    UNI_IGNORABLE = 32  /* case-ignorable (CPython's sigma rule) */
};

/* Marks a byte that is not part of valid UTF-8 (see unicode_decode). */
#define UNI_INVALID 0xFFFFFFFFu

/* The code point at s[0..n) (n >= 1) and its length in bytes (1..4), from
 * text_utf8_decode (base/text.h, the one UTF-8 decoder), except that a byte
 * that does not start valid UTF-8 gives *cp = UNI_INVALID and a length of 1,
 * so that the metrics' tokenizers copy it through and always move on. */
size_t unicode_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Writes the UTF-8 encoding of cp (< 0x110000) to out; returns its length. */
size_t unicode_encode(uint32_t cp, unsigned char out[4]);

/* Property flags of cp; 0 for UNI_INVALID and unassigned code points. */
unsigned unicode_props(uint32_t cp);

/* Python's chr(cp).lower(): writes 1..3 code points to out, returns how many.
 * UNI_INVALID maps to itself. The context-dependent final sigma is not
 * applied here; unicode_lower_utf8 does it. */
size_t unicode_lower(uint32_t cp, uint32_t out[3]);

/* Python's str.lower() of the UTF-8 string s[0..n), written to out, which
 * must hold 3*n bytes (the worst case: U+0130, 2 bytes, becomes 3 bytes).
 * Invalid bytes are copied unchanged. Returns the output length. */
size_t unicode_lower_utf8(const unsigned char *s, size_t n, unsigned char *out);

/* Unicode data version of the tables, e.g. "14.0.0". */
const char *unicode_data_version(void);

#endif
