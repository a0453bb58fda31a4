/* decoder: the Decoder's memory (decoder_init, decoder_free) and the search
 * loop (decoder_run, decoder_translate); see decoder.h, and
 * decoder_internal.h for how the parts fit. */
#include "decode/decoder.h"
#include "decode/decoder_internal.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sysmem.h"
#include "decode/shortlist.h"

/* Every buffer of d: the one list that both counts (a->base NULL) and
 * carves them. */
static void decoder_carve(Decoder *d, Arena *a, const Model *m)
{
    const size_t n = (size_t)d->max_sents, S = (size_t)m->cfg.max_len;
    dec_step_carve(&d->step, a, m, d->max_sents, d->max_beam);
    search_carve(&d->search, a, d->max_sents, d->max_beam, m->cfg.max_len, m->cfg.vocab_size);
    d->src_buf = arena_take(a, n * S, sizeof(int));
    d->padded = arena_take(a, n * S, sizeof(int));
    d->forced = arena_take(a, n, sizeof(int));
}

TfmStatus decoder_init(Decoder **out, const Model *m, int max_sents, int max_beam, TfmErr *err)
{
    *out = NULL;
    if (max_sents < 1 || max_beam < 1)
        return err_set(err, TFM_ERR_USAGE, "decoder needs at least one sentence and beam 1");
    if (max_beam > DECODE_MAX_BEAM)
        return err_set(err, TFM_ERR_USAGE, "decoder: beam %d is larger than %d", max_beam,
                       DECODE_MAX_BEAM);
    if (m->matrices_released)
        return err_set(err, TFM_ERR_USAGE, "decoder: the model's matrices were released after "
                       "packing (model_release_matrices)");
    if (max_sents > INT_MAX / max_beam)
        return err_set(err, TFM_ERR_USAGE, "decoder: %d sentences at once with beam %d are "
                       "too many rows", max_sents, max_beam);
    Decoder *d = xcalloc(1, sizeof *d, err);
    if (!d) return TFM_ERR_NOMEM;
    d->max_sents = max_sents;
    d->max_beam = max_beam;
    Arena count = {0};
    decoder_carve(d, &count, m);
    /* The caches are sized for the worst case: refuse a request this
     * machine cannot hold instead of being killed halfway through. */
    char what[96];
    snprintf(what, sizeof what, "decoding %d sentences at once with beam %d", max_sents, max_beam);
    TfmStatus st = sysmem_check(count.need + (double)dec_step_packed_bytes(m), what,
                                "lower --batch-size or --beam", err);
    if (st == TFM_OK && !(d->block = xcalloc(1, count.used + 64, err))) st = TFM_ERR_NOMEM;
    if (st != TFM_OK) {
        free(d);
        return st;
    }
    Arena a = {.base = (char *)(((uintptr_t)d->block + 63) & ~(uintptr_t)63)};
    decoder_carve(d, &a, m);
    if ((st = dec_step_pack(&d->step, err)) != TFM_OK) {
        decoder_free(d);
        return st;
    }
    *out = d;
    return TFM_OK;
}

void decoder_free(Decoder *d)
{
    if (!d) return;
    dec_step_free(&d->step);
    if (d->sl) shortlist_run_free(d->sl);
    FREE_ALL(d->sl, d->block, d->members, d->weights, d);
}

TfmStatus decoder_run(Decoder *d, const int *src, int n, int S, const DecodeOptions *opt,
                      Hypothesis *out, TfmErr *err)
{
    const int k = opt->beam;
    if (k < 1 || k > d->max_beam)       /* the search's buffers hold 2·max_beam a sentence */
        return err_set(err, TFM_ERR_USAGE, "decoder: beam %d must be in [1, %d]", k,
                       d->max_beam);
    if (opt->sample && (k != 1 || !(opt->temperature > 0) || !(opt->top_p > 0)))
        return err_set(err, TFM_ERR_USAGE, "decoder: sampling needs beam 1, temperature > 0 "
                       "and top_p > 0");
    if (opt->nbest < 1 || opt->nbest > k)
        return err_set(err, TFM_ERR_USAGE, "decoder: nbest %d must be in [1, beam %d]",
                       opt->nbest, k);
    /* fewer than 2k candidates would let the beam take -inf ones */
    if (d->sl && d->sl->min_cands < 2 * k)
        return err_set(err, TFM_ERR_USAGE, "decoder: the shortlist gives every line %d "
                       "candidates, too few for beam %d (at least %d: make it with a larger "
                       "--frequent)", d->sl->min_cands, k, 2 * k);
    TfmStatus st = decoder_begin(d, src, n, S, k, err);
    if (st != TFM_OK) return st;
    Search *s = &d->search;
    SearchAdvance *advance = opt->sample ? search_sample_advance : search_beam_advance;
    s->cols = decoder_columns(d);
    if (d->sl) {        /* this batch's candidates, the same for every model of an ensemble */
        if ((st = shortlist_run_batch(d->sl, &d->step.p_out, src, n, S, err)) != TFM_OK)
            return st;
        d->step.sl = d->sl;
        for (int i = 0; i < d->n_members; i++) {
            Decoder *e = d->members[i];
            if ((st = shortlist_run_batch(e->sl, &e->step.p_out, src, n, S, err)) != TFM_OK)
                return st;
            e->step.sl = e->sl;
        }
    }
    /* a row's log-probabilities: W of them, in blocks of k rows a sentence
     * (with a shortlist, each sentence's own W, its block n_out a row) */
    const StepColumns all = s->cols;
    const size_t block = (size_t)k * (d->sl ? d->sl->n_out : all.width);
    const int T = d->step.T, max_limit = search_start(s, src, n, S, opt);
    bool moved = false;         /* rows changed places since the last step */
    for (int t = 0; t < max_limit; t++) {
        if (d->sl)      /* sampling draws from the list as it is: nothing to guard */
            for (int b = 0; b < d->cur_n; b++) d->sl->guard.on[b] = !s->done[b] && !opt->sample;
        float *lp = (float *)decoder_step_columns(d, s->prev, moved ? s->parent : NULL, t);
        int active = 0;
        for (int b = 0; b < d->cur_n; b++) {
            if (s->done[b]) {       /* waiting for compaction: rows stay idle */
                for (int r = b * k; r < (b + 1) * k; r++) search_idle_row(s, r);
                continue;
            }
            s->cols = d->sl ? (StepColumns){d->sl->cur_len[b], d->sl->cur[b], NULL, d->sl->n_shared}
                            : all;
            float *blk = lp + b * block;
            for (int r = b * k; r < (b + 1) * k; r++)
                if (s->score[r] != -INFINITY)
                    search_process_logits(s, blk + (size_t)(r - b * k) * s->cols.width,
                                          s->hist + (size_t)r * T, t, opt);
            advance(s, blk, b, t, opt);
            active += !s->done[b];
        }
        if (!active) break;
        /* Drop finished sentences once a quarter of the batch is done, so
         * the copies of their cross-attention keys stay linear overall. */
        if (active * 4 <= d->cur_n * 3) {
            const int was = d->cur_n;
            decoder_drop_sentences(d, s->done);     /* reads done: before the search's */
            search_drop_sentences(s, was);
        }
        moved = k > 1 || d->cur_n * k != d->cur_rows;
        search_reorder_history(s, d->cur_n * k, t);
        d->cur_rows = d->cur_n * k;
    }
    d->step.sl = NULL;
    for (int i = 0; i < d->n_members; i++) d->members[i]->step.sl = NULL;
    s->cols = all;
    for (int b = 0; b < n; b++) search_best(s, b, opt->nbest, out + (size_t)b * opt->nbest);
    return TFM_OK;
}

/* Whether e outputs the same pieces as d (model.output_vocab). */
static bool same_outputs(const Decoder *d, const Decoder *e)
{
    const Model *a = d->step.m, *b = e->step.m;
    if (!a->out_ids || !b->out_ids) return !a->out_ids && !b->out_ids;
    return a->n_out == b->n_out && memcmp(a->out_ids, b->out_ids, sizeof(int) * a->n_out) == 0;
}

TfmStatus decoder_set_shortlist(Decoder *d, const Shortlist *sl, TfmErr *err)
{
    for (int i = 0; i < d->n_members; i++) {
        TfmStatus st;
        if (sl && !same_outputs(d, d->members[i]))
            return err_set(err, TFM_ERR_USAGE, "a shortlist needs the ensemble's models to "
                           "output the same pieces (model %d's model.output_vocab differs)",
                           i + 2);
        if ((st = decoder_set_shortlist(d->members[i], sl, err)) != TFM_OK) return st;
    }
    if (d->sl) shortlist_run_free(d->sl);
    free(d->sl);
    d->sl = NULL;
    if (!sl) return TFM_OK;
    if (sl->vocab != d->step.V)
        return err_set(err, TFM_ERR_FORMAT, "decoder: a shortlist of %d pieces for a model of "
                       "%d", sl->vocab, d->step.V);
    if (!(d->sl = xcalloc(1, sizeof *d->sl, err))) return TFM_ERR_NOMEM;
    TfmStatus st = shortlist_run_init(d->sl, sl, &d->step.p_out, d->step.Vo, d->step.m->out_pos,
                                      d->max_sents, d->max_beam, err);
    if (st == TFM_OK && d->sl->min_cands < 2 * d->max_beam)
        st = err_set(err, TFM_ERR_USAGE, "the shortlist gives every line %d candidates, too few "
                     "for beam %d (at least %d: make it with a larger --frequent)",
                     d->sl->min_cands, d->max_beam, 2 * d->max_beam);
    if (st != TFM_OK) {
        if (d->sl->mark) shortlist_run_free(d->sl);
        free(d->sl);
        d->sl = NULL;
    }
    return st;
}

long decoder_lines_guarded(const Decoder *d)
{
    return d->sl ? d->sl->lines_guarded : 0;
}

TfmStatus decoder_translate(Decoder *d, const int *const *sents, const int *lens, int n,
                            const DecodeOptions *opt, Hypothesis *out, TfmErr *err)
{
    if (n < 1 || n > d->max_sents)
        return err_set(err, TFM_ERR_USAGE, "decoder: %d sentences (at most %d at once)", n,
                       d->max_sents);
    for (int b = 0; b < n; b++)
        if (lens[b] < 0 || lens[b] + 1 > d->step.S)
            return err_set(err, TFM_ERR_FORMAT, "decoder: a sentence of %d tokens (at most %d)",
                           lens[b], d->step.S - 1);
    const int S = decoder_pad(d, sents, lens, n);
    return decoder_run(d, d->padded, n, S, opt, out, err);
}
