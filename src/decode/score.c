/* score: forced decoding. The model's log-probability of given target
 * sentences, through the scorer interface of decoder.h (decoder_begin and
 * decoder_step), for rescoring n-best lists and filtering data. */
#include "decode/decoder.h"
#include "decode/decoder_internal.h"

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
                       config_max_sentence(max_len));
    if (n < 1 || n > d->max_sents)
        return err_set(err, TFM_ERR_USAGE, "decoder: %d sentences (at most %d at once)", n,
                       d->max_sents);
    S = decoder_pad(d, srcs, src_lens, n);
    TfmStatus st = decoder_begin(d, d->padded, n, S, 1, err);
    if (st != TFM_OK) return st;
    int *prev = d->forced;
    for (int b = 0; b < n; b++) out[b] = 0;
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
    return TFM_OK;
}
