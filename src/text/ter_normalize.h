/* ter_normalize: sacreBLEU's TercomTokenizer options --ter-normalized and
 * --ter-asian-support (sacrebleu/tokenizers/tokenizer_ter.py, itself after
 * tercom's Normalizer.java), on one line already rstripped and lowercased
 * as TER wants it. */
#ifndef TFM_TER_NORMALIZE_H
#define TFM_TER_NORMALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Scratch reused line after line; zero-initialize, free with ter_norm_free. */
typedef struct {
    uint32_t *a, *b;            /* code points, two buffers in turn */
    size_t cap_a, cap_b, n;     /* n: code points of the current text (in a) */
    unsigned char *out;         /* the result, UTF-8 */
    size_t cap_out, out_len;
} TerNorm;

/* t->out = the line (valid UTF-8) after tercom's normalization when
 * `normalize` (entities, punctuation split off, possessives, periods and
 * commas apart from digits), then with `asian` CJK characters split apart
 * (only when normalizing, as in sacreBLEU), then with `asian_punct_remove`
 * the CJK and full-width punctuation removed (sacreBLEU does that for
 * --ter-no-punct with --ter-asian-support). */
TfmStatus ter_norm_apply(TerNorm *t, const unsigned char *line, size_t len, bool normalize,
                         bool asian, bool asian_punct_remove, TfmErr *err);
void ter_norm_free(TerNorm *t);

#endif
