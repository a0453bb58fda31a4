/* spm_internal: the SentencePiece model as spm_model.c builds it from the
 * file, shared by spm_proto.c (reads the protobuf), spm_normalize.c (the
 * normalizer) and spm_encode.c (the unigram and bpe segmenters, decoding).
 * Nothing outside text/spm_*.c includes this. */
#ifndef TFM_SPM_INTERNAL_H
#define TFM_SPM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/hash_index.h"
#include "text/spm.h"

/* ModelProto.SentencePiece.Type, as sentencepiece_model.proto numbers them. */
enum {
    SPM_NORMAL = 1, SPM_UNKNOWN = 2, SPM_CONTROL = 3, SPM_USER_DEFINED = 4,
    SPM_UNUSED = 5, SPM_BYTE = 6
};

/* TrainerSpec.ModelType. */
enum { SPM_MODEL_UNIGRAM = 1, SPM_MODEL_BPE = 2, SPM_MODEL_WORD = 3, SPM_MODEL_CHAR = 4 };

/* A byte string inside the file's buffer (the Spm keeps the buffer). */
typedef struct {
    const char *s;
    size_t n;
} SpmStr;

/* What spm_proto_parse reads: the fields of ModelProto that change how text
 * is encoded or decoded (see spm_proto.c for the field numbers), with the
 * proto's defaults where a field is absent. Strings point into the file. */
typedef struct {
    int n_pieces;
    SpmStr *piece;          /* n_pieces */
    float *score;           /* n_pieces */
    uint8_t *type;          /* n_pieces: SPM_NORMAL .. SPM_BYTE */
    int model_type;         /* default SPM_MODEL_UNIGRAM */
    bool byte_fallback;
    bool treat_ws_as_suffix;
    bool has_unk_surface;
    SpmStr unk_surface;
    SpmStr norm_name;       /* "nmt_nfkc", "identity", ... (informative) */
    SpmStr charsmap;        /* empty: no normalization rules */
    bool add_dummy_prefix, remove_extra_ws, escape_ws;   /* default true */
    bool has_rule_tsv;      /* normalization_rule_tsv: rules spm_train compiled */
    SpmStr denorm_charsmap; /* denormalizer rules: refused when not empty */
    int n_self_test;        /* self_test_data samples (not checked) */
} SpmProto;

/* The piece trie: node 0 is the root; an edge (node, byte) -> child is a key
 * of the hash index, whose id is child - 1. value[node] is the piece id that
 * ends there, or -1. */
typedef struct {
    HashIndex edges;
    uint32_t *edge_key;     /* edge id -> node << 8 | byte */
    int32_t *value;         /* node -> piece id or -1 */
    size_t n_nodes, cap;
} SpmTrie;

/* The precompiled charsmap: a darts-clone double array (32-bit units) whose
 * leaves hold offsets into `normalized`, a run of NUL-terminated strings. */
typedef struct {
    const uint32_t *unit;   /* n_units, little-endian in the file, copied */
    size_t n_units;
    const char *normalized;
    size_t normalized_len;
} SpmCharsmap;

struct Spm {
    char *buf;              /* the file's bytes; SpmStr point into it */
    size_t buf_len;
    SpmProto p;
    SpmTrie trie;           /* NORMAL, USER_DEFINED and UNUSED pieces */
    SpmTrie reserved;       /* CONTROL, UNKNOWN and BYTE pieces */
    uint32_t *charsmap_units;
    SpmCharsmap cm;
    bool has_cm;
    bool has_user_defined;
    int unk_id;
    int byte_id[256];       /* <0xNN> piece ids (byte fallback) or -1 */
    float min_score, max_score;   /* over NORMAL pieces, as unigram_model.cc */
    int max_piece_len;
};

/* Reads the protobuf in buf[0..len) into p (pointing into buf). Refuses a
 * damaged file (bad varint, field running past its message, wire types 3/4/6/7)
 * with TFM_ERR_FORMAT "NAME: ...". */
TfmStatus spm_proto_parse(SpmProto *p, const char *buf, size_t len, const char *name,
                          TfmErr *err);
void spm_proto_free(SpmProto *p);

/* Trie over byte strings. */
TfmStatus spm_trie_add(SpmTrie *t, const char *s, size_t n, int id, TfmErr *err);
void spm_trie_free(SpmTrie *t);

/* The child of node by byte c, or -1. */
typedef struct { const SpmTrie *t; uint32_t key; } SpmTrieKey;
static inline bool spm_trie_same(const void *ctx, uint32_t id)
{
    const SpmTrieKey *k = ctx;
    return k->t->edge_key[id] == k->key;
}
static inline uint64_t spm_edge_hash(uint32_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}
static inline long spm_trie_child(const SpmTrie *t, long node, unsigned char c)
{
    SpmTrieKey k = {t, (uint32_t)node << 8 | c};
    long e = hidx_find(&t->edges, spm_edge_hash(k.key), spm_trie_same, &k);
    return e < 0 ? -1 : e + 1;
}

/* The piece id whose text is s[0..n) in t, or -1. */
int spm_trie_find(const SpmTrie *t, const char *s, size_t n);

/* Checks the charsmap blob and fills cm (units copied into *units, malloc'ed).
 * TFM_ERR_FORMAT "NAME: ..." when damaged. */
TfmStatus spm_charsmap_init(SpmCharsmap *cm, uint32_t **units, SpmStr blob, const char *name,
                            TfmErr *err);

/* normalizer.cc Normalize: line in[0..n) normalized into w->norm[0..*len)
 * (not NUL-terminated). Only TFM_ERR_NOMEM. */
TfmStatus spm_normalize(const Spm *m, SpmWork *w, const char *in, size_t n, size_t *len,
                        TfmErr *err);

/* Length of the user-defined piece that starts s[0..n) (longest), or 0. */
size_t spm_user_defined_prefix(const Spm *m, const char *s, size_t n);

/* The byte of a "<0xNN>" piece (upper-case hex, as ByteToPiece writes
 * it), or -1. */
int spm_piece_byte(SpmStr s);

/* sentencepiece's OneCharLen: the length a UTF-8 lead byte announces, from
 * its high nibble alone (1 for continuation bytes), cut to n. */
static inline size_t spm_char_len(const char *s, size_t n)
{
    static const unsigned char len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    size_t l = len[(unsigned char)s[0] >> 4];
    return l < n ? l : n;
}

/* sentencepiece's DecodeUTF8 + IsValidDecodeUTF8: the length of the valid
 * character at s[0..n), or 0 when the byte at s starts none (a literal
 * U+FFFD counts as valid). */
size_t spm_valid_char(const char *s, size_t n);

#endif
