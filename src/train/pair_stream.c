/* pair_stream: reading the pairs of an epoch from lists of files. */
#include "train/pair_stream.h"

#include <stdlib.h>
#include <string.h>

/* Reads the rest of a file to learn its line count (after the other ended). */
static long count_lines(LineReader *r, TfmErr *err)
{
    char *line;
    size_t len;
    int got;
    while ((got = text_read_line(r, &line, &len, err)) == 1) {}
    return got < 0 ? -1 : r->line_no;
}

static void close_corpus(PairStream *ps, int i)
{
    if (!ps->open[i]) return;
    text_reader_close(&ps->rs[i]);
    text_reader_close(&ps->rt[i]);
    ps->open[i] = false;
}

static TfmStatus open_corpus(PairStream *ps, int i, TfmErr *err)
{
    close_corpus(ps, i);
    memset(&ps->rs[i], 0, sizeof ps->rs[i]);
    memset(&ps->rt[i], 0, sizeof ps->rt[i]);
    ps->open[i] = true;
    TfmStatus st = text_reader_open(&ps->rs[i], ps->src[i], err);
    if (st == TFM_OK) st = text_reader_open(&ps->rt[i], ps->tgt[i], err);
    return st;
}

TfmStatus pair_stream_open(PairStream *ps, const char *const *src, const char *const *tgt, int n,
                           const double *weights, uint64_t seed, long epoch, TfmErr *err)
{
    memset(ps, 0, sizeof *ps);
    ps->src = src;
    ps->tgt = tgt;
    ps->n = n;
    ps->weights = n > 1 ? weights : NULL;
    ps->rs = xcalloc((size_t)n, sizeof *ps->rs, err);
    ps->rt = xcalloc((size_t)n, sizeof *ps->rt, err);
    ps->open = xcalloc((size_t)n, sizeof *ps->open, err);
    ps->done = xcalloc((size_t)n, sizeof *ps->done, err);
    if (!ps->rs || !ps->rt || !ps->open || !ps->done) {
        pair_stream_close(ps);
        return TFM_ERR_NOMEM;
    }
    rng_seed(&ps->rng, seed ^ (0x5714ea3ULL + (uint64_t)epoch * 0x9e3779b97f4a7c15ULL));
    TfmStatus st = TFM_OK;
    for (int i = 0; i < (ps->weights ? n : 1) && st == TFM_OK; i++) st = open_corpus(ps, i, err);
    if (st != TFM_OK) pair_stream_close(ps);
    return st;
}

/* The corpus the next pair comes from: the current one, or one drawn by
 * weight among those that still have lines (-1: none). */
static int pick(PairStream *ps)
{
    if (!ps->weights) return ps->cur;
    double total = 0;
    for (int i = 0; i < ps->n; i++) total += ps->weights[i];
    double x = (double)(rng_u64(&ps->rng) >> 11) * 0x1.0p-53 * total;
    for (int i = 0; i < ps->n; i++) {
        if (x < ps->weights[i]) return i;
        x -= ps->weights[i];
    }
    return ps->n - 1;
}

/* Reads pair i's next lines: 1, 0 at the end of that corpus, -1 on error. */
static int read_pair(PairStream *ps, int i, PairLine *out, TfmErr *err)
{
    LineReader *rs = &ps->rs[i], *rt = &ps->rt[i];
    char *ls = NULL, *lt = NULL;
    size_t ns = 0, nt = 0;
    /* the two readers own separate buffers, so ls survives reading lt */
    int gs = text_read_line(rs, &ls, &ns, err);
    int gt = gs < 0 ? 0 : text_read_line(rt, &lt, &nt, err);
    if (gs < 0 || gt < 0) return -1;
    if (gs != gt) {
        long a = gs ? count_lines(rs, err) : rs->line_no;
        long b = gt ? count_lines(rt, err) : rt->line_no;
        if (a < 0 || b < 0) return -1;
        err_set(err, TFM_ERR_FORMAT, "%s has %ld line%s, %s has %ld line%s", ps->src[i], a,
                text_plural(a), ps->tgt[i], b, text_plural(b));
        return -1;
    }
    if (!gs) return 0;
    *out = (PairLine){ls, lt, ns, nt, rs, rt};
    return 1;
}

int pair_stream_next(PairStream *ps, PairLine *out, TfmErr *err)
{
    if (ps->held) {
        ps->held = false;
        ps->pairs++;
        *out = (PairLine){ps->held_src, ps->held_tgt, ps->held_src_len, ps->held_tgt_len,
                          ps->held_rs, ps->held_rt};
        return 1;
    }
    while (!ps->ended) {
        int i = pick(ps);
        int got = read_pair(ps, i, out, err);
        if (got < 0) return -1;
        if (got == 1) {
            ps->pairs++;
            return 1;
        }
        /* corpus i is at its end */
        bool empty = ps->rs[i].line_no == 0;
        ps->done[i] = true;
        if (!ps->weights) {
            close_corpus(ps, i);
            if (++ps->cur == ps->n) ps->ended = true;
            else if (open_corpus(ps, ps->cur, err) != TFM_OK) return -1;
            continue;
        }
        bool all = true;
        for (int k = 0; k < ps->n; k++) all = all && ps->done[k];
        if (all || empty) {
            /* an empty corpus would be drawn and restarted forever */
            ps->ended = true;
            if (empty && !all)
                return err_set(err, TFM_ERR_FORMAT, "%s: no lines (a weighted corpus must have "
                               "some)", ps->src[i]), -1;
            break;
        }
        if (open_corpus(ps, i, err) != TFM_OK) return -1;     /* upsampled: again */
    }
    return 0;
}

/* Copies a line into a held buffer (NUL-terminated, as the readers' are). */
static bool hold(char **buf, size_t *cap, const char *line, size_t len, TfmErr *err)
{
    if (xgrow((void **)buf, cap, len + 1, 1, err)) return false;
    memcpy(*buf, line, len);
    (*buf)[len] = '\0';
    return true;
}

int pair_stream_at_end(PairStream *ps, TfmErr *err)
{
    if (ps->held) return 0;
    PairLine p;
    int got = pair_stream_next(ps, &p, err);
    if (got <= 0) return got < 0 ? -1 : 1;
    ps->pairs--;    /* not returned yet */
    if (!hold(&ps->held_src, &ps->held_src_cap, p.src, p.src_len, err) ||
        !hold(&ps->held_tgt, &ps->held_tgt_cap, p.tgt, p.tgt_len, err))
        return -1;
    ps->held_src_len = p.src_len;
    ps->held_tgt_len = p.tgt_len;
    ps->held_rs = p.rs;
    ps->held_rt = p.rt;
    ps->held = true;
    return 0;
}

int pair_stream_skip(PairStream *ps, long n, TfmErr *err)
{
    PairLine p;
    for (long k = 0; k < n; k++) {
        int got = pair_stream_next(ps, &p, err);
        if (got <= 0) return got;
    }
    return 0;
}

void pair_stream_close(PairStream *ps)
{
    for (int i = 0; ps->open && i < ps->n; i++) close_corpus(ps, i);
    FREE_ALL(ps->rs, ps->rt, ps->open, ps->done, ps->held_src, ps->held_tgt);
    memset(ps, 0, sizeof *ps);
}
