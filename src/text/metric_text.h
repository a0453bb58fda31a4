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
 * words it held). Slots of 4 bytes: the table is the metrics' inner loop,
 * and its misses are what it costs. */
typedef struct {
    unsigned char *bytes;           /* the words since the last reset, back to back */
    size_t n_bytes, cap_bytes;
    MTextSpan *word;                /* id -> bytes */
    uint32_t *home;                 /* id -> its slot, for the reset */
    size_t n_word, cap_word, cap_home;
    uint32_t *slot;                 /* open addressing: id + 1, 0 = empty */
    size_t n_slots;
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

/* The slot of word p[0..n): its own, or the free one where it belongs. */
static inline size_t wordids_probe(const WordIds *w, const unsigned char *p, size_t n)
{
    size_t mask = w->n_slots - 1, h = (size_t)fnv_hash_bytes(p, n) & mask;
    for (; w->slot[h]; h = (h + 1) & mask) {
        const MTextSpan *s = &w->word[w->slot[h] - 1];
        if (s->len == n && memcmp(w->bytes + s->off, p, n) == 0) break;
    }
    return h;
}

static inline bool wordids_find(const WordIds *w, const unsigned char *p, size_t n, uint32_t *id)
{
    if (w->n_slots == 0) return false;
    const uint32_t slot = w->slot[wordids_probe(w, p, n)];
    if (!slot) return false;
    *id = slot - 1;
    return true;
}

static inline TfmStatus wordids_get(WordIds *w, const unsigned char *p, size_t n, uint32_t *id,
                                    TfmErr *err)
{
    if ((w->n_word + 1) * 2 <= w->n_slots && wordids_find(w, p, n, id)) return TFM_OK;
    return wordids_add(w, p, n, id, err);
}

void wordids_free(WordIds *w);

#endif
