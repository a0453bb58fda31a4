/* batch: see batch.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/batch.h"

#include "base/arena.h"

/* A blank line's one translation. */
static const BatchResult empty = {.text = "", .len = 0, .tokens = 0, .logprob = 0.0f,
                                  .score = 0.0f};

/* Every fixed buffer of b: the one list that counts (a->base NULL) and carves them. */
static void batch_carve(LineBatch *b, Arena *a)
{
    const size_t n = (size_t)b->cap, h = (size_t)b->cap * (size_t)b->max_nbest;
    b->lines = arena_take(a, n, sizeof *b->lines);
    b->sents = arena_take(a, n, sizeof *b->sents);
    b->lens = arena_take(a, n, sizeof *b->lens);
    b->sent_ids = arena_take(a, n, sizeof *b->sent_ids);
    b->slot = arena_take(a, n, sizeof *b->slot);
    b->hyps = arena_take(a, h, sizeof *b->hyps);
    b->res = arena_take(a, h, sizeof *b->res);
    b->off = arena_take(a, h, sizeof *b->off);
}

TfmStatus line_batch_init(LineBatch *b, const Pipeline *p, int cap, int max_nbest, TfmErr *err)
{
    memset(b, 0, sizeof *b);
    b->p = p;
    b->cap = cap;
    b->max_nbest = max_nbest;
    Arena count = {0};
    batch_carve(b, &count);
    if (!(b->block = xcalloc(1, count.used + 64, err))) return TFM_ERR_NOMEM;
    Arena a = {.base = (char *)(((uintptr_t)b->block + 63) & ~(uintptr_t)63)};
    batch_carve(b, &a);
    return TFM_OK;
}

void line_batch_free(LineBatch *b)
{
    if (b->lines)
        for (int i = 0; i < b->cap; i++) free(b->lines[i].ids);
    free(b->block);
    free(b->text);
    free(b->one);
    memset(b, 0, sizeof *b);
}

TfmStatus line_batch_set(LineBatch *b, int i, const char *line, size_t len, TfmErr *err)
{
    BatchLine *l = &b->lines[i];
    l->skip = false;
    TfmStatus st = pipeline_encode(b->p, line, len, &l->ids, &l->n, &l->cap, &l->full, err);
    if (st != TFM_OK) line_batch_skip(b, i);
    return st;
}

void line_batch_skip(LineBatch *b, int i)
{
    b->lines[i].n = b->lines[i].full = 0;
    b->lines[i].skip = true;
}

/* Appends hypothesis h's text to b->text; its place goes to *off. */
static TfmStatus append_text(LineBatch *b, const Hypothesis *h, size_t *off, TfmErr *err)
{
    TfmStatus st = pipeline_text(b->p, h, &b->one, &b->one_len, &b->one_cap, err);
    if (st != TFM_OK) return st;
    void *text = b->text;
    if ((st = xgrow(&text, &b->text_cap, b->text_len + b->one_len + 1, 1, err)) != TFM_OK)
        return st;
    b->text = text;
    *off = b->text_len;
    memcpy(b->text + b->text_len, b->one, b->one_len + 1);
    b->text_len += b->one_len + 1;
    return TFM_OK;
}

TfmStatus line_batch_translate(LineBatch *b, int n, const DecodeOptions *opt, long first_id,
                               TfmErr *err)
{
    b->n = 0;
    b->src_tokens = b->out_tokens = 0;
    if (n < 0 || n > b->cap || opt->nbest < 1 || opt->nbest > b->max_nbest)
        return err_set(err, TFM_ERR_USAGE, "batch: %d lines of %d hypotheses (at most %d of %d)",
                       n, opt->nbest, b->cap, b->max_nbest);
    const int nbest = b->nbest = opt->nbest;
    int m = 0;
    for (int i = 0; i < n; i++) {
        b->slot[i] = -1;
        if (b->lines[i].n == 0) continue;
        b->slot[i] = m;
        b->sents[m] = b->lines[i].ids;
        b->lens[m] = b->lines[i].n;
        b->sent_ids[m] = first_id + i;
        b->src_tokens += b->lines[i].n;
        m++;
    }
    if (m > 0) {
        DecodeOptions o = *opt;
        if (o.sample) o.sentence_ids = b->sent_ids;
        TfmStatus st = lanes_translate(b->p->lanes, b->p->dec, b->sents, b->lens, m, &o,
                                       b->hyps, err);
        if (st != TFM_OK) return st;
    }
    /* the texts, then their addresses (b->text may move as it grows) */
    b->text_len = 0;
    for (int j = 0; j < m * nbest; j++) {
        const Hypothesis *h = &b->hyps[j];
        BatchResult *r = &b->res[j];
        r->text = NULL;
        if (!h->tokens && j % nbest > 0) continue;      /* fewer finished than asked */
        TfmStatus st = append_text(b, h, &b->off[j], err);
        if (st != TFM_OK) return st;
        r->text = b->text;              /* not NULL: set below */
        r->len = b->one_len;
        r->tokens = h->len;
        r->logprob = h->logprob;
        r->score = h->score;
        if (j % nbest == 0) b->out_tokens += h->len;
    }
    for (int j = 0; j < m * nbest; j++)
        if (b->res[j].text) b->res[j].text = b->text + b->off[j];
    b->n = n;
    return TFM_OK;
}

const BatchResult *line_batch_result(const LineBatch *b, int i, int h)
{
    if (i < 0 || i >= b->n || h < 0 || h >= b->nbest || b->lines[i].skip) return NULL;
    if (b->slot[i] < 0) return h == 0 ? &empty : NULL;
    const BatchResult *r = &b->res[(size_t)b->slot[i] * b->nbest + h];
    return r->text ? r : NULL;
}

bool line_batch_blank(const LineBatch *b, int i)
{
    return i >= 0 && i < b->n && !b->lines[i].skip && b->lines[i].n == 0;
}
