/* text: bounded line reading, UTF-8 validation (RFC 3629 table 3-7). */
#include "base/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

struct GzSource {
    z_stream zs;
    bool in_eof, member_end;
    size_t pos, len;                /* unread bytes: out[pos..len) */
    unsigned char in[1 << 16], out[1 << 16];
};

TfmStatus text_reader_open(LineReader *r, const char *path, TfmErr *err)
{
    memset(r, 0, sizeof *r);
    r->check_utf8 = true;
    r->max_line = TEXT_MAX_LINE;
    if (strcmp(path, "-") == 0) {
        r->f = stdin;
        r->name = "stdin";
        return TFM_OK;
    }
    r->name = path;
    if (!*path) return err_set(err, TFM_ERR_IO, "input path is empty");
    /* only regular files, as tfm train's config check requires */
    if (!(r->f = text_open_regular(path, err))) return err->status;
    r->owns_file = true;
    return TFM_OK;
}

int text_open_nonblocking(const char *path, bool *regular)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before we can
     * refuse it */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    *regular = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    return fd;
}

const char *text_not_regular(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? "is a folder, not a file"
                                                       : "not a regular file";
}

FILE *text_open_regular(const char *path, TfmErr *err)
{
    bool regular;
    int fd = text_open_nonblocking(path, &regular);
    if (fd < 0) {
        err_set(err, TFM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (!regular) {
        close(fd);
        err_set(err, TFM_ERR_IO, "%s: %s", path, text_not_regular(path));
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        err_set(err, TFM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

TfmStatus text_read_file(const char *path, size_t max, const char *what,
                         TfmStatus (*vet)(FILE *f, uint64_t size, const char *path, TfmErr *err),
                         char **out, size_t *len, TfmErr *err)
{
    FILE *f = text_open_regular(path, err);
    if (!f) return err->status;
    struct stat sb;
    TfmStatus st = TFM_OK;
    char *buf = NULL;
    size_t n = 0;
    if (fstat(fileno(f), &sb) != 0)
        st = err_set(err, TFM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    else if ((uint64_t)sb.st_size > max)
        st = err_set(err, TFM_ERR_FORMAT, "%s: file too large (%s is at most %zu bytes)", path,
                     what, max);
    else if (vet)
        st = vet(f, (uint64_t)sb.st_size, path, err);
    if (st == TFM_OK) {
        n = (size_t)sb.st_size;
        if (!(buf = xmalloc(n + 1, err))) {
            err_prefix(err, "%s: ", path);
            st = TFM_ERR_NOMEM;
        } else if (n && fread(buf, 1, n, f) != n) {
            st = err_set(err, TFM_ERR_IO, "%s: read failed", path);
        }
    }
    fclose(f);
    if (st != TFM_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return TFM_OK;
}

void text_reader_from_file(LineReader *r, FILE *f, const char *name)
{
    memset(r, 0, sizeof *r);
    r->check_utf8 = true;
    r->max_line = TEXT_MAX_LINE;
    r->f = f;
    r->name = name;
}

/* "line N", or after a seek "the line at byte B" (its offset in the file). */
static const char *line_name(const LineReader *r, long no, char *buf, size_t size)
{
    if (r->seeked)
        snprintf(buf, size, "the line at byte %llu", (unsigned long long)r->line_start);
    else
        snprintf(buf, size, "line %ld", no);
    return buf;
}

/* Makes room for at least `need` bytes in r->buf, never beyond the most a
 * line may take (max_line, a "\r" and the terminating NUL). */
static bool grow(LineReader *r, size_t need, TfmErr *err)
{
    if (need <= r->cap) return true;
    size_t most = r->max_line + 2, cap = r->cap ? r->cap : 256;
    if (cap > most) cap = most;
    while (cap < need) cap = cap > most / 2 ? most : cap * 2;
    char *p = xrealloc(r->buf, cap, err);
    if (!p) {
        char where[48];
        err_set(err, TFM_ERR_NOMEM, "%s: %s: out of memory", r->name,
                line_name(r, r->line_no + 1, where, sizeof where));
        return false;
    }
    r->buf = p;
    r->cap = cap;
    return true;
}

/* Starts inflating: the two magic bytes already read come first. */
static bool gz_start(LineReader *r, TfmErr *err)
{
    GzSource *g = xcalloc(1, sizeof *g, err);
    if (!g) return false;
    memcpy(g->in, r->peek, 2);
    g->zs.next_in = g->in;
    g->zs.avail_in = 2;
    if (inflateInit2(&g->zs, 15 + 16) != Z_OK) {   /* 16: gzip wrapper only */
        free(g);
        err_set(err, TFM_ERR_NOMEM, "%s: cannot start gzip decoding", r->name);
        return false;
    }
    r->gz = g;
    return true;
}

/* A read that failed: a folder gets text_not_regular's words ("Is a
 * directory" read as if the file were broken). */
static void read_failed(const LineReader *r, TfmErr *err)
{
    const int e = errno ? errno : EIO;
    if (e == EISDIR) err_set(err, TFM_ERR_IO, "%s: %s", r->name, text_not_regular(r->name));
    else err_set(err, TFM_ERR_IO, "%s: read error: %s", r->name, strerror(e));
}

/* Refills g->out. Returns 1 with bytes there, 0 at the clean end of the
 * input, -1 with err set. Concatenated gzip members read as one stream. */
static int gz_fill(LineReader *r, TfmErr *err)
{
    GzSource *g = r->gz;
    for (;;) {
        if (g->zs.avail_in == 0 && !g->in_eof) {
            size_t n = fread(g->in, 1, sizeof g->in, r->f);
            if (n == 0) {
                if (ferror(r->f)) {
                    read_failed(r, err);
                    return -1;
                }
                g->in_eof = true;
            }
            g->zs.next_in = g->in;
            g->zs.avail_in = (uInt)n;
        }
        if (g->member_end) {
            if (g->zs.avail_in == 0 && g->in_eof) return 0;
            inflateReset(&g->zs);                      /* the next member */
            g->member_end = false;
        }
        if (g->zs.avail_in == 0 && g->in_eof) {
            err_set(err, TFM_ERR_FORMAT, "%s: gzip data ends early (truncated file?)", r->name);
            return -1;
        }
        g->zs.next_out = g->out;
        g->zs.avail_out = sizeof g->out;
        int ret = inflate(&g->zs, Z_NO_FLUSH);
        if (ret == Z_STREAM_END) g->member_end = true;
        else if (ret != Z_OK && ret != Z_BUF_ERROR) {
            err_set(err, ret == Z_MEM_ERROR ? TFM_ERR_NOMEM : TFM_ERR_FORMAT,
                    "%s: corrupt gzip data: %s", r->name, g->zs.msg ? g->zs.msg : "inflate failed");
            return -1;
        }
        g->pos = 0;
        g->len = sizeof g->out - g->zs.avail_out;
        if (g->len > 0) return 1;
    }
}

/* The first read looks at two bytes: the gzip magic switches to inflating. */
static bool sniff(LineReader *r, TfmErr *err)
{
    r->sniffed = 1;
    int c = getc_unlocked(r->f);
    if (c == EOF) return true;
    r->peek[r->n_peek++] = (unsigned char)c;
    if (c != 0x1f) return true;
    if ((c = getc_unlocked(r->f)) == EOF) return true;
    r->peek[r->n_peek++] = (unsigned char)c;
    if (c != 0x8b) return true;
    r->sniffed = 2;
    return gz_start(r, err);
}

/* The next byte, EOF at the end, or -2 with err set. */
static inline int next_byte(LineReader *r, TfmErr *err)
{
    if (r->gz) {
        GzSource *g = r->gz;
        if (g->pos == g->len) {
            int k = gz_fill(r, err);
            if (k <= 0) return k < 0 ? -2 : EOF;
        }
        return g->out[g->pos++];
    }
    if (r->i_peek < r->n_peek) return r->peek[r->i_peek++];
    return getc_unlocked(r->f);
}

int text_read_line(LineReader *r, char **line, size_t *len, TfmErr *err)
{
    char where[48];
    /* Byte by byte rather than getline, so that a NUL or an over-long line
     * is caught while reading, not after an unbounded line is in memory. */
    const long no = r->line_no + 1;
    size_t n = 0;
    int c;
    errno = 0;
    if (!r->sniffed && !sniff(r, err)) return -1;
    if (r->seeked) r->line_start = text_reader_tell(r);
    while ((c = next_byte(r, err)) >= 0 && c != '\n') {
        if (c == '\0' && r->check_utf8) {
            err_set(err, TFM_ERR_FORMAT, "%s: %s: contains a NUL byte at byte %zu",
                    r->name, line_name(r, no, where, sizeof where), n + 1);
            return -1;
        }
        /* one byte over the limit is allowed for a "\r" before "\n" */
        if (n > r->max_line) goto too_long;
        if (n + 2 > r->cap && !grow(r, n + 2, err)) return -1;
        r->buf[n++] = (char)c;
    }
    if (c == -2) return -1;
    if (c == EOF && !r->gz && ferror(r->f)) {
        read_failed(r, err);
        return -1;
    }
    if (c == EOF && n == 0) return 0;
    if (!grow(r, n + 1, err)) return -1;
    r->line_no = no;
    size_t m = n;
    /* "\r\n" ends a line; a "\r" at the end of input without "\n" is text */
    if (c == '\n' && m > 0 && r->buf[m - 1] == '\r') m--;
    if (m > r->max_line) goto too_long;
    r->buf[m] = '\0';
    if (r->check_utf8) {
        size_t bad;
        if (!text_utf8_valid(r->buf, m, &bad)) {
            err_set(err, TFM_ERR_FORMAT, "%s: %s: invalid UTF-8 at byte %zu",
                    r->name, line_name(r, r->line_no, where, sizeof where), bad + 1);
            return -1;
        }
    }
    *line = r->buf;
    *len = m;
    return 1;
too_long:
    err_set(err, TFM_ERR_FORMAT, "%s: %s: longer than %zu bytes", r->name,
            line_name(r, no, where, sizeof where), r->max_line);
    return -1;
}

int text_reader_is_gzip(LineReader *r, TfmErr *err)
{
    if (!r->sniffed && !sniff(r, err)) return -1;
    return r->sniffed == 2;
}

TfmStatus text_reader_seek_line(LineReader *r, uint64_t pos, TfmErr *err)
{
    if (!r->sniffed && !sniff(r, err)) return err->status;
    if (r->gz) return err_set(err, TFM_ERR_IO, "%s: cannot seek: gzip data", r->name);
    r->n_peek = r->i_peek = 0;
    if (fseeko(r->f, pos ? (off_t)pos - 1 : 0, SEEK_SET) != 0)
        return err_set(err, TFM_ERR_IO, "%s: cannot seek: %s", r->name, strerror(errno));
    if (pos) {      /* the rest of the line byte pos-1 is in ("\n": none) */
        int c;
        while ((c = getc_unlocked(r->f)) != EOF && c != '\n') {}
    }
    r->line_no = 0;
    r->seeked = true;
    return TFM_OK;
}

uint64_t text_reader_tell(LineReader *r)
{
    off_t o = ftello(r->f);
    return o < 0 ? 0 : (uint64_t)o - (uint64_t)(r->n_peek - r->i_peek);
}

void text_reader_close(LineReader *r)
{
    if (r->f && r->owns_file) fclose(r->f);
    if (r->gz) {
        inflateEnd(&r->gz->zs);
        free(r->gz);
    }
    free(r->buf);
    memset(r, 0, sizeof *r);
}

/* Length of the sequence at s when it is well formed, else 0. The ranges of
 * the second byte exclude overlongs (E0, F0), surrogates (ED) and > U+10FFFF (F4). */
static int utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if ((size_t)len > n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

bool text_utf8_valid(const char *s, size_t n, size_t *bad_offset)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path: 8 bytes at a time. */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, u + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        int len = utf8_seq_len(u + i, n - i);
        if (!len) {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        i += (size_t)len;
    }
    return true;
}

int text_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    int len = utf8_seq_len(s, n);
    switch (len) {
    case 1: *cp = s[0]; return 1;
    case 2: *cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F); return 2;
    case 3:
        *cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return 3;
    case 4:
        *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
              ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        return 4;
    default: return 0;
    }
}

size_t text_edit_distance(const char *a, size_t n, const char *b, size_t m)
{
    if (n > 63 || m > 63) return (n > m ? n : m);
    size_t row[64];
    for (size_t j = 0; j <= m; j++) row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

size_t text_typo_edits(size_t n) { return 1 + n / 4; }

void text_nearest_start(TextNearest *near, const char *word, size_t word_len, size_t max_edits)
{
    near->word = word;
    near->word_len = word_len;
    near->best_d = max_edits;
    near->best = NULL;
    near->best_len = 0;
}

void text_nearest_offer(TextNearest *near, const char *candidate, size_t len)
{
    size_t d = text_edit_distance(near->word, near->word_len, candidate, len);
    if (d <= near->best_d && (!near->best || d < near->best_d)) {
        near->best = candidate;
        near->best_len = len;
        near->best_d = d;
    }
}
