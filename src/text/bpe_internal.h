/* bpe_internal: private to bpe*.c (bpe.c, bpe_learn.c, bpe_file.c, bpe_spm.c); everyone
 * else uses bpe.h. What those files share: the layout of struct Bpe, the hash
 * maps, string index and byte buffer behind it, building a vocabulary piece
 * by piece, and the pre-tokenizer that learning and encoding both run. All of
 * it is defined in bpe.c. */
#ifndef TFM_BPE_INTERNAL_H
#define TFM_BPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/bpe.h"
#include "base/hash_index.h"

enum { KIND_SPECIAL, KIND_BYTE, KIND_MARKER, KIND_CHAR, KIND_MERGED };

#define MARKER_UTF8 "\xE2\x96\x81"   /* U+2581 */
#define MARKER_CP 0x2581u

/* The texts of the special pieces, by id: "<pad>", "<unk>", "<s>", "</s>". */
extern const char *const bpe_special_names[BPE_N_SPECIAL];

/* ---- hash maps (base/hash_index.h tables) ---- */

/* uint64 -> uint64 with linear probing; UINT64_MAX is the empty key (not a
 * base/hash_index.h table: bpe.c says why). */
typedef struct { uint64_t *keys, *vals; size_t mask, n; } U64Map;

/* Strings (kept by the caller as pool + off/len arrays, at ids 0, 1, ...
 * in the order they were added) -> their id. */
typedef HashIndex StrIndex;

typedef struct { const char *pool; const size_t *off; const uint32_t *len; } StrTable;

/* The hash of s[0..n) that stridx_find and stridx_add take. */
uint64_t bpe_hash_bytes(const char *s, size_t n);
/* An empty map with room for `want` keys; on failure *m is left zeroed. */
TfmStatus u64map_init(U64Map *m, size_t want, TfmErr *err);
/* Frees the map and zeroes *m (safe on a zeroed map). */
void u64map_free(U64Map *m);
/* Looks key up: true and its value in *val when present. */
bool u64map_get(const U64Map *m, uint64_t key, uint64_t *val);
/* A pointer to key's value, inserting it (value 0) when absent; NULL on NOMEM. */
uint64_t *u64map_slot(U64Map *m, uint64_t key, TfmErr *err);
/* An empty string index with room for `want` strings. */
TfmStatus stridx_init(StrIndex *x, size_t want, TfmErr *err);
/* The id of string s[0..n) (hash h) among the strings of t, or -1. */
int stridx_find(const StrIndex *x, StrTable t, const char *s, size_t n, uint64_t h);
/* Adds id (the next one: x->n) under hash h. */
TfmStatus stridx_add(StrIndex *x, int id, uint64_t h, TfmErr *err);

/* ---- growable byte buffer ---- */

/* Appends s[0..n) at *len and keeps the buffer NUL-terminated. */
/* The encoders' output: appends add[0..k) to the line's ids (*n of them,
 * room for *cap), growing them; TFM_ERR_NOMEM past INT_MAX ids. */
TfmStatus bpe_ids_append(int **ids, int *n, int *cap, const int *add, int k, TfmErr *err);

/* The decoders' walk over ids: the next id from ids[*i] on that decodes to
 * text (<pad>, <s> and </s> are passed over), advancing *i past it; -1 at
 * the end; -2 with TFM_ERR_FORMAT set for an id out of b's range. */
int bpe_next_text_id(const Bpe *b, const int *ids, int n, int *i, TfmErr *err);

TfmStatus bpe_buf_append(char **buf, size_t *len, size_t *cap, const void *s, size_t n,
                         TfmErr *err);

/* ---- the vocabulary ---- */

struct Bpe {
    int n_pieces, cap_pieces;
    char *pool;                 /* piece texts, back to back */
    size_t pool_len, pool_cap;
    size_t *off;
    uint32_t *len;
    uint8_t *kind;
    StrIndex texts;             /* piece text -> id */
    int n_merges, cap_merges;
    int *merges;                /* (left, right, result) per rank */
    /* Built by bpe_index once the pieces and merges are final. */
    U64Map chars;               /* code point -> char piece */
    U64Map pairs;               /* left << 32 | right -> rank << 32 | result */
    char *dec;                  /* decoded bytes of each piece ("▁" -> " ") */
    size_t *dec_off;
    uint32_t *dec_len;
    /* A SentencePiece model instead (bpe_spm.c): then only n_pieces and the
     * piece texts (pool, off, len) are set above, and the entry points of
     * bpe.h that need more hand over to bpe_spm_*. */
    struct Spm *spm;
};

/* ---- a SentencePiece model behind bpe.h (bpe_spm.c) ---- */

/* A Bpe over m (taking it, also on failure). */
TfmStatus bpe_spm_wrap(Bpe **out, struct Spm *m, TfmErr *err);
int bpe_spm_piece_id(const Bpe *b, const char *s, size_t len);
TfmStatus bpe_spm_encode(const Bpe *b, const char *line, size_t len, int **ids, int *n, int *cap,
                         TfmErr *err);
TfmStatus bpe_spm_decode(const Bpe *b, const int *ids, int n, char **out, size_t *len, size_t *cap,
                         TfmErr *err);
char *bpe_spm_serialize(const Bpe *b, size_t *len);

/* An empty vocabulary (no pieces yet), or NULL (err set). */
Bpe *bpe_alloc(TfmErr *err);
/* Appends a piece; returns its id, or -1 (err set). The text must be new. */
int bpe_add_piece(Bpe *b, int kind, const char *s, size_t n, TfmErr *err);
/* Appends the merge (left, right) -> result as the next rank. */
TfmStatus bpe_add_merge(Bpe *b, int left, int right, int result, TfmErr *err);
/* Writes the text of byte piece `byte` to name (8 bytes); returns its length. */
size_t bpe_byte_piece_name(int byte, char *name);
/* Whether merges may combine piece id (text that decodes to itself). */
bool bpe_mergeable(const Bpe *b, int id);
/* Adds the fixed pieces: specials, the 256 bytes, the marker. */
TfmStatus bpe_add_fixed(Bpe *b, TfmErr *err);
/* Builds the encode/decode lookup tables from the final pieces and merges. */
TfmStatus bpe_index(Bpe *b, TfmErr *err);

/* ---- pre-tokenization ---- */

/* One word: bytes [start, end) of the line, preceded by the marker when
 * `marker`; `raw` words (a literal "▁" or an invalid byte) are spelled in
 * byte pieces and never merged. */
typedef struct { size_t start, end; bool marker, raw; } Word;
typedef struct { const char *s; size_t n, pos; bool pending; } Pretok;

/* At most this many pieces in one word. */
#define BPE_MAX_WORD_PIECES (1 + 4 * BPE_MAX_WORD_CHARS)

/* The pieces of word w of line (no dropout) into sym (BPE_MAX_WORD_PIECES
 * of room); returns their count. */
int bpe_word_pieces(const Bpe *b, const char *line, const Word *w, int *sym);

/* Starts cutting line s[0..n) into words. */
void pretok_init(Pretok *p, const char *s, size_t n);
/* The next word in *w; false when the line is done. */
bool pretok_next(Pretok *p, Word *w);

#endif
