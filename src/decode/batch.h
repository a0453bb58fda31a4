/* batch: the one way from a batch of raw lines to their translations, which
 * `tfm translate` and `tfm serve` both take, so that they differ only in
 * how they format what comes out. A line is encoded as it comes
 * (line_batch_set: cut to the model's positions, a blank line gives no
 * pieces); line_batch_translate decodes the lines that have pieces together
 * and turns their hypotheses back into text, each line's n-best list in its
 * own place whatever the others held. The arrays are one block made by
 * line_batch_init; the lines' pieces and the texts grow and are kept:
 * nothing is allocated per batch once they have found their size. */
#ifndef TFM_DECODE_BATCH_H
#define TFM_DECODE_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "decode/pipeline.h"

/* One line of the batch. */
typedef struct {
    int *ids;       /* its pieces, cut to the pipeline's max_src */
    int n, cap;     /* n 0: a blank line (or one that is skipped) */
    int full;       /* its pieces before the cut */
    bool skip;      /* no result: line_batch_skip, or its encoding failed */
} BatchLine;

/* One hypothesis of a line, as text. */
typedef struct {
    const char *text;   /* valid UTF-8 on one line, NUL-terminated (pipeline_text) */
    size_t len;
    int tokens;         /* its pieces, without </s> */
    float logprob;      /* summed, </s> included */
    float score;        /* logprob / length penalty: what ranks the n-best list */
} BatchResult;

typedef struct {
    const Pipeline *p;
    int cap, max_nbest;     /* lines at most (the decoder's max_sents); hypotheses a line */
    BatchLine *lines;       /* (cap) */
    /* after line_batch_translate */
    int n, nbest;           /* its lines and opt->nbest */
    long long src_tokens;   /* the pieces of the lines decoded */
    long long out_tokens;   /* the pieces of their best hypotheses */
    /* line_batch_translate's */
    const int **sents;      /* (cap) the lines decoded, in order */
    int *lens;              /* (cap) */
    long *sent_ids;         /* (cap) their numbers, first_id + line (sampling seeds) */
    int *slot;              /* (cap) line -> its place among the decoded, or -1 */
    Hypothesis *hyps;       /* (cap · max_nbest) */
    BatchResult *res;       /* (cap · max_nbest); text NULL: none (fewer finished) */
    size_t *off;            /* (cap · max_nbest) each result's text in text */
    char *text;             /* the texts, each NUL-terminated */
    size_t text_len, text_cap;
    char *one;              /* pipeline_text's buffer for one hypothesis */
    size_t one_len, one_cap;
    void *block;            /* the arrays above are carved from it */
} LineBatch;

/* Room for cap lines of up to max_nbest hypotheses each, over p (whose
 * decoder takes cap sentences at once). */
TfmStatus line_batch_init(LineBatch *b, const Pipeline *p, int cap, int max_nbest, TfmErr *err);
void line_batch_free(LineBatch *b);

/* Line i (< cap) of the next batch: raw text of len bytes, encoded by
 * pipeline_encode. On an error the line is skipped. */
TfmStatus line_batch_set(LineBatch *b, int i, const char *line, size_t len, TfmErr *err);
/* Line i of the next batch has no result (its request failed already). */
void line_batch_skip(LineBatch *b, int i);

/* Translates lines 0..n-1 (each set or skipped since the last batch) with
 * opt (opt->nbest <= max_nbest). Sampling seeds line i's draws with
 * first_id + i (its line number in the input), so that they do not depend
 * on the batch. An error leaves no results. */
TfmStatus line_batch_translate(LineBatch *b, int n, const DecodeOptions *opt, long first_id,
                               TfmErr *err);

/* Line i's h-th hypothesis (h < opt->nbest), best first, or NULL: fewer
 * finished than asked, or the line was skipped. A blank line has one, the
 * empty translation (logprob and score 0). */
const BatchResult *line_batch_result(const LineBatch *b, int i, int h);
/* Line i had nothing to translate (blank), as opposed to being skipped. */
bool line_batch_blank(const LineBatch *b, int i);

#endif
