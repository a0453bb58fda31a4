/* lanes: a batch's sentences split between two decoders, one thread each,
 * instead of one decoder whose every product, attention and softmax the
 * threads share. A decoder step at batch 64 meets the threads at dozens of
 * points (each a wait for the slower one) and runs the beam's scan on one
 * of them while the other waits; two lanes never meet until the batch is
 * done. A sentence's translation does not depend on its batch or the
 * threads (decoder.h), so a split batch gives the bits one decoder gives.
 *
 * The second decoder packs its own copy of the weights (the packed
 * products keep per-decoder scratch), so lanes cost that memory again and
 * stream twice the weights: they are made only for one model (an ensemble
 * decodes as before) whose packed weights are at most LANES_MAX_PACKED
 * bytes (the Multi30k recipe's are 10 MB; at base size, 180 MB, two lanes
 * encoded 1.09x slower for 1.7x the memory), and a batch splits only from
 * LANES_MIN_SENTS sentences, below which a step is too small for the
 * products to keep two threads busy anyway. */
#ifndef TFM_DECODE_LANES_H
#define TFM_DECODE_LANES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "decode/decoder.h"
#include "decode/shortlist.h"

enum { LANES_MIN_SENTS = 16 };
#define LANES_MAX_PACKED ((size_t)64 << 20)

/* Whether m is small enough for lanes (its packed weights, as decoders
 * pack them in the precision on now, at most LANES_MAX_PACKED). */
bool lanes_fit(const Model *m);

typedef struct DecodeLanes DecodeLanes;

/* A second decoder for m (max_sents - max_sents / 2 sentences, max_beam),
 * with sl (or NULL) as its shortlist, and its thread. */
TfmStatus lanes_new(DecodeLanes **out, const Model *m, const Shortlist *sl, int max_sents,
                    int max_beam, TfmErr *err);

/* decoder_translate over d, the first lane, and the second: from
 * LANES_MIN_SENTS sentences on 2 threads, every other sentence goes to
 * the second lane, each lane on one thread; else d alone (on more
 * threads too: see lanes.c).
 * out as decoder_translate's; its token arrays live until the next call. */
TfmStatus lanes_translate(DecodeLanes *l, Decoder *d, const int *const *sents, const int *lens,
                          int n, const DecodeOptions *opt, Hypothesis *out, TfmErr *err);

/* decoder_lines_guarded of the second lane. */
long lanes_lines_guarded(const DecodeLanes *l);

void lanes_free(DecodeLanes *l);

#endif
