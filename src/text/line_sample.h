/* line_sample: a sample of about `sample` lines of a list of text files,
 * the same for the same files (for BPE learning, data.bpe_sample, and the
 * output pieces of model.output_vocab "target").
 *
 * Small corpora (at most 4x the sample, or any gzipped file) are read
 * whole: every line when they hold no more than the sample, else each line
 * is in the sample or not by a hash of its file's index and its number
 * (the files are read once before, to count their lines). A larger corpus
 * of plain files is not read whole: each file gets a share of the sample
 * by its size and is cut into up to 1024 stripes of equal bytes; a run of
 * lines is read from the start of every stripe. So the time it takes
 * depends on the sample, not on the corpus. */
#ifndef TFM_LINE_SAMPLE_H
#define TFM_LINE_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

/* Called with each line of the sample, from file `file` (its index). */
typedef TfmStatus (*LineSampleFn)(void *ctx, int file, const char *line, size_t len, TfmErr *err);

typedef struct {
    long read;          /* lines passed to fn */
    long total;         /* lines in the files; estimated (from their sizes) when */
    bool estimated;     /* the files were not read whole */
} LineSampleStats;

/* Reads the sample of paths' lines (sample <= 0: every line), passing each
 * to fn; stops at fn's first error. Errors as text_read_line's (a line of a
 * stripe is named by the byte it starts at) and fn's. */
TfmStatus line_sample_read(const char *const *paths, int n_paths, long sample, LineSampleFn fn,
                           void *ctx, LineSampleStats *stats, TfmErr *err);

#endif
