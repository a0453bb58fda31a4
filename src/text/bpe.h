/* bpe: a joint byte-pair-encoding subword vocabulary, lossless by design.
 *
 * A line is cut into words (see docs/vocab-format.md for the exact rules):
 * every space becomes the marker "▁" (U+2581) that starts the next word, plus
 * one marker in front of the line, as sentencepiece does; a word is a run of
 * letters, of digits or of punctuation, at most BPE_MAX_WORD_CHARS characters.
 * Control characters (tab, CR, ...) and a literal "▁" in the text stand alone.
 * Each word starts as the marker and its characters; characters outside the
 * learned alphabet, and every literal "▁", are spelled as byte pieces
 * (<0xE4> ...), so no text ever needs <unk>. Merges are applied in rank order.
 * Hence decode(encode(line)) == line, byte for byte, for any bytes at all.
 *
 * Ids: 0 <pad>, 1 <unk>, 2 <s>, 3 </s> (TOK_* below), 4..259 the byte
 * pieces <0x00>..<0xFF>, 260 the marker, then characters and merged pieces.
 *
 * A Bpe is immutable after learn/load, so encode and decode may run on one
 * Bpe from many threads at once. */
#ifndef TFM_BPE_H
#define TFM_BPE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/rng.h"
#include "text/line_sample.h"

/* The special ids, owned here and used by everyone (model, corpus, decoder). */
enum { TOK_PAD = 0, TOK_UNK = 1, TOK_BOS = 2, TOK_EOS = 3 };

enum {
    BPE_N_SPECIAL = 4,
    BPE_BYTE0 = 4,                  /* id of <0x00>; <0xHH> is BPE_BYTE0 + 0xHH */
    BPE_MARKER = 260,               /* "▁": a space / the start of the line */
    BPE_MIN_VOCAB = 261,            /* specials + 256 bytes + the marker */
    BPE_MAX_VOCAB = 1 << 20,
    BPE_MAX_WORD_CHARS = 64         /* longer words are cut into chunks */
};

typedef struct Bpe Bpe;

/* Learns a vocabulary of at most vocab_size pieces (specials, bytes and the
 * marker included) from the lines of the files (UTF-8, "-" = stdin), all
 * files pooled (source and target for a joint vocabulary). Deterministic:
 * the same files and size give the same vocabulary. Stops early, with a
 * smaller vocabulary, when no pair of pieces occurs twice any more. Errors:
 * TFM_ERR_CONFIG vocab_size out of [BPE_MIN_VOCAB, BPE_MAX_VOCAB]; TFM_ERR_IO
 * unreadable file; TFM_ERR_FORMAT "FILE: line N: invalid UTF-8 at byte B",
 * "... contains a NUL byte ...", or "no text to learn from in FILE..." when
 * every line is empty. */
TfmStatus bpe_learn(Bpe **out, const char *const *paths, int n_paths, int vocab_size,
                    TfmErr *err);

/* bpe_learn from a sample of about `sample` of the files' lines (0: every
 * line), chosen by line_sample.h (the same files give the same sample; a
 * large corpus of plain files is not read whole), its words counted by up
 * to `threads` threads (the same vocabulary for any number). sample_stats
 * (may be NULL) gets the lines learned from and the lines there are. Errors
 * as bpe_learn's (a line of a stripe named by its byte). */
TfmStatus bpe_learn_sample(Bpe **out, const char *const *paths, int n_paths, int vocab_size,
                           long sample, int threads, LineSampleStats *sample_stats, TfmErr *err);

/* Writes the vocabulary file (docs/vocab-format.md) atomically: a temporary
 * file in the same folder, fsync, rename. TFM_ERR_IO on failure (path is
 * then untouched). */
TfmStatus bpe_save(const Bpe *bpe, const char *path, TfmErr *err);

/* Reads and fully validates a vocabulary file. TFM_ERR_IO when unreadable,
 * TFM_ERR_FORMAT "PATH: line N: ..." when malformed. */
TfmStatus bpe_load(Bpe **out, const char *path, TfmErr *err);

/* The vocabulary file's bytes, malloc'ed (caller frees), length in *len;
 * NULL when out of memory. */
char *bpe_serialize(const Bpe *bpe, size_t *len);

/* Parses bytes in the file format; name is used in messages ("NAME: line N:"). */
TfmStatus bpe_deserialize(Bpe **out, const char *buf, size_t len, const char *name,
                          TfmErr *err);

/* Number of pieces (ids are 0 .. size-1). */
int bpe_vocab_size(const Bpe *bpe);

/* The text of piece id as stored in the vocabulary (unescaped bytes; "▁"
 * stands for a space; byte pieces read "<0xE4>"), with its length in *len
 * (if not NULL). NULL for an id out of range. Points into bpe. */
const char *bpe_piece(const Bpe *bpe, int id, size_t *len);

/* The id of the piece whose text is s[0..len), or -1. */
int bpe_piece_id(const Bpe *bpe, const char *s, size_t len);

/* Encodes line[0..len) (no "\n"; any bytes are accepted, invalid UTF-8 goes
 * to byte pieces) to ids, without <s> or </s>. Overwrites (*ids)[0..*n);
 * grows *ids and *cap with xrealloc as needed (start with NULL/0), so a reused
 * buffer needs no allocation per line once warm. Only TFM_ERR_NOMEM. */
TfmStatus bpe_encode(const Bpe *bpe, const char *line, size_t len, int **ids, int *n,
                     int *cap, TfmErr *err);

/* bpe_encode with BPE-dropout (Provilkov et al. 2020): at every merge step
 * of a word each applicable merge is skipped with probability p, drawn from
 * rng, so a word gets one of its finer segmentations at random (p = 0: the
 * same ids as bpe_encode; p = 1: no merges). Still lossless. For training
 * data only. */
TfmStatus bpe_encode_dropout(const Bpe *bpe, const char *line, size_t len, float p, Rng *rng,
                             int **ids, int *n, int *cap, TfmErr *err);

/* Decodes ids to text, skipping <pad>, <s> and </s>; <unk> becomes "<unk>".
 * Overwrites (*out)[0..*len) and NUL-terminates it; grows *out and *cap. The
 * output is invalid UTF-8 only if ids hold byte pieces that do not form whole
 * characters (never for ids from bpe_encode of valid UTF-8). TFM_ERR_FORMAT
 * "id N out of range (vocabulary of M pieces)", or TFM_ERR_NOMEM. */
TfmStatus bpe_decode(const Bpe *bpe, const int *ids, int n, char **out, size_t *len,
                     size_t *cap, TfmErr *err);

/* Appends the escaped form of piece text s[0..n) to *out (grown like
 * bpe_decode's buffer): bytes <= 0x20, 0x7F and '\\' become "\xHH". Escaped
 * pieces contain no spaces, so `tfm bpe encode` joins them with spaces. */
TfmStatus bpe_escape(const char *s, size_t n, char **out, size_t *len, size_t *cap,
                     TfmErr *err);

/* Reverses bpe_escape in place on s[0..*n): false when a '\\' is not followed
 * by "xHH" or a raw byte <= 0x20 or 0x7F appears. */
bool bpe_unescape(char *s, size_t *n);

/* Which kind of vocabulary: "tfm BPE", or for a SentencePiece model
 * (bpe_load and bpe_deserialize take one, by content) "SentencePiece
 * unigram" or "SentencePiece bpe". A SentencePiece vocabulary is tfm's four
 * specials and then the model's pieces (id 4 + the model's id), encoded and
 * decoded as spm_encode/spm_decode do (text/spm.h); it serializes to the
 * .model file's bytes; it has no BPE-dropout (bpe_encode_dropout ignores p)
 * and no target subset (bpe_subset_new refuses it). */
const char *bpe_kind(const Bpe *bpe);

void bpe_free(Bpe *bpe);

#endif
