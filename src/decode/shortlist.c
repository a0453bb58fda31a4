/* shortlist: the file and each sentence's columns (see shortlist.h; the file's
 * layout is docs/shortlist.md; building it is shortlist_build.c). */
#include "decode/shortlist.h"

#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/fnv.h"
#include "base/text.h"
#include "nn/layers.h"

uint64_t shortlist_vocab_print(const Bpe *bpe)
{
    size_t len;
    char *v = bpe_serialize(bpe, &len);
    if (!v) return 0;
    const uint64_t h = fnv1a64(FNV1A64_START, v, len);
    free(v);
    return h;
}

void shortlist_free(Shortlist *sl)
{
    free(sl->frequent);
    free(sl->start);
    free(sl->list);
    memset(sl, 0, sizeof *sl);
}

/* ---- the file ----
 * Little-endian: magic (8 bytes), u32 version, u32 vocabulary size, u64
 * its fingerprint, u32 top_k, u32 frequent count, u32 list length, the
 * frequent pieces (u32 each), each source piece's list length (u32, V),
 * the lists (u32 each), u64 FNV-1a of every byte before it. */

enum { HEADER_BYTES = 8 + 4 + 4 + 8 + 4 + 4 + 4 };

static unsigned char *put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
    return p + 4;
}

static unsigned char *put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
    return p + 8;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

TfmStatus shortlist_save(const Shortlist *sl, const char *path, TfmErr *err)
{
    const size_t V = (size_t)sl->vocab, L = (size_t)sl->start[sl->vocab];
    const size_t size = HEADER_BYTES + 4 * ((size_t)sl->n_frequent + V + L) + 8;
    unsigned char *buf = xmalloc(size, err), *p = buf;
    if (!buf) return TFM_ERR_NOMEM;
    memcpy(p, SHORTLIST_MAGIC, 8);
    p = put32(p + 8, SHORTLIST_VERSION);
    p = put32(p, (uint32_t)V);
    p = put64(p, sl->print);
    p = put32(p, (uint32_t)sl->top_k);
    p = put32(p, (uint32_t)sl->n_frequent);
    p = put32(p, (uint32_t)L);
    for (int i = 0; i < sl->n_frequent; i++) p = put32(p, (uint32_t)sl->frequent[i]);
    for (size_t s = 0; s < V; s++) p = put32(p, (uint32_t)(sl->start[s + 1] - sl->start[s]));
    for (size_t i = 0; i < L; i++) p = put32(p, (uint32_t)sl->list[i]);
    p = put64(p, fnv1a64(FNV1A64_START, buf, size - 8));
    AtomicFile af;
    TfmStatus st = atomic_open(&af, path, err);
    if (st == TFM_OK) {
        if (fwrite(buf, 1, size, af.f) != size) {
            atomic_abort(&af);
            st = err_set(err, TFM_ERR_IO, "%s: write failed", path);
        } else {
            st = atomic_commit(&af, err);
        }
    }
    free(buf);
    return st;
}

TfmStatus shortlist_load(Shortlist *sl, const char *path, const Bpe *bpe, TfmErr *err)
{
    memset(sl, 0, sizeof *sl);
    char *raw;
    size_t len;
    TfmStatus st = text_read_file(path, (size_t)1 << 31, "a shortlist", NULL, &raw, &len, err);
    if (st != TFM_OK) return st;
    const unsigned char *b = (const unsigned char *)raw;
    const int V = bpe_vocab_size(bpe);
    if (len < 8 || memcmp(b, SHORTLIST_MAGIC, 8) != 0) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: not a tfm shortlist (make one with tfm shortlist)",
                     path);
        goto fail;
    }
    if (len < HEADER_BYTES + 8) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: damaged shortlist (%zu bytes, shorter than its "
                     "header)", path, len);
        goto fail;
    }
    const uint32_t version = get32(b + 8);
    if (version != SHORTLIST_VERSION) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: shortlist version %u (this tfm reads %d)", path,
                     version, SHORTLIST_VERSION);
        goto fail;
    }
    const uint64_t sum = get64(b + len - 8), want = fnv1a64(FNV1A64_START, b, len - 8);
    const uint32_t fv = get32(b + 12);
    const uint64_t print = get64(b + 16);
    const uint32_t k = get32(b + 24), nf = get32(b + 28), L = get32(b + 32);
    /* the sizes agree with the file's length before anything is read by them */
    const uint64_t need = HEADER_BYTES + 4 * ((uint64_t)nf + fv + L) + 8;
    if (sum != want || need != len || k < 1 || k > SHORTLIST_MAX_K || nf > fv ||
        (uint64_t)L > (uint64_t)fv * k) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: damaged shortlist (%s)", path,
                     sum != want ? "checksum mismatch" : "its sizes do not match its length");
        goto fail;
    }
    if ((int)fv != V || print != shortlist_vocab_print(bpe)) {
        st = err_set(err, TFM_ERR_FORMAT, "%s: a shortlist for another vocabulary (%u pieces, "
                     "fingerprint %016llx; the model's: %d, %016llx); make it with tfm shortlist "
                     "-m MODEL", path, fv, (unsigned long long)print, V,
                     (unsigned long long)shortlist_vocab_print(bpe));
        goto fail;
    }
    sl->vocab = V;
    sl->print = print;
    sl->top_k = (int)k;
    sl->n_frequent = (int)nf;
    sl->frequent = xmalloc(((size_t)nf + 1) * sizeof(int), err);
    sl->start = xmalloc(((size_t)V + 1) * sizeof(int), err);
    sl->list = xmalloc(((size_t)L + 1) * sizeof(int), err);
    if (!sl->frequent || !sl->start || !sl->list) {
        st = TFM_ERR_NOMEM;
        goto fail;
    }
    const unsigned char *p = b + HEADER_BYTES;
    uint64_t at = 0;
    for (uint32_t i = 0; i < nf; i++, p += 4) {
        const uint32_t v = get32(p);
        if (v >= (uint32_t)V) goto bad;
        sl->frequent[i] = (int)v;
    }
    for (int s = 0; s < V; s++, p += 4) {
        const uint32_t c = get32(p);
        if (c > k) goto bad;
        sl->start[s] = (int)at;
        at += c;
    }
    sl->start[V] = (int)at;
    if (at != L) goto bad;
    for (uint32_t i = 0; i < L; i++, p += 4) {
        const uint32_t v = get32(p);
        if (v >= (uint32_t)V) goto bad;
        sl->list[i] = (int)v;
    }
    free(raw);
    return TFM_OK;
bad:
    st = err_set(err, TFM_ERR_FORMAT, "%s: damaged shortlist (a piece or a count out of range)",
                 path);
fail:
    free(raw);
    shortlist_free(sl);
    return st;
}

/* ---- each sentence's columns ---- */

/* The model's output column of piece v. */
static int out_col(const ShortlistRun *r, int v)
{
    return r->out_pos ? r->out_pos[v] : v;
}

TfmStatus shortlist_run_init(ShortlistRun *r, const Shortlist *sl, const PackedLinear *out,
                             int n_out, const int *out_pos, int max_sents, int max_beam,
                             TfmErr *err)
{
    memset(r, 0, sizeof *r);
    const size_t V = (size_t)sl->vocab, no = (size_t)n_out, n = (size_t)max_sents;
    r->sl = sl;
    r->V = sl->vocab;
    r->n_out = n_out;
    r->out_pos = out_pos;
    r->max_sents = max_sents;
    r->mark = xcalloc(V, 1, err);
    r->sel = xmalloc(no * sizeof(int), err);
    r->own = xmalloc(n * no * sizeof(int), err);
    r->own_len = xcalloc(n, sizeof(int), err);
    r->line = xcalloc(n, sizeof *r->line, err);
    r->line_cap = xcalloc(n, sizeof(int), err);
    r->cur = xcalloc(n, sizeof *r->cur, err);
    r->cur_slot = xcalloc(n, sizeof(int), err);
    r->cur_len = xcalloc(n, sizeof(int), err);
    if (!r->mark || !r->sel || !r->own || !r->own_len || !r->line || !r->line_cap || !r->cur ||
        !r->cur_slot || !r->cur_len)
        goto nomem;
    /* the shared pieces, ascending: the specials and the frequent ones
     * that are outputs; own[0..n_shared) keeps them for every sentence */
    for (int v = TOK_PAD; v <= TOK_EOS; v++) r->mark[v] = 1;
    for (int i = 0; i < sl->n_frequent; i++) r->mark[sl->frequent[i]] = 1;
    int c = 0;
    for (int v = 0; v < r->V; v++) {
        if (!r->mark[v]) continue;
        r->mark[v] = 0;
        if (out_col(r, v) < 0) continue;
        r->sel[r->n_shared] = out_col(r, v);
        r->own[r->n_shared++] = v;
        c += v != TOK_PAD && v != TOK_BOS;
    }
    r->min_cands = c;
    r->shared_y = xmalloc(n * (size_t)max_beam * (size_t)r->n_shared * sizeof(float), err);
    if (!r->shared_y) goto nomem;
    TfmStatus st = packed_linear_init_like(&r->shared_p, out, r->n_shared, err);
    if (st != TFM_OK) {
        shortlist_run_free(r);
        return st;
    }
    packed_linear_select(&r->shared_p, out, r->sel, r->n_shared);
    if ((st = shortlist_rest_init(&r->rest, out, n_out, out->in, err)) != TFM_OK) {
        shortlist_run_free(r);
        return st;
    }
    r->rest_x = xmalloc(n * (size_t)max_beam * (size_t)out->in * sizeof(float), err);
    if (!r->rest_x) goto nomem;
    if ((st = shortlist_guard_init(&r->guard, out, out_pos, n_out, out->in, max_sents, err)) !=
        TFM_OK) {
        shortlist_run_free(r);
        return st;
    }
    /* the whole output, for the lines the guard marks: the shared pieces,
     * then every other output piece */
    r->all = xmalloc(no * sizeof(int), err);
    r->whole = xcalloc(n, sizeof(bool), err);
    if (!r->all || !r->whole) goto nomem;
    memcpy(r->all, r->own, (size_t)r->n_shared * sizeof(int));
    for (int i = 0; i < r->n_shared; i++) r->mark[r->own[i]] = 1;
    int m = r->n_shared;
    for (int v = 0; v < r->V; v++)
        if (!r->mark[v] && out_col(r, v) >= 0) r->all[m++] = v;
    for (int i = 0; i < r->n_shared; i++) r->mark[r->own[i]] = 0;
    if (m > r->n_shared) {
        if ((st = packed_linear_init_like(&r->others_p, out, m - r->n_shared, err)) != TFM_OK) {
            shortlist_run_free(r);
            return st;
        }
        for (int i = r->n_shared; i < m; i++) r->sel[i - r->n_shared] = out_col(r, r->all[i]);
        packed_linear_select(&r->others_p, out, r->sel, m - r->n_shared);
    }
    for (size_t b = 1; b < n; b++)
        memcpy(r->own + b * no, r->own, (size_t)r->n_shared * sizeof(int));
    return TFM_OK;
nomem:
    shortlist_run_free(r);
    return TFM_ERR_NOMEM;
}

static int cmp_int(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Sentence b's product over its m own pieces l (after the shared ones),
 * selected from out, in room grown by half again when short. */
static TfmStatus line_product(ShortlistRun *r, const PackedLinear *out, int b, const int *l,
                              int m, TfmErr *err)
{
    if (m > r->line_cap[b]) {
        packed_linear_free(&r->line[b]);
        r->line_cap[b] = 0;
        int cap = m + m / 2;
        if (cap > r->n_out) cap = r->n_out;
        TfmStatus st = packed_linear_init_like(&r->line[b], out, cap, err);
        if (st != TFM_OK) return st;
        r->line_cap[b] = cap;
    }
    for (int i = 0; i < m; i++) r->sel[i] = out_col(r, l[i]);
    packed_linear_select(&r->line[b], out, r->sel, m);
    return TFM_OK;
}

TfmStatus shortlist_run_batch(ShortlistRun *r, const PackedLinear *out, const int *src, int n,
                              int S, TfmErr *err)
{
    const Shortlist *sl = r->sl;
    const int ns = r->n_shared;
    for (int i = 0; i < ns; i++) r->mark[r->own[i]] = 1;   /* (own[0..ns): the shared pieces) */
    for (int b = 0; b < n; b++) {
        int *l = r->own + (size_t)b * r->n_out + ns, m = 0;
        for (int i = 0; i < S && src[(size_t)b * S + i] != TOK_PAD; i++) {
            const int s = src[(size_t)b * S + i];
            for (int j = sl->start[s]; j < sl->start[s + 1]; j++) {
                const int v = sl->list[j];
                if (r->mark[v] || out_col(r, v) < 0) continue;
                r->mark[v] = 1;
                l[m++] = v;
            }
        }
        for (int i = 0; i < m; i++) r->mark[l[i]] = 0;
        qsort(l, (size_t)m, sizeof *l, cmp_int);
        r->own_len[b] = ns + m;
        TfmStatus st = line_product(r, out, b, l, m, err);
        if (st != TFM_OK) {
            for (int i = 0; i < ns; i++) r->mark[r->own[i]] = 0;
            return st;
        }
        r->cur[b] = r->own + (size_t)b * r->n_out;
        r->cur_slot[b] = b;
        r->cur_len[b] = r->own_len[b];
        r->whole[b] = false;
    }
    for (int i = 0; i < ns; i++) r->mark[r->own[i]] = 0;
    return TFM_OK;
}

/* The k rows of sentence b from its top states x (k, in) into y (k,
 * cur_len[b]); shared_y and rest_x already hold the step's. */
static void sentence_rows(const ShortlistRun *r, float *y, const float *x, int b, int k)
{
    const int W = r->cur_len[b], ns = r->n_shared;
    for (int i = 0; i < k; i++)
        memcpy(y + (size_t)i * W, r->shared_y + ((size_t)b * k + i) * ns, (size_t)ns * sizeof *y);
    const int slot = r->cur_slot[b];
    if (W > ns)
        packed_linear_forward_ld(r->whole[slot] ? &r->others_p : &r->line[slot], y + ns, W, x, k,
                                 0);
    if (W == r->n_out)
        logsoftmax_rows(y, k, W);
    else
        shortlist_rest_normalize(&r->rest, y, W, x, k, r->rest_x + (size_t)b * k * r->rest.d);
}

/* Sentence b has the whole output from now on. */
static void give_whole(ShortlistRun *r, int b)
{
    r->whole[r->cur_slot[b]] = true;
    r->cur[b] = r->all;
    r->cur_len[b] = r->n_out;
}

/* The rows of the sentences with the whole output (want true) or the
 * others: the others' products are each their own, so the sentences split
 * between the threads; the whole output's is one for all (its int8 and
 * bf16 scratch too), so those go one after another, each product on
 * every thread. */
static void rows_of(const ShortlistRun *r, float *y, const float *x, int n, int k, bool want)
{
    const size_t block = (size_t)k * r->n_out, x_block = (size_t)k * r->guard.d;
    if (want || n == 1) {   /* no parallel region: even an idle one costs a team */
        for (int b = 0; b < n; b++)
            if (r->whole[r->cur_slot[b]] == want)
                sentence_rows(r, y + b * block, x + b * x_block, b, k);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int b = 0; b < n; b++)
        if (!r->whole[r->cur_slot[b]]) sentence_rows(r, y + b * block, x + b * x_block, b, k);
}

void shortlist_run_step(ShortlistRun *r, float *y, const float *x, int n, int k)
{
    packed_linear_forward(&r->shared_p, r->shared_y, x, n * k, 0);
    shortlist_rest_project(&r->rest, r->rest_x, x, n * k);
    rows_of(r, y, x, n, k, false);
    rows_of(r, y, x, n, k, true);
    ShortlistGuard *g = &r->guard;
    const int marked = shortlist_guard_check(g, x, n, k, r->cur, r->cur_len);
    if (!marked) return;
    r->lines_guarded += marked;
    const size_t block = (size_t)k * r->n_out, x_block = (size_t)k * g->d;
    for (int b = 0; b < n; b++) {
        if (!g->mark[b]) continue;
        give_whole(r, b);
        sentence_rows(r, y + b * block, x + b * x_block, b, k);
    }
}

void shortlist_run_follow(ShortlistRun *r, const ShortlistRun *lead, int n)
{
    for (int b = 0; b < n; b++)
        if (lead->whole[lead->cur_slot[b]] && !r->whole[r->cur_slot[b]]) give_whole(r, b);
}

void shortlist_run_drop(ShortlistRun *r, const char *done, int n)
{
    int j = 0;
    for (int b = 0; b < n; b++) {
        if (done[b]) continue;
        r->cur[j] = r->cur[b];
        r->cur_slot[j] = r->cur_slot[b];
        r->cur_len[j++] = r->cur_len[b];
    }
}

void shortlist_run_free(ShortlistRun *r)
{
    if (r->line)
        for (int b = 0; b < r->max_sents; b++) packed_linear_free(&r->line[b]);
    packed_linear_free(&r->shared_p);
    shortlist_rest_free(&r->rest);
    shortlist_guard_free(&r->guard);
    packed_linear_free(&r->others_p);
    FREE_ALL(r->all, r->whole, r->line, r->line_cap, r->mark, r->sel, r->own, r->own_len, r->cur,
             r->cur_slot, r->cur_len, r->shared_y, r->rest_x);
    memset(r, 0, sizeof *r);
}
