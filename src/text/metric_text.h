/* metric_text: the line handling chrF and TER share, done as sacreBLEU does
 * it on Python strings: str.rstrip(), str.lower(), the code points of the
 * line, the words of str.split(), and per-segment word ids (two words get one
 * id exactly when their bytes are equal). Not a tokenizer: BLEU's tokenizers
 * are in bleu_tokenize.c. Private to chrf.c and ter.c.
 *
 * Usage, per line:
 *   mtext_prepare(&t, line, len, lowercase, err);  // t.text, t.len
 *   mtext_codepoints(&t, keep_space, err);          // t.cps, t.n_cps
 *   mtext_split(&t, err);                           // t.words, t.n_words */
#ifndef TFM_METRIC_TEXT_H
#define TFM_METRIC_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "base/fnv.h"
#include "base/hash_index.h"

typedef struct { size_t off, len; } MTextSpan;

/* One preprocessed line and its scratch buffers, reused line after line.
 * Zero-initialize; free with mtext_free. */
typedef struct {
    const unsigned char *text;      /* the line after rstrip (+ lower) */
    size_t len;
    uint32_t *cps;                  /* code points of text (see mtext_codepoints) */
    size_t n_cps, cap_cps;
    MTextSpan *words;               /* byte spans in text (see mtext_split) */
    size_t n_words, cap_words;
    unsigned char *low;             /* lowercased bytes, when lowercasing */
    size_t cap_low;
} MText;

/* Python's line.rstrip(), then line.lower() when `lower`. line must be valid
 * UTF-8 (the caller checks) and outlive t->text when not lowercasing. */
TfmStatus mtext_prepare(MText *t, const char *line, size_t len, bool lower, TfmErr *err);

/* t->cps = the code points of t->text; all of them when keep_space, else
 * those that are not Python whitespace (sacreBLEU's ''.join(line.split())). */
TfmStatus mtext_codepoints(MText *t, bool keep_space, TfmErr *err);

/* t->words = the byte spans of t->text.split(). */
TfmStatus mtext_split(MText *t, TfmErr *err);

void mtext_free(MText *t);

/* Word -> id map, ids 0, 1, 2, ... in the order words are first seen: the
 * one string table of text/'s metrics, BLEU's tokens (over a whole corpus),
 * chrF's and TER's words (emptied at each new segment, in the time of the
 * words it held); a base/hash_index.h table over the words' bytes. */
typedef struct {
    unsigned char *bytes;           /* the words since the last reset, back to back */
    size_t n_bytes, cap_bytes;
    MTextSpan *word;                /* id -> bytes */
    size_t cap_word;
    HashIndex index;                /* ids by their words' hashes */
} WordIds;

/* Forgets every word (ids restart at 0). */
void wordids_reset(WordIds *w);

/* The id of word p[0..n), a new one if unseen since the last reset (the
 * lookup is inline: it is the metrics' inner loop). */
static inline TfmStatus wordids_get(WordIds *w, const unsigned char *p, size_t n, uint32_t *id,
                                    TfmErr *err);

/* Whether word p[0..n) has an id (then *id), without adding it. */
static inline bool wordids_find(const WordIds *w, const unsigned char *p, size_t n, uint32_t *id);

/* wordids_get's slow path: grows the table, adds the word (metric_text.c). */
TfmStatus wordids_add(WordIds *w, const unsigned char *p, size_t n, uint32_t *id, TfmErr *err);

/* A word being looked up (hash_index's HashSame context). */
typedef struct {
    const WordIds *w;
    const unsigned char *p;
    size_t n;
} WordKey;

static inline bool wordids_same(const void *ctx, uint32_t id)
{
    const WordKey *k = ctx;
    const MTextSpan *s = &k->w->word[id];
    return s->len == k->n && memcmp(k->w->bytes + s->off, k->p, k->n) == 0;
}

static inline bool wordids_find(const WordIds *w, const unsigned char *p, size_t n, uint32_t *id)
{
    const WordKey k = {w, p, n};
    const long got = hidx_find(&w->index, fnv_hash_bytes(p, n), wordids_same, &k);
    if (got < 0) return false;
    *id = (uint32_t)got;
    return true;
}

static inline TfmStatus wordids_get(WordIds *w, const unsigned char *p, size_t n, uint32_t *id,
                                    TfmErr *err)
{
    if (wordids_find(w, p, n, id)) return TFM_OK;
    return wordids_add(w, p, n, id, err);
}

void wordids_free(WordIds *w);

#endif
