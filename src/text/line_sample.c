/* line_sample: reading a reproducible sample of a corpus's lines. */
#include "text/line_sample.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/text.h"

enum { MAX_STRIPES = 1024, MIN_STRIPE_LINES = 8 };
#define PROBE_BYTES ((size_t)1 << 20)
/* Above this many times the sample (estimated), the corpus is sampled in stripes. */
#define STRIPES_ABOVE 4

/* Whether line `line` (from 1) of file f is in a sample that keeps a share
 * `keep` (out of 2^64) of the lines: a hash, so the same files give the same
 * sample. keep UINT64_MAX: every line. */
static bool sampled(int f, long line, uint64_t keep)
{
    if (keep == UINT64_MAX) return true;
    uint64_t z = ((uint64_t)f << 40 ^ (uint64_t)line) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;    /* splitmix64's finalizer */
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (z ^ (z >> 31)) < keep;
}

/* The lines of every file (read, not checked: the sample's reading checks those it reads). */
static TfmStatus count_lines(const char *const *paths, int n_paths, long *total, TfmErr *err)
{
    *total = 0;
    for (int f = 0; f < n_paths; f++) {
        LineReader r;
        if (text_reader_open(&r, paths[f], err)) { text_reader_close(&r); return err->status; }
        r.check_utf8 = false;
        char *line;
        size_t len;
        int got;
        while ((got = text_read_line(&r, &line, &len, err)) > 0) {}
        *total += r.line_no;
        text_reader_close(&r);
        if (got < 0) return err->status;
    }
    return TFM_OK;
}

/* Every file read through, fn on the lines the hash keeps. */
static TfmStatus read_whole(const char *const *paths, int n_paths, uint64_t keep, LineSampleFn fn,
                            void *ctx, long *read, TfmErr *err)
{
    for (int f = 0; f < n_paths; f++) {
        LineReader r;
        if (text_reader_open(&r, paths[f], err)) { text_reader_close(&r); return err->status; }
        char *line;
        size_t len;
        int got;
        while ((got = text_read_line(&r, &line, &len, err)) > 0) {
            if (!sampled(f, r.line_no, keep)) continue;
            ++*read;
            if (fn(ctx, f, line, len, err) != TFM_OK) { got = -1; break; }
        }
        text_reader_close(&r);
        if (got < 0) return err->status;
    }
    return TFM_OK;
}

/* A plain file's size and its lines estimated from its first PROBE_BYTES;
 * *plain false for gzip (or anything but a regular file). */
static TfmStatus probe(const char *path, bool *plain, uint64_t *size, double *lines, TfmErr *err)
{
    LineReader r;
    TfmStatus st = text_reader_open(&r, path, err);
    *plain = false;
    if (st == TFM_OK) {
        int gz = text_reader_is_gzip(&r, err);
        struct stat sb;
        if (gz < 0) st = err->status;
        else if (!gz && fstat(fileno(r.f), &sb) == 0 && S_ISREG(sb.st_mode)) {
            *plain = true;
            *size = (uint64_t)sb.st_size;
            char buf[1 << 16], last = '\n';
            size_t seen = 0, nl = 0, n;
            rewind(r.f);
            while (seen < PROBE_BYTES && (n = fread(buf, 1, sizeof buf, r.f)) > 0) {
                for (size_t i = 0; i < n; i++) nl += buf[i] == '\n';
                seen += n;
                last = buf[n - 1];
            }
            *lines = seen >= *size ? (double)nl + (last != '\n')
                                   : (double)*size * (double)(nl ? nl : 1) / (double)seen;
        }
    }
    text_reader_close(&r);
    return st;
}

/* Stripes of file f: `quota` lines from runs at the starts of its stripes. */
static TfmStatus read_stripes(const char *path, int f, uint64_t size, long quota, LineSampleFn fn,
                              void *ctx, long *read, TfmErr *err)
{
    long stripes = quota / MIN_STRIPE_LINES;
    if (stripes > MAX_STRIPES) stripes = MAX_STRIPES;
    if (stripes < 1) stripes = 1;
    LineReader r;
    TfmStatus st = text_reader_open(&r, path, err);
    for (long j = 0; j < stripes && st == TFM_OK; j++) {
        uint64_t end = size / (uint64_t)stripes * (uint64_t)(j + 1) +
                       size % (uint64_t)stripes * (uint64_t)(j + 1) / (uint64_t)stripes;
        long want = quota / stripes + (j < quota % stripes);
        if ((st = text_reader_seek_line(&r, size / (uint64_t)stripes * (uint64_t)j +
                                        size % (uint64_t)stripes * (uint64_t)j / (uint64_t)stripes,
                                        err)) != TFM_OK)
            break;
        for (long k = 0; k < want; k++) {
            uint64_t at = text_reader_tell(&r);
            if (at >= end && j + 1 < stripes) break;   /* the next stripe's line */
            char *line;
            size_t len;
            int got = text_read_line(&r, &line, &len, err);
            if (got < 0) {          /* the reader names the line by its byte */
                st = err->status;
                break;
            }
            if (got == 0) break;
            ++*read;
            if ((st = fn(ctx, f, line, len, err)) != TFM_OK) break;
        }
    }
    text_reader_close(&r);
    return st;
}

TfmStatus line_sample_read(const char *const *paths, int n_paths, long sample, LineSampleFn fn,
                           void *ctx, LineSampleStats *stats, TfmErr *err)
{
    memset(stats, 0, sizeof *stats);
    TfmStatus st;
    if (sample > 0) {
        bool all_plain = true;
        double est = 0;
        uint64_t bytes = 0, *size = xcalloc((size_t)n_paths + 1, sizeof *size, err);
        if (!size) return TFM_ERR_NOMEM;
        for (int f = 0; f < n_paths && all_plain; f++) {
            double lines = 0;
            bool plain;
            if ((st = probe(paths[f], &plain, &size[f], &lines, err)) != TFM_OK) {
                free(size);
                return st;
            }
            all_plain = plain;
            est += lines;
            bytes += plain ? size[f] : 0;
        }
        if (all_plain && est > STRIPES_ABOVE * (double)sample && bytes > 0) {
            stats->total = (long)(est + 0.5);
            stats->estimated = true;
            st = TFM_OK;
            for (int f = 0; f < n_paths && st == TFM_OK; f++) {
                long quota = (long)((double)sample * (double)size[f] / (double)bytes + 0.5);
                st = read_stripes(paths[f], f, size[f], quota, fn, ctx, &stats->read, err);
            }
            free(size);
            return st;
        }
        free(size);
    }
    uint64_t keep = UINT64_MAX;
    long total = -1;
    if (sample > 0) {
        if ((st = count_lines(paths, n_paths, &total, err)) != TFM_OK) return st;
        if (total > sample) keep = (uint64_t)((double)sample / (double)total * 0x1.0p64);
    }
    st = read_whole(paths, n_paths, keep, fn, ctx, &stats->read, err);
    stats->total = total < 0 ? stats->read : total;
    return st;
}
