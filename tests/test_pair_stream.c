/* Tests for pair_stream: lists of files read one after another or mixed by
 * weight (upsampled, the epoch ending once each corpus ended), the same
 * order for the same seed and epoch, skipping, and files ending early. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/pair_stream.h"

static void write_lines(const char *path, const char *prefix, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (int i = 0; i < n; i++) fprintf(f, "%s%d\n", prefix, i);
    fclose(f);
}

typedef struct { char src[2][512], tgt[2][512]; const char *s[2], *t[2]; } Files;

/* corpus 0: 5 pairs "a0".."a4"; corpus 1: 2 pairs "b0", "b1" */
static void make_files(Files *f)
{
    const char *dir = test_tmpdir();
    for (int i = 0; i < 2; i++) {
        snprintf(f->src[i], sizeof f->src[i], "%s/ps%d.src", dir, i);
        snprintf(f->tgt[i], sizeof f->tgt[i], "%s/ps%d.tgt", dir, i);
        write_lines(f->src[i], i ? "b" : "a", i ? 2 : 5);
        write_lines(f->tgt[i], i ? "B" : "A", i ? 2 : 5);
        f->s[i] = f->src[i];
        f->t[i] = f->tgt[i];
    }
}

/* The epoch's source lines joined by spaces. */
static int read_epoch(const Files *f, const double *w, long epoch, long skip, char *out, size_t n)
{
    PairStream ps;
    TfmErr err = {0};
    int count = 0;
    out[0] = '\0';
    if (pair_stream_open(&ps, f->s, f->t, 2, w, 7, epoch, &err) != TFM_OK) return -1;
    if (skip && pair_stream_skip(&ps, skip, &err) < 0) return -1;
    PairLine p;
    int got;
    while ((got = pair_stream_next(&ps, &p, &err)) == 1 && count < 1000) {
        size_t o = strlen(out);
        snprintf(out + o, n - o, "%s%s", o ? " " : "", p.src);
        if (p.tgt[0] != (p.src[0] == 'a' ? 'A' : 'B') || strcmp(p.tgt + 1, p.src + 1) != 0) return -1;
        count++;
    }
    pair_stream_close(&ps);
    return got < 0 ? -1 : count;
}

TEST(pair_stream_reads_lists_in_order)
{
    Files f;
    make_files(&f);
    char buf[4096];
    CHECK_EQ_INT(read_epoch(&f, NULL, 0, 0, buf, sizeof buf), 7);
    CHECK_STR(buf, "a0 a1 a2 a3 a4 b0 b1");
    CHECK_EQ_INT(read_epoch(&f, NULL, 3, 4, buf, sizeof buf), 3);   /* the same every epoch */
    CHECK_STR(buf, "a4 b0 b1");
}

TEST(pair_stream_mixes_by_weight)
{
    Files f;
    make_files(&f);
    const double w[2] = {1, 4};
    char e0[4096], again[4096], e1[4096], tail[4096];
    int n0 = read_epoch(&f, w, 0, 0, e0, sizeof e0);
    CHECK(n0 >= 7);
    /* every line of both corpora, the small one upsampled */
    CHECK(strstr(e0, "a4") != NULL && strstr(e0, "b1") != NULL);
    int b = 0;
    for (const char *p = e0; (p = strstr(p, "b")); p++) b++;
    CHECK(b > 2);
    CHECK_EQ_INT(read_epoch(&f, w, 0, 0, again, sizeof again), n0);
    CHECK_STR(again, e0);                                   /* the same seed and epoch */
    read_epoch(&f, w, 1, 0, e1, sizeof e1);
    CHECK(strcmp(e0, e1) != 0);                             /* another epoch, another mix */
    CHECK_EQ_INT(read_epoch(&f, w, 0, 3, tail, sizeof tail), n0 - 3);
    const char *third = e0;
    for (int k = 0; k < 3; k++) third = strchr(third, ' ') + 1;
    CHECK_STR(tail, third);                                 /* skipping finds the place */
}

TEST(pair_stream_names_a_pair_ending_early)
{
    Files f;
    make_files(&f);
    write_lines(f.tgt[1], "B", 1);
    PairStream ps;
    TfmErr err = {0};
    CHECK_EQ_INT(pair_stream_open(&ps, f.s, f.t, 2, NULL, 7, 0, &err), TFM_OK);
    PairLine p;
    int got, n = 0;
    while ((got = pair_stream_next(&ps, &p, &err)) == 1) n++;
    CHECK_EQ_INT(got, -1);
    CHECK_EQ_INT(n, 6);
    char want[1200];
    snprintf(want, sizeof want, "%s has 2 lines, %s has 1 line", f.src[1], f.tgt[1]);
    CHECK_STR(err.msg, want);
    pair_stream_close(&ps);
}

/* Looking ahead for the end changes nothing of the order: asked before
 * every pair, the same pairs come, and the end is known after the last. */
TEST(pair_stream_at_end_looks_ahead)
{
    Files f;
    make_files(&f);
    const double w[2] = {2, 1};
    for (int weighted = 0; weighted < 2; weighted++) {
        char want[4096], got[4096] = "";
        CHECK(read_epoch(&f, weighted ? w : NULL, 0, 0, want, sizeof want) > 0);
        PairStream ps;
        TfmErr err = {0};
        CHECK(pair_stream_open(&ps, f.s, f.t, 2, weighted ? w : NULL, 7, 0, &err) == TFM_OK);
        PairLine p;
        long n = 0;
        while (pair_stream_at_end(&ps, &err) == 0) {
            CHECK(pair_stream_at_end(&ps, &err) == 0);      /* asking twice reads nothing more */
            CHECK(ps.pairs == n);
            CHECK(pair_stream_next(&ps, &p, &err) == 1);
            size_t o = strlen(got);
            snprintf(got + o, sizeof got - o, "%s%s", o ? " " : "", p.src);
            CHECK(p.tgt[0] == (p.src[0] == 'a' ? 'A' : 'B') && strcmp(p.tgt + 1, p.src + 1) == 0);
            n++;
        }
        CHECK(ps.ended);
        CHECK(pair_stream_next(&ps, &p, &err) == 0);
        CHECK_STR(got, want);
        pair_stream_close(&ps);
    }
}
