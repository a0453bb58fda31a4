/* search: the search over a step's log-probabilities, apart from
 * the model (step.h) and the ensemble (decoder_internal.h). Each step
 * of decoder_run (decoder.c) gives the log-probabilities of every row; the
 * logits processors edit a live row's (no-repeat-ngram, the special
 * tokens), then a strategy chooses each live sentence's continuations:
 * beam search (greedy is beam 1; beam.c) or sampling
 * (sample.c). Both record finished hypotheses here
 * (search.c), where the n-best lists are ranked.
 *
 * Rows: sentence b's are b·k .. b·k + k - 1 of the current (compacted)
 * batch; finished hypotheses are kept by the sentence's index in the
 * caller's batch (orig), up to 2k each. Private to src/decode/. */
#ifndef TFM_DECODE_SEARCH_H
#define TFM_DECODE_SEARCH_H

#include "base/arena.h"
#include "decode/decoder.h"

typedef struct { float score; int row, tok; } Cand;

/* A word's weight when sampling, and its id. */
typedef struct {
    float p;
    int id;
} SampItem;

/* The columns of a sentence's log-probabilities: width a row; column c
 * is token tok[c] (c when tok is NULL), and token v is column col[v]
 * (-1: never output, its log-probability is -inf). Without col, tok's
 * first run columns and the rest are each ascending (a shortlist's shared
 * pieces, then the sentence's own), found by search_column. */
typedef struct {
    int width;
    const int *tok, *col;
    int run;
} StepColumns;

/* Token v's column in c, or -1. */
int search_column(const StepColumns *c, int v);

typedef struct {
    int max_beam, T, V;                  /* buffers' bounds; T: tokens per row */
    StepColumns cols;                    /* the sentence being advanced's (decoder_run
                                            sets it) */
    int k;                               /* beam of the current run (<= max_beam) */
    float alpha;                         /* length penalty exponent */
    /* per row */
    float *score;                        /* log-probability so far */
    int *prev, *parent;                  /* next step's token; the row it continues */
    int *hist, *hist_next;               /* (rows, T) tokens so far; scratch */
    /* per sentence of the current batch */
    int *limit;                          /* output length limit */
    char *done;
    int *orig;                           /* index in the caller's batch (fin_* use it) */
    /* finished hypotheses: 2·max_beam slots per sentence of the caller's batch */
    int *fin_tok, *fin_len, *fin_count;
    float *fin_score, *fin_lp;
    /* the strategies' scratch */
    Cand *cand;                          /* beam: 2k candidates per sentence */
    SampItem *samp;                      /* sampling: (V) */
    float *top;                          /* (2·max_beam): ranking finished scores */
    Hypothesis *ranked;                  /* (2·max_beam): one sentence's n-best */
} Search;

/* Carves the search's buffers for max_sents sentences, beams up to
 * max_beam, rows of T tokens over a vocabulary of V (see base/arena.h). */
void search_carve(Search *s, Arena *a, int max_sents, int max_beam, int T, int V);

/* Starts a search of beam opt->beam over src (n, S) (as decoder_run takes
 * it): every sentence's length limit, one live row each. Returns the
 * largest limit. */
int search_start(Search *s, const int *src, int n, int S, const DecodeOptions *opt);
/* Moves the sentences that are not done down to 0.. in order, out of n;
 * returns how many remain. */
int search_drop_sentences(Search *s, int n);
/* After the step at position t: moves the histories of the next step's R
 * rows to their parents and appends each row's token. */
void search_reorder_history(Search *s, int R, int t);

/* Chooses sentence b's continuations after the step at position t from
 * the log-probabilities lp of its rows (k, cols.width) (b·k.. of the step's): sets
 * parent, prev and score of those rows for the next step, records the
 * hypotheses that end, and sets done[b] when the sentence is finished. */
typedef void SearchAdvance(Search *s, float *lp, int b, int t, const DecodeOptions *opt);
SearchAdvance search_beam_advance;      /* beam.c */
SearchAdvance search_sample_advance;    /* sample.c */

/* The logits processors, applied to every live row of a sentence that is
 * not done before the strategy chooses: --no-repeat-ngram (fairseq's
 * rule: a token that would complete an n-gram the row's history h[0..t)
 * already holds gets -inf), and <pad> and <s>, which are never output. */
void search_process_logits(const Search *s, float *lp, const int *h, int t,
                           const DecodeOptions *opt);

/* Records a finished hypothesis of sentence b: tokens (len; </s> not
 * included), its log-probability, and out_len the output length the
 * penalty counts (with </s> when it ended with one). */
void search_finish(Search *s, int b, const int *tokens, int len, float logprob, int out_len);
/* The length limit reached row r (of sentence b) with token tok, score
 * the row's log-probability with it: the row's history and tok end as a
 * hypothesis without </s>. scratch: a row of hist_next (T tokens). */
void search_finish_at_limit(Search *s, int b, int r, int tok, float score, int t, int *scratch);
/* Row r takes no part in the next step (its sentence or beam slot ended). */
void search_idle_row(Search *s, int r);
/* ((5 + len) / 6)^alpha (Wu et al. 2016); 1 when alpha is 0. */
float search_length_penalty(int len, float alpha);
/* The n-th best score of sentence b's finished hypotheses (at least n). */
float search_nth_finished(Search *s, int b, int n);
/* Writes sentence o's (of the caller's batch) nbest best hypotheses to out,
 * best first; missing ones have NULL tokens and score -inf. */
void search_best(Search *s, int o, int nbest, Hypothesis *out);

#endif
