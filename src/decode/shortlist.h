/* shortlist: a lexical shortlist (`tfm shortlist`, `tfm translate
 * --shortlist`): for each source piece, the target pieces a translation of
 * it is likely to use, plus the most frequent target pieces, so that a
 * decoder step computes, normalizes and scans only those output columns.
 *
 * Built from a parallel corpus by IBM Model 1 (shortlist_build.c): p(t |
 * s), the probability that source piece s translates as target piece t,
 * from a few rounds of EM over the sentence pairs. Source piece s keeps its
 * top_k target pieces by p(t | s) (ties: the lower id) among those not
 * already in the frequent list, which every line gets anyway; a piece that
 * never meets s in a sentence pair is never on s's list.
 *
 * The file (docs/shortlist.md) starts with a magic, a version and the
 * fingerprint of the vocabulary it was counted with; loading it for a
 * model of another vocabulary is refused. */
#ifndef TFM_DECODE_SHORTLIST_H
#define TFM_DECODE_SHORTLIST_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "decode/shortlist_guard.h"
#include "decode/shortlist_rest.h"
#include "nn/packed_linear.h"
#include "text/bpe.h"

#define SHORTLIST_MAGIC "TFMSLST1"
enum { SHORTLIST_VERSION = 1, SHORTLIST_MAX_K = 100000 };

typedef struct Shortlist {
    int vocab;              /* the vocabulary's size */
    uint64_t print;         /* shortlist_vocab_print of that vocabulary */
    int top_k, n_frequent;
    int *frequent;          /* (n_frequent) target pieces, most frequent first */
    int *start;             /* (vocab + 1): source piece s's targets are
                               list[start[s] .. start[s + 1]), best first */
    int *list;
} Shortlist;

/* The fingerprint of a vocabulary: FNV-1a 64 of its serialized form. */
uint64_t shortlist_vocab_print(const Bpe *bpe);

/* Reads the corpus src/tgt (one sentence a line, plain or gzip, as many
 * lines each), encodes it with bpe and fills sl (top_k >= 1, frequent >= 0).
 * The encoded corpus is held for the rounds: 4 bytes a piece.
 * Errors: the readers' (naming file and line), TFM_ERR_FORMAT "SRC has N
 * lines, TGT has M", "no sentence pairs", TFM_ERR_NOMEM. */
TfmStatus shortlist_build(Shortlist *sl, const Bpe *bpe, const char *src, const char *tgt,
                          int top_k, int frequent, TfmErr *err);

/* Writes sl to path atomically. Errors: TFM_ERR_IO naming path. */
TfmStatus shortlist_save(const Shortlist *sl, const char *path, TfmErr *err);

/* Reads path and checks it against bpe. Errors: TFM_ERR_IO (cannot open,
 * read), TFM_ERR_FORMAT "PATH: not a tfm shortlist", "PATH: shortlist
 * version V (this tfm reads 1)", "PATH: damaged shortlist (...)", "PATH:
 * a shortlist for another vocabulary (...)". */
TfmStatus shortlist_load(Shortlist *sl, const char *path, const Bpe *bpe, TfmErr *err);

void shortlist_free(Shortlist *sl);

/* ---- a shortlist in use: each sentence's columns ----
 * Each sentence's candidates: the shared pieces (the specials and the
 * frequent pieces, which every sentence gets) and the targets of each of
 * its source pieces, kept to those the model outputs. A sentence's
 * log-probabilities are one compact row per beam over its candidates
 * alone: the shared pieces, ascending, then its own others, ascending.
 * The shared columns come from one product over every row of the step
 * (made once: shared_p); a sentence's others from its own product (a copy
 * of those columns of the model's, made once per batch). So a line's step
 * costs its own candidates, never the union of the batch's (at batch 64
 * on Multi30k with --top-k 100 --frequent 1000 the union is 2.6 times a
 * line's), and nothing in it depends on the other lines. A sentence the
 * guard marks (shortlist_guard.h) has every output piece from then on:
 * the shared ones, then all the others ascending, from one product made
 * once (others_p). */
typedef struct {
    const Shortlist *sl;
    int V, n_out;           /* vocabulary; the model's output columns */
    const int *out_pos;     /* piece -> the model's output column, or -1 (NULL: the piece) */
    int max_sents;
    unsigned char *mark;    /* (V) scratch, zero between calls */
    int *sel;               /* (n_out) scratch: candidates' output columns */
    int n_shared;           /* the shared pieces: every sentence's first columns */
    PackedLinear shared_p;  /* their product */
    float *shared_y;        /* (max_sents · max_beam, n_shared) its output */
    int *own;               /* (max_sents, n_out) each sentence's pieces, as above */
    int *own_len;           /* (max_sents) */
    PackedLinear *line;     /* (max_sents) each sentence's product over its others */
    int *line_cap;          /* (max_sents) the columns each has room for (grown) */
    const int **cur;        /* (max_sents) the current batch's sentences' pieces, */
    int *cur_slot;          /*   their index in the batch (line, own), */
    int *cur_len;           /*   and how many, compacted with it (shortlist_run_drop) */
    int min_cands;          /* the fewest candidates a sentence can have that
                               are not <pad> or <s> */
    ShortlistRest rest;     /* the mass outside a sentence's candidates */
    float *rest_x;          /* (max_sents · max_beam, d) the step's rows' x·Ĝ */
    ShortlistGuard guard;   /* whose best row would rather take a piece outside */
    int *all;               /* (n_out) every output piece: the shared, then the others
                               ascending (a line given the whole output) */
    PackedLinear others_p;  /* the product over all[n_shared..n_out) */
    bool *whole;            /* (max_sents) by slot: the line has the whole output */
    long lines_guarded;     /* lines the guard gave the whole output, over r's life */
} ShortlistRun;

/* Prepares sl's use for up to max_sents sentences of max_beam rows with
 * the output projection out (the model's: n_out columns; out_pos as
 * above). */
TfmStatus shortlist_run_init(ShortlistRun *r, const Shortlist *sl, const PackedLinear *out,
                             int n_out, const int *out_pos, int max_sents, int max_beam,
                             TfmErr *err);
/* The candidates of the batch src (n, S) (padded with TOK_PAD): each
 * sentence's pieces and its product selected from out (grown when a
 * sentence has more candidates than its room: the only allocation,
 * TFM_ERR_NOMEM). */
TfmStatus shortlist_run_batch(ShortlistRun *r, const PackedLinear *out, const int *src, int n,
                              int S, TfmErr *err);
/* The step's log-probabilities y from its top states x (n sentences of k
 * rows, in each): sentence b's rows (k, cur_len[b]) at y + b·k·n_out, over
 * its candidates. The shared columns of every row come from one product;
 * each sentence's others from its own, the sentences split between the
 * threads (those with the whole output, whose product is one for all,
 * one after another, each product on every thread). A row is normalized
 * over the whole output, the mass outside its candidates estimated
 * (shortlist_rest.h); with every output piece a candidate it is exactly
 * the full log-softmax. Then the guard (shortlist_guard.h, the sentences
 * with guard.on): a sentence it marks gets the whole output from now on,
 * this step's rows again included. */
void shortlist_run_step(ShortlistRun *r, float *y, const float *x, int n, int k);
/* An ensemble member's r gives the whole output to the lines lead (the
 * first model's) gave it, before its own step. */
void shortlist_run_follow(ShortlistRun *r, const ShortlistRun *lead, int n);
/* Removes the sentences done marks from the current lists (out of n). */
void shortlist_run_drop(ShortlistRun *r, const char *done, int n);
void shortlist_run_free(ShortlistRun *r);

#endif
