/* spm_model: builds an Spm from a model file: the checks sentencepiece makes
 * when it loads one (model_interface.cc InitializePieces), the refusal of
 * what spm_encode.c does not implement, the piece tries and the lookups. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "text/spm_internal.h"

/* A model file larger than this is damage (the largest published ones, 250k
 * pieces, are under 5 MB). */
#define SPM_MAX_FILE ((size_t)256 << 20)

/* ---- the piece trie ---- */

static TfmStatus trie_node(SpmTrie *t, TfmErr *err)
{
    if (t->n_nodes == t->cap) {
        size_t c = t->cap ? 2 * t->cap : 1024;
        int32_t *v = xrealloc(t->value, c * sizeof *v, err);
        if (!v) return TFM_ERR_NOMEM;
        t->value = v;
        uint32_t *k = xrealloc(t->edge_key, c * sizeof *k, err);
        if (!k) return TFM_ERR_NOMEM;
        t->edge_key = k;
        t->cap = c;
    }
    t->value[t->n_nodes++] = -1;
    return TFM_OK;
}

TfmStatus spm_trie_add(SpmTrie *t, const char *s, size_t n, int id, TfmErr *err)
{
    TfmStatus st;
    if (t->n_nodes == 0 && (st = trie_node(t, err))) return st;
    size_t node = 0;
    for (size_t i = 0; i < n; i++) {
        if (node >= (1u << 24)) return err_set(err, TFM_ERR_FORMAT, "SentencePiece pieces too long");
        SpmTrieKey k = {t, (uint32_t)node << 8 | (unsigned char)s[i]};
        uint64_t h = spm_edge_hash(k.key);
        if ((st = hidx_room(&t->edges, 1024, err))) return st;
        size_t slot = hidx_probe(&t->edges, h, spm_trie_same, &k);
        if (t->edges.slot[slot]) {
            node = t->edges.slot[slot];     /* edge id + 1 = child node */
            continue;
        }
        if ((st = trie_node(t, err))) return st;
        uint32_t e = hidx_put(&t->edges, slot, h);
        t->edge_key[e] = k.key;
        node = e + 1;
    }
    t->value[node] = id;
    return TFM_OK;
}

int spm_trie_find(const SpmTrie *t, const char *s, size_t n)
{
    if (t->n_nodes == 0) return -1;
    long node = 0;
    for (size_t i = 0; i < n && node >= 0; i++) node = spm_trie_child(t, node, (unsigned char)s[i]);
    return node < 0 ? -1 : t->value[node];
}

void spm_trie_free(SpmTrie *t)
{
    hidx_free(&t->edges);
    free(t->edge_key);
    free(t->value);
    *t = (SpmTrie){0};
}

/* ---- checks ---- */

/* "<0xNN>" with upper-case hex, as sentencepiece's ByteToPiece writes. */
int spm_piece_byte(SpmStr s)
{
    static const char hex[] = "0123456789ABCDEF";
    if (s.n != 6 || memcmp(s.s, "<0x", 3) != 0 || s.s[5] != '>') return -1;
    const char *a = memchr(hex, s.s[3], 16), *b = memchr(hex, s.s[4], 16);
    if (!a || !b || !s.s[3] || !s.s[4]) return -1;
    return (int)((a - hex) * 16 + (b - hex));
}

static const char *model_type_name(int t)
{
    return t == SPM_MODEL_WORD ? "word" : t == SPM_MODEL_CHAR ? "char" : NULL;
}

/* What the segmenters do not implement, refused by name. */
static TfmStatus check_supported(const SpmProto *p, const char *name, TfmErr *err)
{
    if (p->model_type != SPM_MODEL_UNIGRAM && p->model_type != SPM_MODEL_BPE) {
        const char *t = model_type_name(p->model_type);
        if (t)
            return err_set(err, TFM_ERR_FORMAT, "%s: SentencePiece model type %s is not "
                           "supported (only unigram and bpe)", name, t);
        return err_set(err, TFM_ERR_FORMAT, "%s: unknown SentencePiece model type %d", name,
                       p->model_type);
    }
    if (p->treat_ws_as_suffix)
        return err_set(err, TFM_ERR_FORMAT, "%s: SentencePiece option "
                       "treat_whitespace_as_suffix is not supported", name);
    if (!p->escape_ws)
        return err_set(err, TFM_ERR_FORMAT, "%s: SentencePiece option escape_whitespaces=false "
                       "is not supported", name);
    if (p->denorm_charsmap.n > 0)
        return err_set(err, TFM_ERR_FORMAT, "%s: SentencePiece denormalization rules "
                       "(denormalizer_spec) are not supported", name);
    if (p->model_type == SPM_MODEL_BPE)
        for (int i = 0; i < p->n_pieces; i++)
            if (p->type[i] == SPM_UNUSED)
                return err_set(err, TFM_ERR_FORMAT, "%s: unused pieces in a SentencePiece bpe "
                               "model are not supported (piece %d)", name, i);
    return TFM_OK;
}

/* model_interface.cc InitializePieces: non-empty, distinct pieces, one
 * <unk>, byte pieces only with byte_fallback, and then all 256 of them. */
static TfmStatus build_pieces(Spm *m, const char *name, TfmErr *err)
{
    const SpmProto *p = &m->p;
    TfmStatus st;
    m->unk_id = -1;
    for (int b = 0; b < 256; b++) m->byte_id[b] = -1;
    m->min_score = FLT_MAX;
    m->max_score = FLT_MIN;     /* sic: unigram_model.cc starts from FLT_MIN */
    for (int i = 0; i < p->n_pieces; i++) {
        SpmStr s = p->piece[i];
        int t = p->type[i];
        if (s.n == 0) return err_set(err, TFM_ERR_FORMAT, "%s: piece %d is empty", name, i);
        bool normal = t == SPM_NORMAL || t == SPM_USER_DEFINED || t == SPM_UNUSED;
        SpmTrie *trie = normal ? &m->trie : &m->reserved;
        if (spm_trie_find(trie, s.s, s.n) >= 0)
            return err_set(err, TFM_ERR_FORMAT, "%s: piece %d '%.*s' is defined twice", name, i,
                           (int)(s.n > 40 ? 40 : s.n), s.s);
        if ((st = spm_trie_add(trie, s.s, s.n, i, err))) {
            if (st == TFM_ERR_FORMAT) err_prefix(err, "%s: ", name);
            return st;
        }
        if ((int)s.n > m->max_piece_len) m->max_piece_len = (int)s.n;
        if (t == SPM_USER_DEFINED) m->has_user_defined = true;
        if (t == SPM_NORMAL) {
            if (p->score[i] < m->min_score) m->min_score = p->score[i];
            if (p->score[i] > m->max_score) m->max_score = p->score[i];
        }
        if (t == SPM_UNKNOWN) {
            if (m->unk_id >= 0)
                return err_set(err, TFM_ERR_FORMAT, "%s: two <unk> pieces (%d and %d)", name,
                               m->unk_id, i);
            m->unk_id = i;
        }
        if (t == SPM_BYTE) {
            if (!p->byte_fallback)
                return err_set(err, TFM_ERR_FORMAT, "%s: byte piece %.*s although byte_fallback "
                               "is off", name, (int)(s.n > 40 ? 40 : s.n), s.s);
            int b = spm_piece_byte(s);
            if (b < 0)
                return err_set(err, TFM_ERR_FORMAT, "%s: byte piece %d '%.*s' is not <0xNN>",
                               name, i, (int)(s.n > 40 ? 40 : s.n), s.s);
            m->byte_id[b] = i;
        }
    }
    if (m->unk_id < 0) return err_set(err, TFM_ERR_FORMAT, "%s: the model has no <unk> piece", name);
    if (p->byte_fallback)
        for (int b = 0; b < 256; b++)
            if (m->byte_id[b] < 0)
                return err_set(err, TFM_ERR_FORMAT, "%s: byte_fallback is on but byte piece "
                               "<0x%02X> is missing", name, b);
    if (m->trie.n_nodes == 0)
        return err_set(err, TFM_ERR_FORMAT, "%s: the model has no normal pieces", name);
    return TFM_OK;
}

/* ---- loading ---- */

TfmStatus spm_from_bytes(Spm **out, const void *buf, size_t len, const char *name, TfmErr *err)
{
    *out = NULL;
    Spm *m = xcalloc(1, sizeof *m, err);
    if (!m) return TFM_ERR_NOMEM;
    TfmStatus st = TFM_ERR_NOMEM;
    if (!(m->buf = xmalloc(len ? len : 1, err))) goto fail;
    memcpy(m->buf, buf, len);
    m->buf_len = len;
    if ((st = spm_proto_parse(&m->p, m->buf, len, name, err))) goto fail;
    if ((st = check_supported(&m->p, name, err))) goto fail;
    if ((st = build_pieces(m, name, err))) goto fail;
    if (m->p.charsmap.n > 0) {
        st = spm_charsmap_init(&m->cm, &m->charsmap_units, m->p.charsmap, name, err);
        if (st) goto fail;
        m->has_cm = true;
    }
    *out = m;
    return TFM_OK;
fail:
    spm_free(m);
    return st;
}

TfmStatus spm_load(Spm **out, const char *path, TfmErr *err)
{
    char *data = NULL;
    size_t len = 0;
    *out = NULL;
    TfmStatus st = text_read_file(path, SPM_MAX_FILE, "a SentencePiece model", NULL, &data, &len, err);
    if (st == TFM_OK) st = spm_from_bytes(out, data, len, path, err);
    free(data);
    return st;
}

bool spm_file_sniff(const char *path)
{
    TfmErr e = {0};
    FILE *f = text_open_regular(path, &e);
    if (!f) return false;
    unsigned char head[16];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return spm_sniff(head, n);
}

void spm_free(Spm *m)
{
    if (!m) return;
    spm_trie_free(&m->trie);
    spm_trie_free(&m->reserved);
    spm_proto_free(&m->p);
    FREE_ALL(m->charsmap_units, m->buf, m);
}

/* ---- lookups ---- */

const void *spm_bytes(const Spm *m, size_t *len)
{
    *len = m->buf_len;
    return m->buf;
}

const char *spm_kind(const Spm *m) { return m->p.model_type == SPM_MODEL_BPE ? "bpe" : "unigram"; }

int spm_vocab_size(const Spm *m) { return m->p.n_pieces; }

const char *spm_piece(const Spm *m, int id, size_t *len)
{
    if (id < 0 || id >= m->p.n_pieces) return NULL;
    if (len) *len = m->p.piece[id].n;
    return m->p.piece[id].s;
}

int spm_piece_id(const Spm *m, const char *s, size_t n)
{
    int id = spm_trie_find(&m->reserved, s, n);
    if (id < 0) id = spm_trie_find(&m->trie, s, n);
    return id < 0 ? m->unk_id : id;
}

int spm_unk_id(const Spm *m) { return m->unk_id; }

size_t spm_user_defined_prefix(const Spm *m, const char *s, size_t n)
{
    const SpmTrie *t = &m->trie;
    size_t best = 0;
    long node = 0;
    for (size_t i = 0; i < n; i++) {
        if ((node = spm_trie_child(t, node, (unsigned char)s[i])) < 0) break;
        int id = t->value[node];
        if (id >= 0 && m->p.type[id] == SPM_USER_DEFINED) best = i + 1;
    }
    return best;
}
