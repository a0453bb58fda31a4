/* spm: a SentencePiece model file (`.model`, the ModelProto protobuf that
 * spm_train writes) used as a vocabulary, encoding and decoding exactly as
 * sentencepiece 0.1.97's spm_encode and spm_decode do. Model types unigram
 * and bpe; the model's normalizer (its precompiled charsmap: nmt_nfkc,
 * identity, or rules compiled from a TSV), add_dummy_prefix,
 * remove_extra_whitespaces, the "▁" meta symbol, byte fallback (<0xNN>),
 * <unk>, user-defined and control pieces. Anything else a model may ask for
 * (word and char models, whitespace as suffix, unescaped whitespace,
 * denormalization rules, unused pieces in a bpe model) is refused when the
 * file is loaded, by name; nothing is encoded approximately.
 *
 * Ids are the model's own (the position of the piece in the file). Not done
 * here: sampling (subword regularization), n-best, extra options
 * (bos/eos/reverse), the vocabulary restriction of spm_encode --vocabulary.
 *
 * An Spm is immutable after loading; encode and decode take a caller-owned
 * SpmWork for their scratch, so threads may share one Spm. */
#ifndef TFM_SPM_H
#define TFM_SPM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct Spm Spm;

/* One piece of an encoded line: its id, and the text spm_encode prints for
 * it. That is the vocabulary's piece, except for a run of characters the
 * model does not know (without byte fallback): one <unk> id whose text is
 * the run's normalized text. */
typedef struct {
    int id;
    uint32_t len;
    const char *s;          /* into the model or the SpmWork; not NUL-ended */
} SpmTok;

/* Scratch for encoding, grown as lines need and reused: start zeroed, free
 * with spm_work_free. After spm_encode, tok[0..n_tok) is the line's pieces
 * (valid until the next spm_encode with this SpmWork). */
typedef struct {
    SpmTok *tok;
    size_t n_tok, tok_cap;
    char *norm;             /* the normalized line */
    size_t norm_cap;
    void *best;             /* unigram: best path ending at each byte */
    size_t best_cap;
    void *sym, *heap;       /* bpe: symbols and the agenda of pairs */
    size_t sym_cap, heap_cap;
} SpmWork;

/* Whether buf[0..len) (the start of a file, 16 bytes are enough) looks like
 * a ModelProto: a first field "pieces" holding a first field "piece". A tfm
 * vocabulary ("tfm-bpe") or model file never does. */
bool spm_sniff(const void *buf, size_t len);

/* Whether the regular file at path starts as spm_sniff wants (false when it
 * cannot be read: the caller's own loader then says why). */
bool spm_file_sniff(const char *path);

/* Reads and checks a model file. TFM_ERR_IO unreadable; TFM_ERR_FORMAT
 * "PATH: ..." damaged, truncated, or asking for a feature not supported
 * (named: "PATH: SentencePiece model type word is not supported"). */
TfmStatus spm_load(Spm **out, const char *path, TfmErr *err);

/* spm_load from bytes (copied); name is used in messages. */
TfmStatus spm_from_bytes(Spm **out, const void *buf, size_t len, const char *name, TfmErr *err);

/* The file's bytes (for embedding in a model file), with their length. */
const void *spm_bytes(const Spm *m, size_t *len);

/* "unigram" or "bpe". */
const char *spm_kind(const Spm *m);

int spm_vocab_size(const Spm *m);

/* Piece text of id (points into m; len may be NULL), NULL when out of range. */
const char *spm_piece(const Spm *m, int id, size_t *len);

/* sentencepiece's PieceToId: the id of the piece with text s[0..n), or the
 * <unk> id when there is none. */
int spm_piece_id(const Spm *m, const char *s, size_t n);

/* The id of the model's <unk> piece (every model has one). */
int spm_unk_id(const Spm *m);

/* Encodes line[0..len) (any bytes: invalid UTF-8 is normalized to U+FFFD, as
 * sentencepiece does) into w->tok. Only TFM_ERR_NOMEM. */
TfmStatus spm_encode(const Spm *m, SpmWork *w, const char *line, size_t len, TfmErr *err);

/* Decodes pieces as spm_decode does (control pieces vanish, <unk> becomes
 * the model's unk_surface, default " ⁇ ", byte pieces join into characters,
 * invalid ones U+FFFD, "▁" becomes a space, the leading space of the line
 * goes). Each tok's id should be spm_piece_id of its text. Overwrites
 * (*out)[0..*len), NUL-terminated; grows *out and *cap. TFM_ERR_NOMEM. */
TfmStatus spm_decode(const Spm *m, const SpmTok *tok, size_t n, char **out, size_t *len,
                     size_t *cap, TfmErr *err);

/* model.output_vocab "target" (spm_subset.c): marks in[0..vocab) the pieces
 * every subset needs so that any text stays writable (<unk>, the byte
 * pieces, user-defined pieces and every piece of one character). */
void spm_mark_writable(const Spm *m, bool *in);

/* The pieces of the subset in[] that spell piece id's text (id itself when
 * in[id]; the fewest pieces, else): written to dst when not NULL, counted
 * either way. -1 with TFM_ERR_NOMEM. */
long spm_spell(const Spm *m, const bool *in, int id, int *dst, TfmErr *err);

void spm_work_free(SpmWork *w);
void spm_free(Spm *m);

#endif
