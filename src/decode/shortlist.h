/* shortlist: a lexical shortlist (`tfm shortlist`, `tfm translate
 * --shortlist`): for each source piece, the target pieces a translation of
 * it is likely to use, plus the most frequent target pieces, so that a
 * decoder step computes, normalizes and scans only those output columns.
 *
 * Built from a parallel corpus by co-occurrence counts: c(s, t) is the
 * number of sentence pairs whose source holds piece s and whose target
 * holds piece t (each pair counted once). Co-occurrence, not word
 * alignment: it needs no aligner (Marian's lexical shortlists come from
 * fast_align's p(t|s) tables, a tool and a pass tfm does not have), and
 * for a shortlist a false candidate costs only a column. Source piece s
 * keeps its top_k target pieces by c(s, t) (ties: the lower id) among
 * those not already in the frequent list, which every line gets anyway.
 *
 * The file (docs/shortlist.md) starts with a magic, a version and the
 * fingerprint of the vocabulary it was counted with; loading it for a
 * model of another vocabulary is refused. */
#ifndef TFM_DECODE_SHORTLIST_H
#define TFM_DECODE_SHORTLIST_H

#include <stdint.h>

#include "base/err.h"
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

/* Counts the corpus src/tgt (one sentence a line, plain or gzip, as many
 * lines each) encoded with bpe and fills sl (top_k >= 1, frequent >= 0).
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

/* ---- a shortlist in use: a batch's columns ----
 * Each sentence's candidates: the specials, the frequent pieces and the
 * targets of each of its source pieces, kept to those the model outputs.
 * Each sentence gets its own output product over its candidates alone (a
 * copy of those columns of the model's, made once per batch), so the
 * output layer costs a line its candidates whatever the batch (their
 * union at batch 64 is about 6 times one line's on Multi30k). The step's
 * log-probabilities are laid out over the batch's columns, the union in
 * the order of the pieces, which the search reads; each sentence keeps
 * the list of its own columns there. */
typedef struct {
    const Shortlist *sl;
    int V, n_out;           /* vocabulary; the model's output columns */
    const int *out_pos;     /* piece -> the model's output column, or -1 (NULL: the piece) */
    int max_sents;
    unsigned char *mark;    /* (V) scratch, zero between calls */
    int *tok;               /* (n_out) the batch's pieces, ascending */
    int *col;               /* (V) piece -> its column of the batch, or -1 */
    int *sel;               /* (n_out) column -> the model's output column */
    int *own;               /* (max_sents, n_out) each sentence's columns, ascending */
    int *own_len;           /* (max_sents) */
    PackedLinear *line;     /* (max_sents) each sentence's output product */
    int *line_cap;          /* (max_sents) the columns each has room for (grown) */
    const int **cur;        /* (max_sents) the current batch's sentences' lists, */
    int *cur_slot;          /*   and their index in the batch (line, own), */
    int *cur_len;           /*   compacted with it (shortlist_run_drop) */
    int width;              /* the batch's columns */
    int min_cands;          /* the fewest candidates a sentence can have that
                               are not <pad> or <s> */
} ShortlistRun;

/* Prepares sl's use for up to max_sents sentences with the output
 * projection out (the model's: n_out columns; out_pos as above). */
TfmStatus shortlist_run_init(ShortlistRun *r, const Shortlist *sl, const PackedLinear *out,
                             int n_out, const int *out_pos, int max_sents, TfmErr *err);
/* The columns of the batch src (n, S) (padded with TOK_PAD): r->tok,
 * r->col, r->width, the lists, and each sentence's product selected from
 * out (grown when a sentence has more candidates than its room: the only
 * allocation, TFM_ERR_NOMEM). */
TfmStatus shortlist_run_batch(ShortlistRun *r, const PackedLinear *out, const int *src, int n,
                              int S, TfmErr *err);
/* Removes the sentences done marks from the current lists (out of n). */
void shortlist_run_drop(ShortlistRun *r, const char *done, int n);
void shortlist_run_free(ShortlistRun *r);

#endif
