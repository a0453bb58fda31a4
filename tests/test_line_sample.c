/* Tests for line_sample: a corpus within the sample read whole, a larger
 * small one sampled by hash, a large one in stripes (about the sample's
 * size, from all over the files, no line twice, the same each time), gzip
 * read whole, and a bad line of a stripe named by its byte. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "text/line_sample.h"

typedef struct { int seen[2][20000]; long n; } Seen;

static TfmStatus note(void *ctx, int file, const char *line, size_t len, TfmErr *err)
{
    Seen *s = ctx;
    int k = atoi(line + 1);
    if (len < 2 || k < 0 || k >= 20000) return err_set(err, TFM_ERR_FORMAT, "bad line %s", line);
    s->seen[file][k]++;
    s->n++;
    return TFM_OK;
}

/* n lines "L0".."L{n-1}" */
static const char *lines_file(const char *name, int n)
{
    char *text = malloc((size_t)n * 8 + 1), *p = text;
    for (int i = 0; i < n; i++) p += sprintf(p, "L%d\n", i);
    const char *path = test_write_file(name, text);
    free(text);
    return path;
}

TEST(line_sample_small_corpora_read_through)
{
    char a[512], b[512];
    strcpy(a, lines_file("ls_a.txt", 300));
    strcpy(b, lines_file("ls_b.txt", 500));
    const char *paths[2] = {a, b};
    static Seen s;
    LineSampleStats st;
    TfmErr err = {0};
    memset(&s, 0, sizeof s);
    CHECK(line_sample_read(paths, 2, 800, note, &s, &st, &err) == TFM_OK);
    CHECK(st.read == 800 && st.total == 800 && !st.estimated);
    CHECK(s.seen[0][299] == 1 && s.seen[1][499] == 1);
    memset(&s, 0, sizeof s);
    CHECK(line_sample_read(paths, 2, 300, note, &s, &st, &err) == TFM_OK);   /* 800 <= 4 x 300 */
    CHECK(!st.estimated && st.total == 800 && st.read > 200 && st.read < 400 && st.read == s.n);
}

TEST(line_sample_large_corpora_in_stripes)
{
    char a[512], b[512];
    strcpy(a, lines_file("ls_big_a.txt", 20000));
    strcpy(b, lines_file("ls_big_b.txt", 10000));
    const char *paths[2] = {a, b};
    static Seen s, again;
    LineSampleStats st, st2;
    TfmErr err = {0};
    memset(&s, 0, sizeof s);
    CHECK(line_sample_read(paths, 2, 3000, note, &s, &st, &err) == TFM_OK);
    CHECK(st.estimated);
    CHECK(st.total == 30000);            /* small files: the probe counted them */
    CHECK(st.read == s.n && st.read >= 2900 && st.read <= 3000);
    /* the shares by size, from the whole of each file, no line twice */
    long first = 0, last = 0, twice = 0, in_b = 0;
    for (int k = 0; k < 20000; k++) {
        first += k < 2000 && s.seen[0][k];
        last += k >= 18000 && s.seen[0][k];
        twice += s.seen[0][k] > 1 || (k < 10000 && s.seen[1][k] > 1);
        in_b += k < 10000 && s.seen[1][k];
    }
    CHECK(first > 100 && last > 100 && twice == 0);
    CHECK(in_b > 900 && in_b < 1100);
    memset(&again, 0, sizeof again);
    CHECK(line_sample_read(paths, 2, 3000, note, &again, &st2, &err) == TFM_OK);
    CHECK(memcmp(&s, &again, sizeof s) == 0);
    /* every line: read through */
    memset(&s, 0, sizeof s);
    CHECK(line_sample_read(paths, 2, 0, note, &s, &st, &err) == TFM_OK);
    CHECK(st.read == 30000 && !st.estimated);
}

TEST(line_sample_names_a_bad_line_by_its_byte)
{
    char *text = malloc(20000 * 8 + 16), *p = text;
    for (int i = 0; i < 20000; i++) p += sprintf(p, i == 0 ? "L\xff%d\n" : "L%d\n", i);
    const char *path = test_write_file("ls_bad.txt", text);
    free(text);
    const char *paths[1] = {path};
    static Seen s;
    LineSampleStats st;
    TfmErr err = {0};
    memset(&s, 0, sizeof s);
    /* in stripes: the first starts at byte 0 */
    CHECK(line_sample_read(paths, 1, 1000, note, &s, &st, &err) == TFM_ERR_FORMAT);
    char want[600];
    snprintf(want, sizeof want, "%s: the line at byte 0: invalid UTF-8 at byte 2", path);
    CHECK_STR(err.msg, want);
    /* read through: by its number */
    CHECK(line_sample_read(paths, 1, 0, note, &s, &st, &err) == TFM_ERR_FORMAT);
    snprintf(want, sizeof want, "%s: line 1: invalid UTF-8 at byte 2", path);
    CHECK_STR(err.msg, want);
}

/* After a seek the reader names lines by the byte they start at, for every
 * reason a line is refused (a NUL here), and a reader that never sought by
 * their number. */
TEST(text_reader_after_a_seek_names_lines_by_byte)
{
    const char *path = test_write_file("ls_seek.txt", "one\ntwo\nthr\x01\nfo\0ur\n");
    /* test_write_file stops at the NUL: append the rest by hand */
    FILE *f = fopen(path, "ab");
    CHECK(f != NULL);
    fwrite("\0ur\n", 1, 4, f);
    fclose(f);
    LineReader r;
    TfmErr err = {0};
    CHECK(text_reader_open(&r, path, &err) == TFM_OK);
    CHECK(text_reader_seek_line(&r, 5, &err) == TFM_OK);    /* inside "two": from "thr" */
    char *line;
    size_t len;
    CHECK(text_read_line(&r, &line, &len, &err) == 1 && strcmp(line, "thr\x01") == 0);
    CHECK(text_read_line(&r, &line, &len, &err) == -1);
    char want[600];
    snprintf(want, sizeof want, "%s: the line at byte 13: contains a NUL byte at byte 3", path);
    CHECK_STR(err.msg, want);
    text_reader_close(&r);
    CHECK(text_reader_open(&r, path, &err) == TFM_OK);
    for (int i = 0; i < 3; i++) CHECK(text_read_line(&r, &line, &len, &err) == 1);
    CHECK(text_read_line(&r, &line, &len, &err) == -1);
    snprintf(want, sizeof want, "%s: line 4: contains a NUL byte at byte 3", path);
    CHECK_STR(err.msg, want);
    text_reader_close(&r);
}
