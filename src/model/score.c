/* score: forced decoding. The model's log-probability of given target
 * sentences, through the scorer interface of decode.h (decoder_begin and
 * decoder_step), for rescoring n-best lists and filtering data. */
#include "model/decode.h"

#include <stdlib.h>
#include <string.h>

TfmStatus decoder_score(Decoder *d, const Model *m, const int *const *srcs, const int *src_lens,
                        const int *const *tgts, const int *tgt_lens, int n, double *out,
                        TfmErr *err)
{
    const int V = m->cfg.vocab_size, max_len = m->cfg.max_len;
    int S = 1, T = 0;
    for (int b = 0; b < n; b++) {
        if (src_lens[b] + 1 > S) S = src_lens[b] + 1;
        if (tgt_lens[b] + 1 > T) T = tgt_lens[b] + 1;     /* its tokens and </s> */
    }
    if (S > max_len || T > max_len)
        return err_set(err, TFM_ERR_FORMAT, "decoder: a sentence longer than %d tokens",
                       max_len - 1);
    int *src = calloc((size_t)n * S, sizeof *src), *prev = malloc(sizeof(int) * (size_t)n);
    TfmStatus st = TFM_OK;
    if (!src || !prev) {
        st = err_set(err, TFM_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int b = 0; b < n; b++) {                      /* <pad> is 0 */
        if (src_lens[b] > 0)                           /* an empty line may have no ids */
            memcpy(src + (size_t)b * S, srcs[b], sizeof(int) * (size_t)src_lens[b]);
        src[(size_t)b * S + src_lens[b]] = TOK_EOS;
        out[b] = 0;
    }
    if ((st = decoder_begin(d, src, n, S, 1, err)) != TFM_OK) goto done;
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < n; b++)
            prev[b] = t == 0 ? TOK_BOS : t <= tgt_lens[b] ? tgts[b][t - 1] : TOK_PAD;
        const float *lp = decoder_step(d, prev, NULL, t);
        for (int b = 0; b < n; b++) {
            if (t > tgt_lens[b]) continue;
            const int tok = t < tgt_lens[b] ? tgts[b][t] : TOK_EOS;
            out[b] += lp[(size_t)b * V + tok];
        }
    }
done:
    free(src);
    free(prev);
    return st;
}
