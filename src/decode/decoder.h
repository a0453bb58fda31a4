/* decoder: translation with the trained model — greedy and beam search over
 * an incremental decoder. The source is encoded once per batch; each
 * decoder layer caches its self-attention keys and values, and the
 * cross-attention keys and values of the encoder output are computed once,
 * so each output token costs one decoder step. Beams reorder the cache by
 * parent after each step. All buffers are allocated by decoder_init for the
 * largest batch: decoding allocates nothing per step.
 *
 * Beam search (beam k): each step takes the 2k best continuations of the
 * live hypotheses; an </s> among the first k finishes a hypothesis, the
 * best k others stay live. A sentence is done when k hypotheses finished,
 * or no live one can beat the n-th best finished (n = nbest), or the limit
 * max_len_a·src_len + max_len_b is reached. Scores are log-probabilities
 * divided by the length penalty ((5 + len) / 6)^alpha (Wu et al. 2016), len
 * counting </s>. With k = 1 this is greedy decoding. */
#ifndef TFM_DECODE_H
#define TFM_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "model/model.h"

typedef struct {
    int beam;           /* >= 1; 1 is greedy */
    float alpha;        /* length penalty exponent */
    float max_len_a;    /* output length limit: a · src_len + b */
    int max_len_b;
    int nbest;          /* hypotheses returned per sentence, 1..beam */
    int no_repeat_ngram;    /* > 0: no hypothesis repeats an n-gram of this size */
    /* sampling instead of search (beam must be 1): each token is drawn from
     * the model's distribution at temperature, cut to the top_k most likely
     * (0: all) and to the smallest set holding top_p of the mass (1: all) */
    bool sample;
    int top_k;
    float top_p, temperature;
    uint64_t seed;
    /* (n) or NULL: an id per sentence (e.g. its input line) that, with seed,
     * fixes its draws: samples do not depend on the batch or threads */
    const long *sentence_ids;
} DecodeOptions;

typedef struct {
    int *tokens;        /* output ids without <s> and </s>; owned by the decoder */
    int len;
    float score;        /* logprob / length penalty */
    float logprob;      /* sum of token log-probabilities, </s> included */
} Hypothesis;

typedef struct Decoder Decoder;

/* Prepares decoding of up to max_sents sentences at once with beams up to
 * max_beam (at most DECODE_MAX_BEAM; decoder_run refuses a larger beam,
 * as above max_beam). All its memory is one block, checked against what the
 * machine has before it is allocated. The decoder keeps packed copies of the model's weights: the
 * model must stay alive, and after its weights change (training) call
 * decoder_update_weights before decoding again. */
TfmStatus decoder_init(Decoder **out, const Model *m, int max_sents, int max_beam, TfmErr *err);
void decoder_update_weights(Decoder *d);

/* Translates n sentences: src (n, src_len) ids ending with </s>, padded with
 * <pad>. Writes n · opt->nbest hypotheses to out, best first per sentence;
 * their token arrays stay valid until the next decoder_run. */
TfmStatus decoder_run(Decoder *d, const int *src, int n, int src_len,
                      const DecodeOptions *opt, Hypothesis *out, TfmErr *err);

/* decoder_run over ragged sentences: sents[b] holds lens[b] token ids (no
 * </s>, lens[b] + 1 <= the model's max_len; lens[b] >= 0). The decoder adds
 * </s> and the padding itself. The way in for translation and validation. */
TfmStatus decoder_translate(Decoder *d, const int *const *sents, const int *lens, int n,
                            const DecodeOptions *opt, Hypothesis *out, TfmErr *err);

/* The scorer interface under decoder_run, for forced decoding and tests:
 * decoder_begin encodes n sentences (as decoder_run) for k rows each (row
 * b·k + j belongs to sentence b); decoder_step then feeds token prev[r] at
 * position t (0, 1, ... in order) to every row r and returns the
 * log-probabilities (n·k, V) of the next token, valid until the next call.
 * parent (n·k, or NULL) first moves row parent[r]'s cached history to row r,
 * as beam search does after choosing continuations. */
TfmStatus decoder_begin(Decoder *d, const int *src, int n, int src_len, int k, TfmErr *err);

/* Makes d an ensemble: members (other models' decoders, made with at least
 * d's max_sents and max_beam; same vocabulary size and positions; d does
 * not own them and they must outlive it) are stepped with d, and every
 * step's log-probabilities are the weighted mean over d and the members.
 * weights: n + 1 values, d's first, normalised here; NULL: equal. */
TfmStatus decoder_set_ensemble(Decoder *d, Decoder *const *members, int n,
                               const float *weights, TfmErr *err);

/* Forced decoding (score.c): out[b] = log P(tgts[b] + </s> | srcs[b]) under
 * d's model m, summed over the target tokens and </s>, for n sentences
 * (n <= the decoder's max_sents; each at most m's max_len - 1 tokens). */
TfmStatus decoder_score(Decoder *d, const Model *m, const int *const *srcs, const int *src_lens,
                        const int *const *tgts, const int *tgt_lens, int n, double *out,
                        TfmErr *err);
const float *decoder_step(Decoder *d, const int *prev, const int *parent, int t);

/* Makes decoder_run compute the output layer of each line over its
 * candidates alone (decode/shortlist.h: the specials, sl's frequent
 * pieces and the targets of each of its source pieces), normalized over
 * the whole output with the rest estimated (shortlist_rest.h), and the
 * beam's scan over those columns, so a line's translation does not depend
 * on its batch. Beam search (not sampling) is guarded
 * (shortlist_guard.h): a line whose best hypothesis would rather take a
 * piece outside its candidates gets the whole output from that step on,
 * so greedy gives the tokens it gives without a list. sl
 * (checked against the model's vocabulary by shortlist_load) must outlive
 * d; NULL turns it off. decoder_step and decoder_score never use it. An
 * ensemble's members get it too (call after decoder_set_ensemble): each
 * computes the same columns; the first model's rows guard them all.
 * Errors: a shortlist of another size, members that output other pieces
 * (model.output_vocab), TFM_ERR_NOMEM; decoder_run refuses a beam k when a
 * line could have fewer than 2k candidates. */
typedef struct Shortlist Shortlist;
TfmStatus decoder_set_shortlist(Decoder *d, const Shortlist *sl, TfmErr *err);
/* The lines the shortlist's guard gave the whole output, over d's life. */
long decoder_lines_guarded(const Decoder *d);

void decoder_free(Decoder *d);

#endif
