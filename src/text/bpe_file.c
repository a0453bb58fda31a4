/* bpe_file: the vocabulary file (docs/vocab-format.md): writing it
 * (bpe_serialize, bpe_save) and reading it back with full validation
 * (bpe_load, bpe_deserialize). */
#include "text/bpe.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "text/bpe_internal.h"
#include "text/spm.h"
#include "base/text.h"

#define BPE_MAGIC "tfm-bpe 1"
/* A piece is at most a marker and BPE_MAX_WORD_CHARS characters of 4 bytes,
 * each byte escaped as \xNN at worst: about 1 KB; longer lines are damage. */
enum { VOCAB_MAX_LINE = 4096 };

static const char *const kind_names[] = {"special", "byte", "marker", "char", "merged"};

char *bpe_serialize(const Bpe *b, size_t *out_len)
{
    if (b->spm) return bpe_spm_serialize(b, out_len);   /* the .model file's bytes */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    char tmp[96];
    TfmErr e;
    int n = snprintf(tmp, sizeof tmp, BPE_MAGIC "\npieces %d merges %d\n", b->n_pieces, b->n_merges);
    if (bpe_buf_append(&buf, &len, &cap, tmp, (size_t)n, &e)) goto fail;
    for (int id = 0; id < b->n_pieces; id++) {
        n = snprintf(tmp, sizeof tmp, "%d %s ", id, kind_names[b->kind[id]]);
        if (bpe_buf_append(&buf, &len, &cap, tmp, (size_t)n, &e)) goto fail;
        if (bpe_escape(b->pool + b->off[id], b->len[id], &buf, &len, &cap, &e)) goto fail;
        if (bpe_buf_append(&buf, &len, &cap, "\n", 1, &e)) goto fail;
    }
    for (int r = 0; r < b->n_merges; r++) {
        n = snprintf(tmp, sizeof tmp, "merge %d %d\n", b->merges[3 * r], b->merges[3 * r + 1]);
        if (bpe_buf_append(&buf, &len, &cap, tmp, (size_t)n, &e)) goto fail;
    }
    *out_len = len;
    return buf;
fail:
    free(buf);
    return NULL;
}

TfmStatus bpe_save(const Bpe *b, const char *path, TfmErr *err)
{
    size_t len = 0;
    char *data = bpe_serialize(b, &len);
    if (!data) return err_set(err, TFM_ERR_NOMEM, "%s: out of memory", path);
    AtomicFile af;
    TfmStatus st = atomic_open(&af, path, err);
    if (st == TFM_OK) {
        if (fwrite(data, 1, len, af.f) != len) {
            st = err_set(err, TFM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
            atomic_abort(&af);
        } else {
            st = atomic_commit(&af, err);
        }
    }
    free(data);
    return st;
}

TfmStatus bpe_load(Bpe **out, const char *path, TfmErr *err)
{
    *out = NULL;
    if (!*path) return err_set(err, TFM_ERR_IO, "vocabulary path is empty");
    if (spm_file_sniff(path)) {         /* a SentencePiece model, by its content */
        Spm *m = NULL;
        TfmStatus st = spm_load(&m, path, err);
        if (st == TFM_OK && (st = bpe_spm_wrap(out, m, err)) == TFM_ERR_FORMAT)
            err_prefix(err, "%s: ", path);
        return st;
    }
    /* a regular file: a FIFO would block, a device (/dev/zero) never end */
    FILE *f = text_open_regular(path, err);
    if (!f) return err->status;
    char *data = NULL;
    size_t len = 0, cap = 0, line_start = 0;
    TfmStatus st = TFM_OK;
    for (;;) {
        if ((st = xgrow((void **)&data, &cap, len + 65536, 1, err))) goto done;
        size_t k = fread(data + len, 1, cap - len, f);
        len += k;
        if (k == 0) break;
        /* A large file that is not a vocabulary fails on its first line or
         * its first overlong line, not after all of it is in memory:
         * bpe_deserialize finds the fault in what has been read. */
        const char *nl = memrchr(data + len - k, '\n', k);
        line_start = nl ? (size_t)(nl + 1 - data) : line_start;
        if (len - line_start > VOCAB_MAX_LINE || memcmp(data, "tfm-bpe ", len < 8 ? len : 8) != 0) {
            st = bpe_deserialize(out, data, len, path, err);
            goto done;
        }
    }
    if (ferror(f)) {
        st = err_set(err, TFM_ERR_IO, "%s: read error: %s", path, strerror(errno ? errno : EIO));
        goto done;
    }
    st = bpe_deserialize(out, data, len, path, err);
done:
    fclose(f);
    free(data);
    return st;
}

/* Parses a decimal int in [0, INT_MAX] that spans s[0..n) exactly. */
static bool parse_int(const char *s, size_t n, int *v)
{
    if (n == 0 || n > 10) return false;
    long long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        x = x * 10 + (s[i] - '0');
    }
    if (x > INT_MAX) return false;
    *v = (int)x;
    return true;
}

/* Splits line[0..n) into at most max fields at single spaces; the last field
 * takes the rest. Returns the number of fields, or -1 on an empty field. */
static int split_fields(const char *line, size_t n, int max, const char **f, size_t *fl)
{
    int k = 0;
    size_t i = 0;
    while (k < max) {
        size_t j = i;
        if (k < max - 1) while (j < n && line[j] != ' ') j++;
        else j = n;
        if (j == i) return -1;
        f[k] = line + i;
        fl[k++] = j - i;
        if (j >= n) break;
        i = j + 1;
    }
    return k;
}

static bool field_is(const char *f, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(f, word, n) == 0;
}

static int count_chars(const char *s, size_t n, bool *marker_inside)
{
    int k = 0;
    *marker_inside = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)text_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (cp == MARKER_CP && k > 0) *marker_inside = true;
        k++;
    }
    return k;
}

/* Whether piece `id` of `kind` with this text breaks the format's rules
 * (ids fix the kinds of the first pieces; texts must fit their kind): 0 when
 * it is fine, else 1 with the reason in why. */
static int piece_problem(int id, int kind, const char *text, size_t tl, char *why, size_t cap)
{
    const int want = id < BPE_N_SPECIAL ? KIND_SPECIAL : id < BPE_MARKER ? KIND_BYTE
                   : id == BPE_MARKER ? KIND_MARKER : -1;
#define WHY(...) return snprintf(why, cap, __VA_ARGS__), 1
    if (want >= 0 && kind != want) WHY("piece %d must be of kind '%s'", id, kind_names[want]);
    if (want < 0 && kind != KIND_CHAR && kind != KIND_MERGED)
        WHY("piece %d must be of kind 'char' or 'merged'", id);
    if (kind == KIND_SPECIAL &&
        !(tl == strlen(bpe_special_names[id]) && memcmp(text, bpe_special_names[id], tl) == 0))
        WHY("piece %d must be %s", id, bpe_special_names[id]);
    if (kind == KIND_BYTE) {
        char want_name[8];
        size_t wl = bpe_byte_piece_name(id - BPE_BYTE0, want_name);
        if (!(tl == wl && memcmp(text, want_name, wl) == 0)) WHY("piece %d must be %s", id, want_name);
    }
    if (kind == KIND_MARKER && !(tl == 3 && memcmp(text, MARKER_UTF8, 3) == 0))
        WHY("piece %d must be the marker " MARKER_UTF8, id);
    if (kind == KIND_CHAR || kind == KIND_MERGED) {
        size_t bad;
        if (!text_utf8_valid(text, tl, &bad)) WHY("piece text is not valid UTF-8");
        if (memchr(text, ' ', tl)) WHY("piece text contains a space");
        bool inside;
        int chars = count_chars(text, tl, &inside);
        if (kind == KIND_CHAR && (chars != 1 || (unsigned char)text[0] < 0x80))
            WHY("a char piece must be one non-ASCII character");
        if (kind == KIND_CHAR && tl == 3 && memcmp(text, MARKER_UTF8, 3) == 0)
            WHY("a char piece cannot be the marker");
        if (kind == KIND_MERGED && chars < 2) WHY("a merged piece must have two characters or more");
        if (inside) WHY("the marker may only start a piece");
    }
#undef WHY
    return 0;
}

/* Reads the line "ID KIND TEXT" of piece `id` into *kind and the unescaped
 * text (*text, grown as needed; *tl bytes): 0 when it is a valid new piece,
 * 1 with the reason in why, -1 when out of memory (err set). */
static int piece_line(const Bpe *b, int id, const char *line, size_t n, char **text,
                      size_t *text_cap, int *kind, size_t *tl, char *why, size_t cap, TfmErr *err)
{
    const char *f[3];
    size_t fl[3];
    int got_id;
    *kind = -1;
    if (split_fields(line, n, 3, f, fl) != 3 || !parse_int(f[0], fl[0], &got_id))
        return snprintf(why, cap, "expected 'ID KIND TEXT'"), 1;
    if (got_id != id) return snprintf(why, cap, "expected piece id %d, got %d", id, got_id), 1;
    for (int k = 0; k < 5; k++)
        if (field_is(f[1], fl[1], kind_names[k])) *kind = k;
    if (*kind < 0)
        return snprintf(why, cap, "unknown piece kind '%.*s'", (int)(fl[1] > 20 ? 20 : fl[1]),
                        f[1]), 1;
    *tl = fl[2];
    if (xgrow((void **)text, text_cap, *tl + 1, 1, err)) return -1;
    memcpy(*text, f[2], *tl);
    if (!bpe_unescape(*text, tl))
        return snprintf(why, cap, "bad escape or raw control byte in piece text"), 1;
    if (piece_problem(id, *kind, *text, *tl, why, cap)) return 1;
    if (bpe_piece_id(b, *text, *tl) >= 0) return snprintf(why, cap, "duplicate piece"), 1;
    return 0;
}

TfmStatus bpe_deserialize(Bpe **out, const char *buf, size_t len, const char *name, TfmErr *err)
{
    *out = NULL;
    if (spm_sniff(buf, len)) {
        Spm *m = NULL;
        TfmStatus st = spm_from_bytes(&m, buf, len, name, err);
        if (st == TFM_OK && (st = bpe_spm_wrap(out, m, err)) == TFM_ERR_FORMAT)
            err_prefix(err, "%s: ", name);
        return st;
    }
    Bpe *b = bpe_alloc(err);
    if (!b) return TFM_ERR_NOMEM;
    TfmStatus st = TFM_OK;
    char *text = NULL;
    size_t text_cap = 0;
    int *produced_by = NULL;
    U64Map seen = {0};
    long line_no = 0;
    size_t pos = 0;
    int n_pieces = 0, n_merges = 0;
    const char *line;
    size_t n;

#define BAD(...) do { st = err_set(err, TFM_ERR_FORMAT, __VA_ARGS__); \
                      err_prefix(err, "%s: line %ld: ", name, line_no); goto fail; } while (0)
#define NEXT_LINE() do { \
        if (pos >= len) { line_no++; BAD("unexpected end of file"); } \
        const char *nl_ = memchr(buf + pos, '\n', len - pos); \
        line = buf + pos; n = nl_ ? (size_t)(nl_ - line) : len - pos; \
        pos += n + (nl_ != NULL); line_no++; \
        if (line_no > 1 && n > VOCAB_MAX_LINE) BAD("line longer than %d bytes", VOCAB_MAX_LINE); \
        if (n > 0 && line[n - 1] == '\r') n--; \
    } while (0)

    NEXT_LINE();
    if (!(n == strlen(BPE_MAGIC) && memcmp(line, BPE_MAGIC, n) == 0)) {
        if (n > 8 && memcmp(line, "tfm-bpe ", 8) == 0)
            BAD("unsupported vocabulary version '%.*s' (expected 1)", (int)(n - 8 > 20 ? 20 : n - 8), line + 8);
        BAD("not a tfm-bpe vocabulary (expected '%s')", BPE_MAGIC);
    }
    NEXT_LINE();
    {
        const char *f[4];
        size_t fl[4];
        if (split_fields(line, n, 4, f, fl) != 4 || !field_is(f[0], fl[0], "pieces") ||
            !field_is(f[2], fl[2], "merges") || !parse_int(f[1], fl[1], &n_pieces) ||
            !parse_int(f[3], fl[3], &n_merges))
            BAD("expected 'pieces N merges M'");
        if (n_pieces < BPE_MIN_VOCAB || n_pieces > BPE_MAX_VOCAB)
            BAD("piece count %d out of range [%d, %d]", n_pieces, BPE_MIN_VOCAB, BPE_MAX_VOCAB);
        if (n_merges > n_pieces * 4 + 1024)   /* duplicates are rare; this bounds the work */
            BAD("merge count %d is implausible for %d pieces", n_merges, n_pieces);
    }
    for (int id = 0; id < n_pieces; id++) {
        NEXT_LINE();
        int kind;
        size_t tl;
        char why[96];
        const int bad = piece_line(b, id, line, n, &text, &text_cap, &kind, &tl, why, sizeof why, err);
        if (bad < 0) { st = err->status; goto fail; }
        if (bad) BAD("%s", why);
        if (bpe_add_piece(b, kind, text, tl, err) < 0) { st = err->status; goto fail; }
    }
    produced_by = xcalloc((size_t)n_pieces, sizeof *produced_by, err);
    if (!produced_by) { st = TFM_ERR_NOMEM; goto fail; }
    if ((st = u64map_init(&seen, (size_t)n_merges, err))) goto fail;
    for (int r = 0; r < n_merges; r++) {
        NEXT_LINE();
        const char *f[3];
        size_t fl[3];
        int l, rr;
        if (split_fields(line, n, 3, f, fl) != 3 || !field_is(f[0], fl[0], "merge") ||
            !parse_int(f[1], fl[1], &l) || !parse_int(f[2], fl[2], &rr))
            BAD("expected 'merge LEFT RIGHT'");
        if (l >= n_pieces || rr >= n_pieces || !bpe_mergeable(b, l) || !bpe_mergeable(b, rr))
            BAD("merge %d %d: not two mergeable pieces (printable ASCII, marker, char or "
                "merged)", l, rr);
        size_t ll = b->len[l], rl = b->len[rr];
        if ((st = xgrow((void **)&text, &text_cap, ll + rl + 1, 1, err))) goto fail;
        memcpy(text, b->pool + b->off[l], ll);
        memcpy(text + ll, b->pool + b->off[rr], rl);
        int c = bpe_piece_id(b, text, ll + rl);
        if (c < 0 || b->kind[c] != KIND_MERGED) BAD("merge %d %d produces no merged piece", l, rr);
        uint64_t *v = u64map_slot(&seen, (uint64_t)l << 32 | (uint32_t)rr, err);
        if (!v) { st = TFM_ERR_NOMEM; goto fail; }
        if (*v) BAD("duplicate merge %d %d", l, rr);
        *v = 1;
        produced_by[c] = 1;
        if ((st = bpe_add_merge(b, l, rr, c, err))) goto fail;
    }
    if (pos < len) {
        line_no++;
        BAD("unexpected text after the last merge");
    }
    for (int id = BPE_MARKER + 1; id < n_pieces; id++)
        if (b->kind[id] == KIND_MERGED && !produced_by[id]) {
            line_no = 3 + id;
            BAD("merged piece %d is produced by no merge", id);
        }
#undef BAD
#undef NEXT_LINE
    if ((st = bpe_index(b, err))) goto fail;
    *out = b;
    b = NULL;
fail:
    bpe_free(b);
    free(text);
    free(produced_by);
    u64map_free(&seen);
    return st;
}
