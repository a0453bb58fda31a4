/* text: byte-level helpers for line-oriented UTF-8 text, shared by bpe, corpus,
 * bleu and the translate I/O. Reads lines of any length, validates UTF-8 and
 * rejects NUL bytes with "NAME: line N: ..." messages. It does not normalize
 * text (no Unicode normalization, no whitespace folding): bytes in = bytes out.
 *
 * Gzip: input that starts with the gzip magic (1f 8b) is inflated on the
 * fly (zlib), whatever its name and also on stdin; concatenated members are
 * read as one stream. Detection happens at the first read, so opening stdin
 * does not wait for input. Corrupt or truncated gzip data is an error.
 *
 * Line endings: a line ends at "\n"; one "\r" right before it (or before EOF)
 * is stripped too, so CRLF files read like LF files. A "\r" anywhere else is
 * kept as text. A last line without "\n" is still a line; an empty file has
 * no lines.
 *
 * Bounds: a line may hold at most TEXT_MAX_LINE bytes (64 MiB, "\n" and "\r"
 * not counted), and NUL bytes are refused as soon as they are read, so that
 * endless input without a newline (/dev/zero, a runaway pipe) stops with an
 * error instead of filling memory. */
#ifndef TFM_TEXT_H
#define TFM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

/* The longest line accepted, in bytes: generous for any sentence (and for
 * the pieces of a 10 MB line, which bpe encode spells out ~3x longer), yet it
 * bounds the memory one line can take. */
#define TEXT_MAX_LINE ((size_t)64 << 20)

typedef struct GzSource GzSource;   /* text.c: inflate state */

typedef struct {
    FILE *f;
    const char *name;   /* for messages: the path, or "stdin" for "-" */
    long line_no;       /* 1-based number of the line last returned */
    /* After text_reader_seek_line the line numbers count from the seek, so
     * messages name a line by the byte it starts at ("the line at byte B"):
     * line_start is that byte, of the line being read. */
    bool seeked;
    uint64_t line_start;
    char *buf;          /* getline buffer, reused from line to line */
    size_t cap;
    bool owns_file;     /* false for stdin or text_reader_from_file */
    bool check_utf8;    /* true after open: reject invalid UTF-8 and NUL bytes */
    size_t max_line;    /* TEXT_MAX_LINE after open; tests may lower it */
    int sniffed;        /* 0 before the first read; then 1 plain, 2 gzip */
    unsigned char peek[2];
    int n_peek, i_peek; /* bytes read to sniff, handed back to a plain read */
    GzSource *gz;       /* inflate state when the input is gzip */
} LineReader;

/* Opens path for reading ("-" means stdin). On failure returns TFM_ERR_IO
 * with "PATH: cannot open: REASON", or "PATH: not a regular file" for a
 * FIFO or device, "PATH: is a folder, not a file" for a folder (stdin may
 * be a pipe: "-" is an explicit choice). The reader keeps a pointer to
 * path, which must outlive it. Close with text_reader_close (also after a
 * failed open). */
TfmStatus text_reader_open(LineReader *r, const char *path, TfmErr *err);

/* Why path, which exists, is not a regular file: "is a folder, not a file"
 * or "not a regular file" (a FIFO, a device). */
const char *text_not_regular(const char *path);

/* Opens path (not "-") for reading when it is a regular file, without
 * blocking on a FIFO. Returns NULL with TFM_ERR_IO "PATH: cannot open:
 * REASON" or "PATH: " and text_not_regular's words. Shared by every reader
 * of a named input file (text, vocabularies, models), so none hangs on a
 * FIFO or reads a device forever. */
FILE *text_open_regular(const char *path, TfmErr *err);

/* The one "open without waiting on a FIFO" (O_NONBLOCK, which changes
 * nothing for a regular file): a read-only fd of path, or -1 with errno
 * set; *regular says whether it is a regular file. Under text_open_regular,
 * the config's check of its data files and atomic_file's look at a target. */
int text_open_nonblocking(const char *path, bool *regular);

/* The whole regular file at path (opened as text_open_regular opens it) in
 * a malloc'd buffer, NUL-terminated after its *len bytes. A file over max
 * bytes is refused before it is read: TFM_ERR_FORMAT "PATH: file too large
 * (WHAT is at most MAX bytes)". vet (may be NULL) sees the open file and its
 * size before anything is allocated and may refuse it (model files check
 * their layout so). Errors as text_open_regular's, TFM_ERR_IO "PATH: read
 * failed", TFM_ERR_NOMEM "PATH: out of memory ...". */
TfmStatus text_read_file(const char *path, size_t max, const char *what,
                         TfmStatus (*vet)(FILE *f, uint64_t size, const char *path, TfmErr *err),
                         char **out, size_t *len, TfmErr *err);

/* Wraps an already open stream (not closed by text_reader_close). */
void text_reader_from_file(LineReader *r, FILE *f, const char *name);

/* Reads the next line. Returns 1 with *line and *len set (the line without its
 * "\n" or "\r\n", NUL-terminated, valid until the next call), 0 at
 * end of input, or -1 with err set:
 *   TFM_ERR_FORMAT "NAME: line N: invalid UTF-8 at byte B" (B counts from 1)
 *   TFM_ERR_FORMAT "NAME: line N: contains a NUL byte at byte B"
 *   TFM_ERR_FORMAT "NAME: line N: longer than MAX bytes" (MAX = r->max_line)
 *   TFM_ERR_IO     "NAME: read error: REASON"
 *   TFM_ERR_FORMAT "NAME: corrupt gzip data: REASON" / "NAME: gzip data ends early"
 *   TFM_ERR_NOMEM  when the line does not fit in memory.
 * With r->check_utf8 false, lines are returned unchecked (NUL bytes too), but
 * the length limit holds. */
int text_read_line(LineReader *r, char **line, size_t *len, TfmErr *err);

/* Closes the file (unless stdin or borrowed) and frees the buffer. Safe on a
 * zeroed or already closed reader. */
void text_reader_close(LineReader *r);

/* True when s[0..n) is well-formed UTF-8: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequences. NUL bytes
 * are valid UTF-8 here (check them with memchr). On false, *bad_offset (if
 * not NULL) is the 0-based offset of the first byte of the bad sequence. */
bool text_utf8_valid(const char *s, size_t n, size_t *bad_offset);

/* Decodes one code point at s (n > 0 bytes available): returns its length in
 * bytes (1..4) and stores it in *cp, or returns 0 (cp untouched) when the
 * bytes at s do not start a well-formed sequence. */
int text_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Levenshtein distance between a[0..n) and b[0..m) (bytes), for "did you
 * mean" hints; strings over 63 bytes get the longer length. */
size_t text_edit_distance(const char *a, size_t n, const char *b, size_t m);

/* "Did you mean": the closest of the candidates offered to a mistyped word,
 * if any is within max_edits. Start, offer each candidate (len bytes of it),
 * then read best (NULL when none was close) and best_len. Every hint of tfm
 * goes through here. */
typedef struct {
    const char *word;
    size_t word_len, best_d, best_len;
    const char *best;
} TextNearest;
void text_nearest_start(TextNearest *near, const char *word, size_t word_len, size_t max_edits);
/* The edits that make a near miss of a word of n bytes: a typo or two
 * (1 + n/4), not a new word. */
size_t text_typo_edits(size_t n);
void text_nearest_offer(TextNearest *near, const char *candidate, size_t len);

/* Whether the reader's input is gzip (looking at its first bytes if no
 * line was read yet): 1, 0, or -1 with err set. */
int text_reader_is_gzip(LineReader *r, TfmErr *err);

/* Moves a reader of a plain (not gzip) file to the first line that starts
 * at byte pos or after it (pos 0: the first line). Its line numbers then
 * count from there. TFM_ERR_IO "NAME: cannot seek: REASON". */
TfmStatus text_reader_seek_line(LineReader *r, uint64_t pos, TfmErr *err);

/* The byte offset of a plain file's reader: where its next line starts. */
uint64_t text_reader_tell(LineReader *r);

/* The plural ending of a count: "%ld line%s", n, text_plural(n). */
static inline const char *text_plural(long n) { return n == 1 ? "" : "s"; }

#endif
