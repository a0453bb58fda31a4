/* spm_subset: a SentencePiece model's text spelled in a subset of its
 * pieces, for model.output_vocab "target" (text/bpe_subset.h). SentencePiece
 * pieces carry no merge history to split along, so a piece outside the
 * subset is spelled as the fewest subset pieces that make its text: a
 * shortest path over the piece trie, as the unigram segmenter's, counting
 * pieces instead of scores (the spelling only has to be the same text, and
 * a count is the same for unigram and bpe models). */
#include <limits.h>
#include <stdlib.h>

#include "text/spm_internal.h"

void spm_mark_writable(const Spm *m, bool *in)
{
    in[m->unk_id] = true;
    for (int b = 0; b < 256; b++)
        if (m->byte_id[b] >= 0) in[m->byte_id[b]] = true;
    for (int id = 0; id < m->p.n_pieces; id++) {
        const SpmStr s = m->p.piece[id];
        /* user-defined pieces are atomic: the encoder matches them before
         * any other, so their characters do not spell them */
        if (m->p.type[id] == SPM_USER_DEFINED ||
            (m->p.type[id] == SPM_NORMAL && s.n > 0 && spm_valid_char(s.s, s.n) == s.n))
            in[id] = true;
    }
}

enum { FALLBACK = -2 };     /* the character's bytes, or <unk> without byte pieces */

typedef struct {
    int cost;               /* pieces up to here, INT_MAX unreached */
    int from;               /* where the last piece starts */
    int id;                 /* the last piece, or FALLBACK */
} Step;

long spm_spell(const Spm *m, const bool *in, int id, int *dst, TfmErr *err)
{
    const SpmStr p = m->p.piece[id];
    if (in[id] || m->p.type[id] != SPM_NORMAL || p.n == 0) {
        /* control and unused pieces are never encoded: <unk> stands in */
        if (dst) dst[0] = in[id] ? id : m->unk_id;
        return 1;
    }
    const bool bytes = m->p.byte_fallback;
    Step *st = xmalloc(sizeof *st * (p.n + 1), err);
    if (!st) return -1;
    for (size_t i = 0; i <= p.n; i++) st[i] = (Step){INT_MAX, -1, -1};
    st[0].cost = 0;
    for (size_t start = 0; start < p.n;) {
        const size_t mblen = spm_char_len(p.s + start, p.n - start);
        const int here = st[start].cost;
        if (here != INT_MAX) {
            long node = 0;
            for (size_t pos = start; pos < p.n;) {
                if ((node = spm_trie_child(&m->trie, node, (unsigned char)p.s[pos])) < 0) break;
                pos++;
                const int v = m->trie.value[node];
                if (v >= 0 && in[v] && v != id && here + 1 < st[pos].cost)
                    st[pos] = (Step){here + 1, (int)start, v};
            }
            /* a character no subset piece holds: well behind any piece */
            const int fb = here + (bytes ? (int)mblen : 1) + (int)p.n + 1;
            if (fb < st[start + mblen].cost) st[start + mblen] = (Step){fb, (int)start, FALLBACK};
        }
        start += mblen;
    }
    long k = 0;
    for (size_t end = p.n; end > 0; end = (size_t)st[end].from)
        k += st[end].id == FALLBACK && bytes ? (long)(end - (size_t)st[end].from) : 1;
    if (dst) {
        long w = k;
        for (size_t end = p.n; end > 0; end = (size_t)st[end].from) {
            const size_t from = (size_t)st[end].from;
            if (st[end].id != FALLBACK) dst[--w] = st[end].id;
            else if (!bytes) dst[--w] = m->unk_id;
            else
                for (size_t j = end; j > from; j--) dst[--w] = m->byte_id[(unsigned char)p.s[j - 1]];
        }
    }
    free(st);
    return k;
}
