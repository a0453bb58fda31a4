/* scorer: the scorer interface of decoder.h (decoder_begin,
 * decoder_step) over one model's step or an ensemble's, and the batch they
 * share. */
#include "decode/decoder_internal.h"

#include <stdlib.h>
#include <string.h>

void decoder_update_weights(Decoder *d)
{
    dec_step_update_weights(&d->step);
}

TfmStatus decoder_set_ensemble(Decoder *d, Decoder *const *members, int n,
                               const float *weights, TfmErr *err)
{
    const DecStep *s = &d->step;
    for (int i = 0; i < n; i++) {
        const DecStep *e = &members[i]->step;
        if (e->V != s->V || e->T != s->T || members[i]->max_sents < d->max_sents ||
            members[i]->max_beam < d->max_beam || members[i]->n_members)
            return err_set(err, TFM_ERR_USAGE, "decoder: ensemble member %d does not match "
                           "(vocabulary %d vs %d, positions %d vs %d)", i + 1, e->V, s->V,
                           e->T, s->T);
    }
    double sum = 0;
    for (int i = 0; i <= n; i++) sum += weights ? weights[i] : 1.0;
    if (!(sum > 0)) return err_set(err, TFM_ERR_USAGE, "decoder: ensemble weights sum to %g", sum);
    free(d->members);
    free(d->weights);
    d->members = xcalloc((size_t)n + 1, sizeof *d->members, err);
    d->weights = xcalloc((size_t)n + 1, sizeof *d->weights, err);
    if (!d->members || !d->weights) return TFM_ERR_NOMEM;
    for (int i = 0; i < n; i++) d->members[i] = members[i];
    for (int i = 0; i <= n; i++) d->weights[i] = (float)((weights ? weights[i] : 1.0) / sum);
    d->n_members = n;
    return TFM_OK;
}

TfmStatus decoder_begin(Decoder *d, const int *src, int n, int S, int k, TfmErr *err)
{
    if (n < 1 || n > d->max_sents || k < 1 || k > d->max_beam || S < 1 || S > d->step.S)
        return err_set(err, TFM_ERR_USAGE, "decoder: cannot take %d sentences of length %d "
                       "with beam %d", n, S, k);
    TfmStatus st = dec_step_encode(&d->step, src, n, S, err);
    if (st != TFM_OK) return st;
    for (int i = 0; i < d->n_members; i++)
        if ((st = decoder_begin(d->members[i], src, n, S, k, err)) != TFM_OK) return st;
    /* a copy: finished sentences leave it (decoder_drop_sentences) */
    memcpy(d->src_buf, src, sizeof(int) * (size_t)n * S);
    d->cur_n = n;
    d->cur_S = S;
    d->cur_k = k;
    d->cur_rows = n * k;
    return TFM_OK;
}

/* This model's step alone; its log-probabilities are dec_step_scores. */
static void step_own(Decoder *d, const int *prev, const int *parent, int t)
{
    DecStep *s = &d->step;
    if (parent && t > 0) dec_step_reorder(s, parent, d->cur_n * d->cur_k, t);
    dec_step_forward(s, prev, d->cur_n, d->cur_k, d->cur_S, d->src_buf, t);
}

StepColumns decoder_columns(const Decoder *d)
{
    const Model *m = d->step.m;
    if (d->n_members > 0 || !m->out_ids) return (StepColumns){d->step.V, NULL, NULL, d->step.V};
    return (StepColumns){d->step.Vo, m->out_ids, m->out_pos, d->step.Vo};
}

const float *decoder_step_columns(Decoder *d, const int *prev, const int *parent, int t)
{
    if (d->n_members > 0) return decoder_step(d, prev, parent, t);
    step_own(d, prev, parent, t);
    return dec_step_scores(&d->step);
}

/* Where span b of the step's log-probabilities starts in logits, and its
 * length (*n): with a shortlist, sentence b's block of its candidates;
 * without, one span of every row over the vocabulary. */
static size_t logits_span(const Decoder *d, int b, size_t *n)
{
    const ShortlistRun *sl = d->step.sl;
    if (!sl) {
        *n = (size_t)d->cur_n * d->cur_k * d->step.V;
        return 0;
    }
    *n = (size_t)d->cur_k * sl->cur_len[b];
    return (size_t)b * d->cur_k * sl->n_out;
}

const float *decoder_step(Decoder *d, const int *prev, const int *parent, int t)
{
    DecStep *s = &d->step;
    const int R = d->cur_n * d->cur_k;
    step_own(d, prev, parent, t);
    if (!s->sl) dec_step_spread(s, R);
    if (d->n_members > 0) {
        /* the weighted mean of the members' log-probabilities (Marian's
         * ensembles do the same; the mean is not renormalised); with a
         * shortlist, over each sentence's block of candidates, the same
         * for every model */
        const int spans = s->sl ? d->cur_n : 1;
        const float w0 = d->weights[0];
        for (int b = 0; b < spans; b++) {
            size_t nv;
            float *lp = s->logits + logits_span(d, b, &nv);
            /* a member of weight 0 has no say, not even its -inf for the
             * pieces it cannot write (model.output_vocab "target"): 0 ·
             * -inf is NaN */
            for (size_t i = 0; i < nv; i++) lp[i] = w0 == 0 ? 0 : w0 * lp[i];
        }
        for (int m = 0; m < d->n_members; m++) {
            if (s->sl) shortlist_run_follow(d->members[m]->step.sl, s->sl, d->cur_n);
            const float *e = decoder_step(d->members[m], prev, parent, t);
            const float w = d->weights[m + 1];
            if (w == 0) continue;
            for (int b = 0; b < spans; b++) {
                size_t nv;
                const size_t at = logits_span(d, b, &nv);
                for (size_t i = 0; i < nv; i++) s->logits[at + i] += w * e[at + i];
            }
        }
    }
    return s->logits;
}

int decoder_pad(Decoder *d, const int *const *sents, const int *lens, int n)
{
    int S = 1;
    for (int b = 0; b < n; b++)
        if (lens[b] + 1 > S) S = lens[b] + 1;
    memset(d->padded, 0, sizeof(int) * (size_t)n * S);      /* TOK_PAD */
    for (int b = 0; b < n; b++) {
        if (lens[b] > 0)                    /* an empty line may have no ids */
            memcpy(d->padded + (size_t)b * S, sents[b], sizeof(int) * (size_t)lens[b]);
        d->padded[(size_t)b * S + lens[b]] = TOK_EOS;
    }
    return S;
}

void decoder_drop_sentences(Decoder *d, const char *done)
{
    const int S = d->cur_S;
    int j = 0;
    for (int b = 0; b < d->cur_n; b++) {
        if (done[b]) continue;
        if (j != b) {
            memmove(d->src_buf + (size_t)j * S, d->src_buf + (size_t)b * S, sizeof(int) * S);
            dec_step_move_sentence(&d->step, j, b);
        }
        j++;
    }
    for (int m = 0; m < d->n_members; m++) decoder_drop_sentences(d->members[m], done);
    if (d->step.sl) shortlist_run_drop(d->sl, done, d->cur_n);
    d->cur_n = j;
}
