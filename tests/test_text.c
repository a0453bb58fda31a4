/* Tests of text: UTF-8 validation edge cases and the line reader (CRLF, NUL,
 * invalid UTF-8 with line numbers, long lines, the line limit, no final
 * newline, non-regular files). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "base/text.h"

#include <zlib.h>

/* Writes n bytes to a fresh temp file; returns its path (static buffer). */
static const char *temp_file(const char *data, size_t n)
{
    static char path[64];
    strcpy(path, "/tmp/tfm-text-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    if (write(fd, data, n) != (ssize_t)n) { close(fd); return NULL; }
    close(fd);
    return path;
}

/* Writes data to a fresh temp file, copies its path to name (temp_file's
 * buffer is reused) and opens a reader on it. */
static void open_temp_reader(LineReader *r, const char *data, size_t n, char name[64],
                             TfmErr *err)
{
    const char *path = temp_file(data, n);
    CHECK(path != NULL);
    strcpy(name, path ? path : "");
    CHECK_EQ_INT(text_reader_open(r, name, err), TFM_OK);
}

static bool valid(const char *s, size_t n, size_t *bad) { return text_utf8_valid(s, n, bad); }

TEST(text_utf8_accepts_well_formed)
{
    const char *ok[] = {
        "", "plain ascii", "Gr\xC3\xBC\xC3\x9F" "e",          /* Grüße */
        "\xE4\xB8\xAD\xE6\x96\x87",                            /* 中文 */
        "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB",        /* woman technologist ZWJ */
        "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF",                    /* U+FFFF, U+10FFFF */
        "\xED\x9F\xBF", "\xEE\x80\x80",                        /* around the surrogates */
        "\xC2\x80", "\xE0\xA0\x80", "\xF0\x90\x80\x80",        /* smallest non-overlong */
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        size_t bad = 99;
        CHECK(valid(ok[i], strlen(ok[i]), &bad));
    }
    CHECK(valid("a\0b", 3, NULL));      /* NUL is UTF-8; the reader rejects it separately */
}

TEST(text_utf8_rejects_ill_formed_with_offset)
{
    struct { const char *s; size_t bad; } cases[] = {
        {"\x80", 0},                       /* lone continuation */
        {"ab\xC0\xAF", 2},                 /* overlong '/' */
        {"\xC1\xBF", 0},                   /* overlong */
        {"x\xE0\x80\xAF", 1},              /* overlong 3-byte */
        {"\xF0\x80\x80\xAF", 0},           /* overlong 4-byte */
        {"ok\xED\xA0\x80", 2},             /* surrogate U+D800 */
        {"\xED\xBF\xBF", 0},               /* surrogate U+DFFF */
        {"\xF4\x90\x80\x80", 0},           /* U+110000 */
        {"\xF5\x80\x80\x80", 0},           /* lead byte beyond U+10FFFF */
        {"\xFF", 0}, {"\xFE", 0},
        {"abc\xE4\xB8", 3},                /* truncated at the end */
        {"\xE4\xB8x", 0},                  /* truncated mid-string */
        {"12345678\xC3", 8},               /* after the 8-byte ASCII fast path */
        {"\xF0\x9F\x98", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t bad = 99;
        CHECK(!valid(cases[i].s, strlen(cases[i].s), &bad));
        CHECK_EQ_INT(bad, cases[i].bad);
    }
}

TEST(text_utf8_decode_code_points)
{
    uint32_t cp = 0;
    CHECK_EQ_INT(text_utf8_decode((const unsigned char *)"A", 1, &cp), 1);
    CHECK_EQ_INT(cp, 'A');
    CHECK_EQ_INT(text_utf8_decode((const unsigned char *)"\xE2\x96\x81", 3, &cp), 3);
    CHECK_EQ_INT(cp, 0x2581);
    CHECK_EQ_INT(text_utf8_decode((const unsigned char *)"\xF0\x9F\x98\x80", 4, &cp), 4);
    CHECK_EQ_INT(cp, 0x1F600);
    CHECK_EQ_INT(text_utf8_decode((const unsigned char *)"\xE2\x96", 2, &cp), 0);
}

/* Reads data[0..n) through a LineReader and checks it gives exactly want[0..k). */
static void expect_lines(const char *data, size_t n, const char *const *want, int k)
{
    const char *path = temp_file(data, n);
    CHECK(path != NULL);
    LineReader r;
    TfmErr err = {0};
    CHECK_EQ_INT(text_reader_open(&r, path, &err), TFM_OK);
    char *line;
    size_t len;
    for (int i = 0; i < k; i++) {
        CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
        CHECK_STR(line, want[i]);
        CHECK_EQ_INT(len, strlen(want[i]));
        CHECK_EQ_INT(r.line_no, i + 1);
    }
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 0);
    text_reader_close(&r);
    unlink(path);
}

TEST(text_reader_lines_crlf_and_last_line)
{
    const char data[] = "one\r\ntwo\n\nthree \r\r\nlast";
    const char *const want[] = {"one", "two", "", "three \r", "last"};
    expect_lines(data, sizeof data - 1, want, 5);
}

/* Only "\r\n" loses its "\r": at the end of input with no "\n" it is text
 * (bpe decode(encode(x)) == x depends on it). */
TEST(text_reader_keeps_final_cr_without_newline)
{
    const char data[] = "a\r\nb\r";
    const char *const want[] = {"a", "b\r"};
    expect_lines(data, sizeof data - 1, want, 2);
}

TEST(text_reader_empty_file_has_no_lines)
{
    const char *path = temp_file("", 0);
    LineReader r;
    TfmErr err = {0};
    CHECK_EQ_INT(text_reader_open(&r, path, &err), TFM_OK);
    char *line;
    size_t len;
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 0);
    text_reader_close(&r);
    text_reader_close(&r);   /* twice is harmless */
    unlink(path);
}

TEST(text_reader_invalid_utf8_names_line_and_byte)
{
    const char data[] = "fine\nstill fine\nbad \xC3\x28 here\n";
    char name[64];
    LineReader r;
    TfmErr err = {0};
    open_temp_reader(&r, data, sizeof data - 1, name, &err);
    char *line;
    size_t len;
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), -1);
    CHECK_EQ_INT(err.status, TFM_ERR_FORMAT);
    char want[128];
    snprintf(want, sizeof want, "%s: line 3: invalid UTF-8 at byte 5", name);
    CHECK_STR(err.msg, want);
    text_reader_close(&r);
    unlink(name);
}

TEST(text_reader_nul_byte)
{
    const char data[] = "a\nb\0c\n";
    char name[64];
    LineReader r;
    TfmErr err = {0};
    open_temp_reader(&r, data, sizeof data - 1, name, &err);
    char *line;
    size_t len;
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), -1);
    char want[128];
    snprintf(want, sizeof want, "%s: line 2: contains a NUL byte at byte 2", name);
    CHECK_STR(err.msg, want);
    text_reader_close(&r);

    /* Unchecked mode returns the line as is. */
    CHECK_EQ_INT(text_reader_open(&r, name, &err), TFM_OK);
    r.check_utf8 = false;
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_EQ_INT(len, 3);
    text_reader_close(&r);
    unlink(name);
}

TEST(text_reader_long_line)
{
    size_t n = 3u << 20;     /* 3 MB, far beyond any fixed buffer */
    char *data = malloc(n + 1);
    CHECK(data != NULL);
    for (size_t i = 0; i < n; i++) data[i] = (char)('a' + i % 26);
    data[n] = '\n';
    const char *path = temp_file(data, n + 1);
    LineReader r;
    TfmErr err = {0};
    CHECK_EQ_INT(text_reader_open(&r, path, &err), TFM_OK);
    char *line;
    size_t len;
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_EQ_INT(len, n);
    CHECK(memcmp(line, data, n) == 0);
    text_reader_close(&r);
    unlink(path);
    free(data);
}

/* The length limit counts the line without its "\n" and "\r"; one byte more
 * is an error naming the line, and the reader stops there. */
TEST(text_reader_line_limit)
{
    const char data[] = "12345678\n12345678\r\n123456789\nnever read\n";
    char name[64];
    LineReader r;
    TfmErr err = {0};
    open_temp_reader(&r, data, sizeof data - 1, name, &err);
    r.max_line = 8;
    char *line;
    size_t len;
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_EQ_INT(len, 8);
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_STR(line, "12345678");
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), -1);
    CHECK_EQ_INT(err.status, TFM_ERR_FORMAT);
    char want[128];
    snprintf(want, sizeof want, "%s: line 3: longer than 8 bytes", name);
    CHECK_STR(err.msg, want);
    CHECK(r.cap <= 8 + 2);      /* the buffer never grew past the limit */
    text_reader_close(&r);
    unlink(name);
}

/* A NUL is refused as it is read: the rest of the line is not read (the next
 * read starts right after the NUL). */
TEST(text_reader_nul_stops_reading)
{
    const char data[] = "ab\0cd\n";
    char name[64];
    LineReader r;
    TfmErr err = {0};
    open_temp_reader(&r, data, sizeof data - 1, name, &err);
    char *line;
    size_t len;
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), -1);
    CHECK_EQ_INT(getc(r.f), 'c');
    text_reader_close(&r);
    unlink(name);
}

/* Only regular files: a FIFO is refused at once (no wait for a writer). */
TEST(text_reader_refuses_fifo)
{
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s/text.fifo", test_tmpdir());
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    LineReader r;
    TfmErr err = {0};
    CHECK_EQ_INT(text_reader_open(&r, fifo, &err), TFM_ERR_IO);
    char want[4200];
    snprintf(want, sizeof want, "%s: not a regular file", fifo);
    CHECK_STR(err.msg, want);
    text_reader_close(&r);
    unlink(fifo);
}

TEST(text_reader_missing_file)
{
    LineReader r;
    TfmErr err = {0};
    CHECK_EQ_INT(text_reader_open(&r, "/nonexistent/x.txt", &err), TFM_ERR_IO);
    CHECK_STR(err.msg, "/nonexistent/x.txt: cannot open: No such file or directory");
    text_reader_close(&r);
}

/* Gzip input: lines across the 64 KiB inflate buffers, two concatenated
 * members read as one stream, the same lines as the plain text; a truncated
 * copy and a corrupt one are errors that name the file. */
static char *gzip_bytes(const char *text, size_t n, size_t *out_n)
{
    uLong cap = compressBound((uLong)n) + 64;
    unsigned char *out = malloc(cap);
    z_stream zs = {0};
    deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = (unsigned char *)text;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    deflate(&zs, Z_FINISH);
    *out_n = zs.total_out;
    deflateEnd(&zs);
    return (char *)out;
}

TEST(text_reader_gzip)
{
    enum { LINES = 30000 };
    size_t cap = (size_t)LINES * 40, n = 0;
    char *text = malloc(cap);
    for (int i = 0; i < LINES; i++)
        n += (size_t)snprintf(text + n, cap - n, "line %d äöü %.*s\n", i, i % 23, "abcdefghijklmnopqrstuvw");
    size_t half = n / 2;
    while (text[half - 1] != '\n') half++;
    size_t n1, n2;
    char *g1 = gzip_bytes(text, half, &n1), *g2 = gzip_bytes(text + half, n - half, &n2);
    char *both = malloc(n1 + n2);
    memcpy(both, g1, n1);
    memcpy(both + n1, g2, n2);
    const char *gz = temp_file(both, n1 + n2);
    char gz_path[64];
    strcpy(gz_path, gz ? gz : "");
    LineReader r;
    TfmErr err = {0};
    CHECK_EQ_INT(text_reader_open(&r, gz_path, &err), TFM_OK);
    char *line;
    size_t len, at = 0;
    int count = 0, k;
    while ((k = text_read_line(&r, &line, &len, &err)) == 1) {
        if (at + len > n || memcmp(text + at, line, len) != 0 || text[at + len] != '\n') break;
        at += len + 1;
        count++;
    }
    CHECK_EQ_INT(k, 0);
    CHECK_EQ_INT(count, LINES);
    text_reader_close(&r);
    /* truncated inside the second member */
    const char *tr = temp_file(both, n1 + n2 / 2);
    char tr_path[64], want[128];
    strcpy(tr_path, tr ? tr : "");
    CHECK_EQ_INT(text_reader_open(&r, tr_path, &err), TFM_OK);
    while ((k = text_read_line(&r, &line, &len, &err)) == 1) {}
    CHECK_EQ_INT(k, -1);
    snprintf(want, sizeof want, "%s: gzip data ends early (truncated file?)", tr_path);
    CHECK_STR(err.msg, want);
    text_reader_close(&r);
    /* a flipped byte in the first member's CRC */
    both[n1 - 6] ^= 0x55;
    const char *bad = temp_file(both, n1 + n2);
    char bad_path[64];
    strcpy(bad_path, bad ? bad : "");
    CHECK_EQ_INT(text_reader_open(&r, bad_path, &err), TFM_OK);
    while ((k = text_read_line(&r, &line, &len, &err)) == 1) {}
    CHECK_EQ_INT(k, -1);
    snprintf(want, sizeof want, "%s: corrupt gzip data: ", bad_path);
    if (strncmp(err.msg, want, strlen(want)) != 0) test_fail(__FILE__, __LINE__, "got %s", err.msg);
    text_reader_close(&r);
    /* a plain file starting with 0x1f but not the magic is plain text */
    const char *p1 = temp_file("\x1f" "a\nb\n", 4);
    char p1_path[64];
    strcpy(p1_path, p1 ? p1 : "");
    CHECK_EQ_INT(text_reader_open(&r, p1_path, &err), TFM_OK);
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_STR(line, "\x1f" "a");
    CHECK_EQ_INT(text_read_line(&r, &line, &len, &err), 1);
    CHECK_STR(line, "b");
    text_reader_close(&r);
    unlink(gz_path);
    unlink(tr_path);
    unlink(bad_path);
    unlink(p1_path);
    free(text);
    free(g1);
    free(g2);
    free(both);
}
