/* json_strict: cJSON held to RFC 8259 where it is lenient, with errors that
 * say "line N column M". cJSON's own error position is approximate and it
 * accepts NUL bytes, text after the value, raw control characters and
 * numbers such as 040 or 1.; these passes find them. */
#include "model/json_strict.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void line_col(const char *text, size_t pos, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (text[i] == '\n') { (*line)++; *col = 1; }
        else (*col)++;
    }
}

/* True when the text ends inside a string (*str_start: its opening quote)
 * or with an unclosed { or [, so that a parse error there is a truncated
 * file rather than a bad character. */
static bool ends_open(const char *text, size_t len, size_t *str_start)
{
    long depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
            *str_start = i;
        } else if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') depth--;
    }
    if (!in_str) *str_start = SIZE_MAX;
    return in_str || depth > 0;
}

/* Position of the first \u0000 escape or raw control character inside a
 * string, or of a control character other than tab, CR and LF outside one;
 * SIZE_MAX if none. cJSON accepts all three: it cuts a string at \u0000 and
 * silently uses the prefix, takes raw control bytes in strings (a stray
 * newline in a path would become part of it) and skips any byte below 0x20
 * as whitespace; RFC 8259 allows none of them. */
static size_t find_bad_control_char(const char *text, size_t len, bool *in_string)
{
    bool in_str = false;
    *in_string = true;
    for (size_t i = 0; i < len; i++) {
        if (!in_str) {
            unsigned char c = (unsigned char)text[i];
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
                *in_string = false;
                return i;
            }
            in_str = c == '"';
        } else if (text[i] == '"') {
            in_str = false;
        } else if ((unsigned char)text[i] < 0x20) {
            return i;
        } else if (text[i] == '\\' && i + 1 < len) {
            if (len - i >= 6 && text[i + 1] == 'u' && memcmp(text + i + 2, "0000", 4) == 0) return i;
            i++;
        }
    }
    return SIZE_MAX;
}

/* Length of the JSON number (RFC 8259) at p, 0 if there is none:
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static size_t json_number_len(const char *p, const char *end)
{
    const char *q = p;
    if (q < end && *q == '-') q++;
    if (q < end && *q == '0') q++;
    else if (q < end && *q >= '1' && *q <= '9') while (q < end && isdigit((unsigned char)*q)) q++;
    else return 0;
    if (q < end && *q == '.') {
        if (++q >= end || !isdigit((unsigned char)*q)) return 0;
        while (q < end && isdigit((unsigned char)*q)) q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-')) q++;
        if (q >= end || !isdigit((unsigned char)*q)) return 0;
        while (q < end && isdigit((unsigned char)*q)) q++;
    }
    return (size_t)(q - p);
}

/* cJSON reads numbers with strtod, so it takes 040, 1. and 1.e5, which JSON
 * does not allow (and 040 is 32 elsewhere). Offset of the first such number
 * outside strings, SIZE_MAX if none. Called on text cJSON has parsed. */
static size_t find_bad_number(const char *text, size_t len)
{
    const char *end = text + len;
    bool in_str = false;
    for (const char *p = text; p < end; p++) {
        if (in_str) {
            if (*p == '\\') p++;
            else if (*p == '"') in_str = false;
            continue;
        }
        if (*p == '"') { in_str = true; continue; }
        if (*p != '-' && !isdigit((unsigned char)*p)) continue;
        size_t n = json_number_len(p, end);
        const char *after = p + n;
        if (n == 0 || (after < end && strchr("0123456789.eE+-", *after))) return (size_t)(p - text);
        p = after - 1;
    }
    return SIZE_MAX;
}

/* Where cJSON wanted an object key and found no '"', it reports the byte
 * after the offending one ("{,}" -> "}"). Such a byte follows '{' or ','. */
static size_t fix_key_position(const char *text, size_t pos)
{
    if (pos == 0) return pos;
    size_t q = pos - 1;
    if (strchr(" \t\r\n\"", text[q])) return pos;
    size_t p = q;
    while (p > 0 && strchr(" \t\r\n", text[p - 1])) p--;
    return p > 0 && (text[p - 1] == '{' || text[p - 1] == ',') ? q : pos;
}

/* cJSON's error position is approximate, so the message also shows the text
 * found there. */
static TfmStatus syntax_error(const char *text, size_t len, size_t pos, TfmErr *err)
{
    int line, col;
    size_t str_start = SIZE_MAX;
    bool open = ends_open(text, len, &str_start);
    if (open && str_start != SIZE_MAX && pos <= str_start + 1) {
        line_col(text, str_start, &line, &col);
        return err_set(err, TFM_ERR_CONFIG, "line %d column %d: unterminated string", line, col);
    }
    if (pos + 1 >= len && open) {
        line_col(text, len, &line, &col);
        return err_set(err, TFM_ERR_CONFIG, "line %d column %d: unexpected end of file", line, col);
    }
    if (pos >= len) pos = len - 1;
    pos = fix_key_position(text, pos);
    line_col(text, pos, &line, &col);
    /* Up to 12 bytes of the line from there; control bytes as \xNN. */
    char near[64];
    size_t n = 0;
    for (size_t i = pos; i < len && i < pos + 12 && text[i] != '\n' && text[i] != '\r'; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f) n += (size_t)snprintf(near + n, sizeof near - n, "\\x%02x", c);
        else near[n++] = (char)c;
    }
    near[n] = '\0';
    return err_set(err, TFM_ERR_CONFIG, "line %d column %d: invalid JSON near '%s'", line, col, near);
}

TfmStatus json_strict_parse(const char *text, size_t len, cJSON **out, TfmErr *err)
{
    *out = NULL;
    cJSON *root = NULL;
    TfmStatus st;
    /* A UTF-8 byte order mark is harmless: skip it (columns count from after it). */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) { text += 3; len -= 3; }
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line, col;
        line_col(text, (size_t)(nul - text), &line, &col);
        st = err_set(err, TFM_ERR_CONFIG, "line %d column %d: NUL byte in file", line, col);
        goto fail;
    }
    size_t start = strspn(text, " \t\r\n");
    if (start == len) {
        st = err_set(err, TFM_ERR_CONFIG, "empty file (expected a JSON object)");
        goto fail;
    }
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!root) {
        st = syntax_error(text, len, end ? (size_t)(end - text) : 0, err);
        goto fail;
    }
    size_t tail = (size_t)(end - text);
    tail += strspn(end, " \t\r\n");
    if (tail < len) {
        int line, col;
        line_col(text, tail, &line, &col);
        st = err_set(err, TFM_ERR_CONFIG, "line %d column %d: unexpected text after the JSON object",
                     line, col);
        goto fail;
    }
    bool in_string;
    size_t esc = find_bad_control_char(text, len, &in_string);
    if (esc != SIZE_MAX) {
        int line, col;
        line_col(text, esc, &line, &col);
        if (text[esc] == '\\')
            st = err_set(err, TFM_ERR_CONFIG, "line %d column %d: \\u0000 in a string is not "
                         "supported", line, col);
        else if (!in_string)
            st = err_set(err, TFM_ERR_CONFIG, "line %d column %d: control character 0x%02X "
                         "outside a string (not JSON whitespace)", line, col,
                         (unsigned char)text[esc]);
        else
            st = err_set(err, TFM_ERR_CONFIG, "line %d column %d: raw control character 0x%02X in "
                         "a string (JSON needs it escaped, e.g. \\n)", line, col,
                         (unsigned char)text[esc]);
        goto fail;
    }
    size_t bad = find_bad_number(text, len);
    if (bad != SIZE_MAX) {
        int line, col;
        line_col(text, bad, &line, &col);
        size_t n = strspn(text + bad, "0123456789.eE+-");
        st = err_set(err, TFM_ERR_CONFIG, "line %d column %d: '%.*s' is not a JSON number", line,
                     col, (int)(n > 24 ? 24 : n), text + bad);
        goto fail;
    }
    *out = root;
    return TFM_OK;
fail:
    cJSON_Delete(root);
    return st;
}
