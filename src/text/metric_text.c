/* metric_text: Python-string line handling for chrF and TER (see the header). */
#include "text/metric_text.h"

#include <stdlib.h>
#include <string.h>

#include "base/fnv.h"
#include "text/bleu_tokenize.h"
#include "text/unicode.h"

static bool is_space(uint32_t cp)
{
    return (unicode_props(cp) & UNI_SPACE) != 0;
}

TfmStatus mtext_prepare(MText *t, const char *line, size_t len, bool lower, TfmErr *err)
{
    const unsigned char *s = (const unsigned char *)line;
    size_t end = 0;                 /* end of the last non-space code point */
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = unicode_decode(s + i, len - i, &cp);
        i += k;
        if (!is_space(cp)) end = i;
    }
    t->text = s;
    t->len = end;
    if (!lower) return TFM_OK;
    /* rstrip first, as sacreBLEU does when it reads the file; str.lower()
     * never turns a character into whitespace or back */
    if (xgrow((void **)&t->low, &t->cap_low, 3 * end + 1, 1, err)) return err->status;
    t->len = unicode_lower_utf8(s, end, t->low);
    t->text = t->low;
    return TFM_OK;
}

TfmStatus mtext_codepoints(MText *t, bool keep_space, TfmErr *err)
{
    if (xgrow((void **)&t->cps, &t->cap_cps, t->len + 1, sizeof *t->cps, err))
        return err->status;
    size_t n = 0;
    for (size_t i = 0; i < t->len;) {
        uint32_t cp;
        i += unicode_decode(t->text + i, t->len - i, &cp);
        if (keep_space || !is_space(cp)) t->cps[n++] = cp;
    }
    t->n_cps = n;
    return TFM_OK;
}

TfmStatus mtext_split(MText *t, TfmErr *err)
{
    t->n_words = 0;
    size_t start = 0;
    bool in_word = false;
    for (size_t i = 0; i < t->len;) {
        uint32_t cp;
        size_t k = unicode_decode(t->text + i, t->len - i, &cp);
        bool sp = is_space(cp);
        if (!sp && !in_word) { start = i; in_word = true; }
        if (sp && in_word) {
            if (xgrow((void **)&t->words, &t->cap_words, t->n_words + 1, sizeof *t->words, err))
                return err->status;
            t->words[t->n_words++] = (MTextSpan){start, i - start};
            in_word = false;
        }
        i += k;
    }
    if (in_word) {
        if (xgrow((void **)&t->words, &t->cap_words, t->n_words + 1, sizeof *t->words, err))
            return err->status;
        t->words[t->n_words++] = (MTextSpan){start, t->len - start};
    }
    return TFM_OK;
}

void mtext_free(MText *t)
{
    free(t->cps);
    free(t->words);
    free(t->low);
    *t = (MText){0};
}

/* ---- word ids ---- */

void wordids_reset(WordIds *w)
{
    hidx_reset(&w->index);
    w->n_bytes = 0;
}

TfmStatus wordids_add(WordIds *w, const unsigned char *p, size_t n, uint32_t *id, TfmErr *err)
{
    const uint32_t next = w->index.n;
    if (hidx_room(&w->index, 256, err) ||
        xgrow((void **)&w->word, &w->cap_word, (size_t)next + 1, sizeof *w->word, err) ||
        xgrow((void **)&w->bytes, &w->cap_bytes, w->n_bytes + n + 1, 1, err))
        return err->status;
    const uint64_t h = fnv_hash_bytes(p, n);
    const WordKey k = {w, p, n};
    const size_t i = hidx_probe(&w->index, h, wordids_same, &k);
    if (w->index.slot[i]) {
        *id = w->index.slot[i] - 1;
        return TFM_OK;
    }
    memcpy(w->bytes + w->n_bytes, p, n);
    w->word[next] = (MTextSpan){w->n_bytes, n};
    w->n_bytes += n;
    *id = hidx_put(&w->index, i, h);
    return TFM_OK;
}

void wordids_free(WordIds *w)
{
    free(w->bytes);
    free(w->word);
    hidx_free(&w->index);
    *w = (WordIds){0};
}
