/* spm_encode: the segmenters over a normalized line, unigram (Viterbi over
 * the piece scores, unigram_model.cc EncodeOptimized, the default encoder of
 * 0.1.97) and bpe (merges by score, bpe_model.cc), what
 * sentencepiece_processor.cc does to their pieces (a run of unknown pieces
 * becomes one, or byte pieces with byte fallback), and decoding.
 *
 * Scores are added in float as sentencepiece adds them (a user-defined
 * piece's bonus in double), so ties fall the same way. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/spm_internal.h"

#define META "\xE2\x96\x81"

/* unigram: the best path ending at a byte position. */
typedef struct {
    int id;
    int starts_at;          /* -1: no path ends here yet */
    float score;
} Best;

/* bpe: a symbol of the line and a candidate merge of two neighbours. */
typedef struct {
    int prev, next;
    uint32_t off, len;      /* into the normalized line; len 0: merged away */
    bool freeze;            /* user-defined: never merged */
} Sym;

typedef struct {
    float score;
    int left, right;
    uint32_t size;          /* bytes of the merged piece, to spot stale pairs */
} Pair;

static TfmStatus push_tok(SpmWork *w, int id, const char *s, size_t len, TfmErr *err)
{
    if (w->n_tok == w->tok_cap) {
        TfmStatus st = xgrow((void **)&w->tok, &w->tok_cap, w->n_tok + 1, sizeof *w->tok, err);
        if (st) return st;
    }
    w->tok[w->n_tok++] = (SpmTok){id, (uint32_t)len, s};
    return TFM_OK;
}

/* sentencepiece_processor.cc PopulateSentencePieceText, for one piece of the
 * segmenter: unknown pieces in a row become one, or with byte fallback each
 * of their bytes a byte piece. */
static TfmStatus emit(const Spm *m, SpmWork *w, int id, const char *s, size_t len, bool *prev_unk,
                      TfmErr *err)
{
    bool unk = m->p.type[id] == SPM_UNKNOWN;
    TfmStatus st = TFM_OK;
    if (unk && m->p.byte_fallback) {
        for (size_t i = 0; i < len && !st; i++) {
            int b = m->byte_id[(unsigned char)s[i]];
            st = push_tok(w, b, m->p.piece[b].s, m->p.piece[b].n, err);
        }
    } else if (unk && *prev_unk) {
        w->tok[w->n_tok - 1].len += (uint32_t)len;     /* contiguous in norm */
    } else {
        st = push_tok(w, id, s, len, err);
    }
    *prev_unk = unk;
    return st;
}

static TfmStatus encode_unigram(const Spm *m, SpmWork *w, size_t size, TfmErr *err)
{
    const char *s = w->norm;
    TfmStatus st;
    if ((st = xgrow(&w->best, &w->best_cap, size + 1, sizeof(Best), err))) return st;
    Best *best = w->best;
    for (size_t i = 0; i <= size; i++) best[i] = (Best){-1, -1, 0.0f};
    const SpmTrie *t = &m->trie;
    const float unk_score = m->min_score - 10.0f;  /* kUnkPenalty */
    for (size_t start = 0; start < size;) {
        const float here = best[start].score;
        const size_t mblen = spm_char_len(s + start, size - start);
        bool has_single = false;
        long node = 0;
        for (size_t pos = start; pos < size;) {
            node = spm_trie_child(t, node, (unsigned char)s[pos]);
            if (node < 0) break;
            pos++;
            int id = t->value[node];
            if (id < 0 || m->p.type[id] == SPM_UNUSED) continue;
            Best *b = &best[pos];
            size_t length = pos - start;
            if (m->p.type[id] == SPM_USER_DEFINED) {
                /* length * max_score_ - 0.1: float times, double minus */
                double cand = ((double)((float)length * m->max_score) - 0.1) + (double)here;
                if (b->starts_at == -1 || cand > (double)b->score)
                    *b = (Best){id, (int)start, (float)cand};
            } else {
                float cand = m->p.score[id] + here;
                if (b->starts_at == -1 || cand > b->score) *b = (Best){id, (int)start, cand};
            }
            if (length == mblen) has_single = true;
        }
        if (!has_single) {
            Best *b = &best[start + mblen];
            float cand = unk_score + here;
            if (b->starts_at == -1 || cand > b->score) *b = (Best){m->unk_id, (int)start, cand};
        }
        start += mblen;
    }
    /* Backtrack: the path is read end to start; reverse it in place in
     * best[].starts_at order by walking twice (count, then fill). */
    size_t n = 0;
    for (size_t end = size; end > 0; end = (size_t)best[end].starts_at) n++;
    if ((st = xgrow(&w->sym, &w->sym_cap, n + 1, sizeof(uint32_t), err))) return st;
    uint32_t *ends = w->sym;
    size_t k = n;
    for (size_t end = size; end > 0; end = (size_t)best[end].starts_at) ends[--k] = (uint32_t)end;
    bool prev_unk = false;
    for (size_t i = 0; i < n; i++) {
        const Best *b = &best[ends[i]];
        if ((st = emit(m, w, b->id, s + b->starts_at, ends[i] - (size_t)b->starts_at, &prev_unk, err)))
            return st;
    }
    return TFM_OK;
}

/* Max-heap of pairs: the highest score first, the leftmost among equals. */
static inline bool pair_before(const Pair *a, const Pair *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(Pair *h, size_t *n, Pair p)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!pair_before(&p, &h[up])) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = p;
}

static Pair heap_pop(Pair *h, size_t *n)
{
    Pair top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && pair_before(&h[c + 1], &h[c])) c++;
        if (!pair_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

/* Pushes the pair (l, r) when their concatenation is a piece; the agenda
 * grows as needed (it holds at most 3 pairs a symbol, usually about 1). */
static TfmStatus maybe_pair(const Spm *m, SpmWork *w, const Sym *sym, int l, int r, size_t *n_heap,
                            TfmErr *err)
{
    if (l < 0 || r < 0 || sym[l].freeze || sym[r].freeze) return TFM_OK;
    uint32_t size = sym[l].len + sym[r].len;
    int id = spm_trie_find(&m->trie, w->norm + sym[l].off, size);
    if (id < 0) return TFM_OK;
    if (*n_heap == w->heap_cap) {
        TfmStatus st = xgrow(&w->heap, &w->heap_cap, *n_heap + 1, sizeof(Pair), err);
        if (st) return st;
    }
    heap_push(w->heap, n_heap, (Pair){m->p.score[id], l, r, size});
    return TFM_OK;
}

static TfmStatus encode_bpe(const Spm *m, SpmWork *w, size_t size, TfmErr *err)
{
    const char *s = w->norm;
    TfmStatus st;
    if ((st = xgrow(&w->sym, &w->sym_cap, size + 1, sizeof(Sym), err))) return st;
    Sym *sym = w->sym;
    int n = 0;
    for (size_t pos = 0; pos < size; n++) {
        size_t k = m->has_user_defined ? spm_user_defined_prefix(m, s + pos, size - pos) : 0;
        bool freeze = k > 0;
        if (!k) k = spm_char_len(s + pos, size - pos);
        sym[n] = (Sym){n - 1, pos + k < size ? n + 1 : -1, (uint32_t)pos, (uint32_t)k, freeze};
        pos += k;
    }
    size_t n_heap = 0;
    for (int i = 1; i < n; i++)
        if ((st = maybe_pair(m, w, sym, i - 1, i, &n_heap, err))) return st;
    while (n_heap > 0) {
        Pair top = heap_pop(w->heap, &n_heap);
        Sym *l = &sym[top.left], *r = &sym[top.right];
        if (l->len == 0 || r->len == 0 || l->len + r->len != top.size) continue;
        l->len += r->len;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = top.left;
        r->len = 0;
        if ((st = maybe_pair(m, w, sym, l->prev, top.left, &n_heap, err)) ||
            (st = maybe_pair(m, w, sym, top.left, l->next, &n_heap, err)))
            return st;
    }
    bool prev_unk = false;
    for (int i = 0; n > 0 && i != -1; i = sym[i].next) {
        const char *p = s + sym[i].off;
        if ((st = emit(m, w, spm_piece_id(m, p, sym[i].len), p, sym[i].len, &prev_unk, err)))
            return st;
    }
    return TFM_OK;
}

TfmStatus spm_encode(const Spm *m, SpmWork *w, const char *line, size_t len, TfmErr *err)
{
    w->n_tok = 0;
    size_t n;
    TfmStatus st = spm_normalize(m, w, line, len, &n, err);
    if (st || n == 0) return st;
    return m->p.model_type == SPM_MODEL_BPE ? encode_bpe(m, w, n, err)
                                            : encode_unigram(m, w, n, err);
}

void spm_work_free(SpmWork *w)
{
    FREE_ALL(w->tok, w->norm, w->best, w->sym, w->heap);
    *w = (SpmWork){0};
}

/* ---- decoding (sentencepiece_processor.cc Decode) ---- */

typedef struct {
    char **out;
    size_t *len, *cap;
} Out;

static TfmStatus put(Out *o, const char *s, size_t n, TfmErr *err)
{
    TfmStatus st = xgrow((void **)o->out, o->cap, *o->len + n + 1, 1, err);
    if (st) return st;
    memcpy(*o->out + *o->len, s, n);
    *o->len += n;
    (*o->out)[*o->len] = '\0';
    return TFM_OK;
}

/* A run of byte pieces was appended raw at (*out)[run..*len): as spm_decode
 * reads it, each valid character stays, each byte that starts none becomes
 * U+FFFD. Only a run with such a byte is rewritten (through a copy). */
static TfmStatus flush_bytes(Out *o, size_t run, TfmErr *err)
{
    const size_t end = *o->len;
    bool valid = true;
    for (size_t i = run; i < end && valid;) {
        size_t k = spm_valid_char(*o->out + i, end - i);
        valid = k > 0;
        i += k;
    }
    if (valid) return TFM_OK;
    size_t n = end - run;
    char *b = xmalloc(n, err);
    if (!b) return TFM_ERR_NOMEM;
    memcpy(b, *o->out + run, n);
    *o->len = run;
    TfmStatus st = TFM_OK;
    for (size_t i = 0; i < n && !st;) {
        size_t k = spm_valid_char(b + i, n - i);
        st = k ? put(o, b + i, k, err) : put(o, "\xEF\xBF\xBD", 3, err);
        i += k ? k : 1;
    }
    free(b);
    return st;
}

TfmStatus spm_decode(const Spm *m, const SpmTok *tok, size_t n, char **out, size_t *len,
                     size_t *cap, TfmErr *err)
{
    Out o = {out, len, cap};
    *len = 0;
    TfmStatus st = put(&o, "", 0, err);
    size_t run = SIZE_MAX;      /* where the current run of byte pieces starts */
    bool bos_ws = true, bos_ws_seen = false;
    const SpmProto *p = &m->p;
    for (size_t i = 0; i < n && !st; i++) {
        int id = tok[i].id, type = p->type[id];
        if (type == SPM_BYTE) {
            if (run == SIZE_MAX) run = *len;
            char b = (char)spm_piece_byte(p->piece[id]);
            st = put(&o, &b, 1, err);
            continue;
        }
        if (run != SIZE_MAX && (st = flush_bytes(&o, run, err))) break;
        run = SIZE_MAX;
        if (bos_ws_seen || *len > 0) bos_ws = false;
        bos_ws_seen = false;
        const char *s = tok[i].s;
        size_t sn = tok[i].len;
        if (type == SPM_CONTROL) continue;
        if (type == SPM_UNKNOWN) {
            if (sn == p->piece[id].n && memcmp(s, p->piece[id].s, sn) == 0) {
                if (p->has_unk_surface) st = put(&o, p->unk_surface.s, p->unk_surface.n, err);
                else st = put(&o, " \xE2\x81\x87 ", 5, err);
            } else {
                st = put(&o, s, sn, err);
            }
            continue;
        }
        if (bos_ws && (p->add_dummy_prefix || p->remove_extra_ws) && sn >= 3 &&
            memcmp(s, META, 3) == 0) {
            s += 3;
            sn -= 3;
            bos_ws_seen = !p->remove_extra_ws;
        }
        for (size_t j = 0; j < sn && !st;) {
            if (sn - j >= 3 && memcmp(s + j, META, 3) == 0) {
                st = put(&o, " ", 1, err);
                j += 3;
            } else {
                size_t k = j;
                while (k < sn && !(sn - k >= 3 && memcmp(s + k, META, 3) == 0)) k++;
                st = put(&o, s + j, k - j, err);
                j = k;
            }
        }
    }
    if (!st && run != SIZE_MAX) st = flush_bytes(&o, run, err);
    return st;
}
