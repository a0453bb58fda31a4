/* test_spm: SentencePiece models built here byte by byte (a small protobuf
 * writer), so each behaviour has a known answer: unigram's best path, bpe's
 * merge order, byte fallback, runs of unknown characters, a hand-made
 * charsmap, decoding; damaged files at every truncation, and the features
 * refused by name. tests/cli_spm.sh compares with spm_encode itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "text/bpe.h"
#include "text/bpe_subset.h"
#include "text/spm.h"

typedef struct {
    unsigned char b[1 << 16];
    size_t n;
} Buf;

static void put_varint(Buf *o, uint64_t v)
{
    do {
        unsigned char c = v & 0x7F;
        v >>= 7;
        o->b[o->n++] = c | (v ? 0x80 : 0);
    } while (v);
}
static void put_tag(Buf *o, int field, int wire) { put_varint(o, (uint64_t)field << 3 | wire); }
static void put_bytes(Buf *o, int field, const void *s, size_t n)
{
    put_tag(o, field, 2);
    put_varint(o, n);
    memcpy(o->b + o->n, s, n);
    o->n += n;
}
static void put_str(Buf *o, int field, const char *s) { put_bytes(o, field, s, strlen(s)); }
static void put_int(Buf *o, int field, uint64_t v)
{
    put_tag(o, field, 0);
    put_varint(o, v);
}
static void put_float(Buf *o, int field, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put_tag(o, field, 5);
    for (int i = 0; i < 4; i++) o->b[o->n++] = (unsigned char)(u >> (8 * i));
}

static void put_piece(Buf *o, const char *text, float score, int type)
{
    Buf p = {.n = 0};
    put_str(&p, 1, text);
    put_float(&p, 2, score);
    if (type != 1) put_int(&p, 3, (uint64_t)type);
    put_bytes(o, 1, p.b, p.n);
}

typedef struct {
    int model_type;
    bool byte_fallback, suffix;
    const void *charsmap;
    size_t charsmap_len;
    bool denorm;
} Opts;

/* A model: <unk> <s> </s>, the given pieces (text, score), optionally the
 * 256 byte pieces, a trainer_spec and a normalizer_spec (identity unless a
 * charsmap is given). */
static void build(Buf *o, const char *const *pieces, const float *scores, int n, Opts opt)
{
    o->n = 0;
    put_piece(o, "<unk>", 0, 2);
    put_piece(o, "<s>", 0, 3);
    put_piece(o, "</s>", 0, 3);
    for (int i = 0; i < n; i++) put_piece(o, pieces[i], scores[i], 1);
    if (opt.byte_fallback)
        for (int b = 0; b < 256; b++) {
            char t[8];
            snprintf(t, sizeof t, "<0x%02X>", b);
            put_piece(o, t, 0, 6);
        }
    Buf t = {.n = 0};
    put_int(&t, 3, (uint64_t)(opt.model_type ? opt.model_type : 1));
    if (opt.suffix) put_int(&t, 24, 1);
    if (opt.byte_fallback) put_int(&t, 35, 1);
    put_bytes(o, 2, t.b, t.n);
    Buf nm = {.n = 0};
    put_str(&nm, 1, opt.charsmap ? "custom" : "identity");
    if (opt.charsmap) put_bytes(&nm, 2, opt.charsmap, opt.charsmap_len);
    put_bytes(o, 3, nm.b, nm.n);
    if (opt.denorm) {
        Buf d = {.n = 0};
        put_bytes(&d, 2, "\x05\0\0\0abcdefgh", 12);
        put_bytes(o, 5, d.b, d.n);
    }
}

/* The pieces of line, joined by spaces, into a static buffer. */
static const char *enc(const Spm *m, const char *line)
{
    static char out[4096];
    SpmWork w = {0};
    TfmErr err = {0};
    size_t n = 0;
    out[0] = '\0';
    if (spm_encode(m, &w, line, strlen(line), &err) == TFM_OK)
        for (size_t i = 0; i < w.n_tok; i++)
            n += (size_t)snprintf(out + n, sizeof out - n, "%s%.*s", i ? " " : "", (int)w.tok[i].len,
                                  w.tok[i].s);
    spm_work_free(&w);
    return out;
}

static const char *dec(const Spm *m, const char *pieces)
{
    static char out[4096];
    SpmTok tok[64];
    size_t n = 0;
    for (const char *p = pieces; *p && n < 64;) {
        const char *q = strchr(p, ' ');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        tok[n] = (SpmTok){spm_piece_id(m, p, len), (uint32_t)len, p};
        n++;
        p += len + (q != NULL);
    }
    char *s = NULL;
    size_t len = 0, cap = 0;
    TfmErr err = {0};
    CHECK_EQ_INT(spm_decode(m, tok, n, &s, &len, &cap, &err), TFM_OK);
    snprintf(out, sizeof out, "%s", s);
    free(s);
    return out;
}

static Spm *load(const Buf *o, TfmErr *err)
{
    Spm *m = NULL;
    *err = (TfmErr){0};
    if (spm_from_bytes(&m, o->b, o->n, "m.model", err) != TFM_OK) return NULL;
    return m;
}

static Buf buf;

TEST(spm_unigram_best_path)
{
    /* "▁ab": ▁ab (-5) alone beats ▁ + ab (-1 + -3 = -4)? No: -4 > -5, so
     * the two pieces win; raising ▁ab to -3.5 makes it win. */
    const char *p[] = {"\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "ab"};
    float s[] = {-1, -2, -2, -3, -5};
    build(&buf, p, s, 5, (Opts){0});
    TfmErr err;
    Spm *m = load(&buf, &err);
    CHECK(m);
    CHECK_STR(spm_kind(m), "unigram");
    CHECK_STR(enc(m, "ab"), "\xE2\x96\x81 ab");
    CHECK_STR(enc(m, "  ab  ba "), "\xE2\x96\x81 ab \xE2\x96\x81 b a");
    spm_free(m);
    s[4] = -3.5f;
    build(&buf, p, s, 5, (Opts){0});
    CHECK((m = load(&buf, &err)));
    CHECK_STR(enc(m, "ab"), "\xE2\x96\x81" "ab");
    /* unknown characters in a row are one <unk> piece holding their text */
    CHECK_STR(enc(m, "a\xC3\xA9\xC3\xA9 b"), "\xE2\x96\x81 a \xC3\xA9\xC3\xA9 \xE2\x96\x81 b");
    SpmWork w = {0};
    CHECK_EQ_INT(spm_encode(m, &w, "\xC3\xA9\xC3\xA9", 4, &err), TFM_OK);
    CHECK_EQ_INT(w.n_tok, 2);
    CHECK_EQ_INT(w.tok[1].id, spm_unk_id(m));
    /* invalid UTF-8 is U+FFFD, one per byte (here unknown: one run) */
    CHECK_EQ_INT(spm_encode(m, &w, "a\xFF\xC3", 3, &err), TFM_OK);
    CHECK_EQ_INT(w.n_tok, 3);
    CHECK_EQ_INT(w.tok[2].len, 6);
    CHECK(memcmp(w.tok[2].s, "\xEF\xBF\xBD\xEF\xBF\xBD", 6) == 0);
    CHECK_EQ_INT(spm_encode(m, &w, "   ", 3, &err), TFM_OK);
    CHECK_EQ_INT(w.n_tok, 0);
    spm_work_free(&w);
    spm_free(m);
}

TEST(spm_bpe_merges_by_score)
{
    /* "abc": bc (-1) merges before ab (-2); then a+bc is no piece. */
    const char *p[] = {"\xE2\x96\x81", "a", "b", "c", "ab", "bc", "\xE2\x96\x81" "a"};
    float s[] = {-10, -10, -10, -10, -2, -1, -3};
    build(&buf, p, s, 7, (Opts){.model_type = 2});
    TfmErr err;
    Spm *m = load(&buf, &err);
    CHECK(m);
    CHECK_STR(spm_kind(m), "bpe");
    CHECK_STR(enc(m, "abc"), "\xE2\x96\x81" "a bc");
    CHECK_STR(enc(m, "ab"), "\xE2\x96\x81 ab");      /* ab (-2) before ▁a (-3) */
    spm_free(m);
}

TEST(spm_byte_fallback)
{
    const char *p[] = {"\xE2\x96\x81", "a"};
    float s[] = {-1, -1};
    build(&buf, p, s, 2, (Opts){.byte_fallback = true});
    TfmErr err;
    Spm *m = load(&buf, &err);
    CHECK(m);
    CHECK_STR(enc(m, "a\xC3\xA9"), "\xE2\x96\x81 a <0xC3> <0xA9>");
    CHECK_STR(dec(m, "\xE2\x96\x81 a <0xC3> <0xA9>"), "a\xC3\xA9");
    CHECK_STR(dec(m, "<0xC3> a <0xA9> <0x41>"), "\xEF\xBF\xBD" "a\xEF\xBF\xBD" "A");
    spm_free(m);
    build(&buf, p, s, 2, (Opts){.model_type = 2, .byte_fallback = true});
    CHECK((m = load(&buf, &err)));
    CHECK_STR(enc(m, "a\xC3\xA9"), "\xE2\x96\x81 a <0xC3> <0xA9>");
    spm_free(m);
}

TEST(spm_decode_rules)
{
    const char *p[] = {"\xE2\x96\x81", "a", "\xE2\x96\x81" "a", "b"};
    float s[] = {-1, -1, -1, -1};
    build(&buf, p, s, 4, (Opts){0});
    TfmErr err;
    Spm *m = load(&buf, &err);
    CHECK(m);
    CHECK_STR(dec(m, "\xE2\x96\x81" "a b \xE2\x96\x81" "a"), "ab a");
    CHECK_STR(dec(m, "<s> \xE2\x96\x81 \xE2\x96\x81" "a </s>"), "a");   /* leading ▁s go */
    CHECK_STR(dec(m, "<unk> a"), " \xE2\x81\x87 a");
    CHECK_STR(dec(m, "xyz a"), "xyza");     /* an unknown piece is its text */
    spm_free(m);
}

/* A charsmap of one rule, "x" -> "y", as darts-clone lays it out: the root's
 * children at 256 ^ byte, the leaf of "x" at its child ^ 1. */
static size_t make_charsmap(unsigned char *blob, uint32_t value)
{
    enum { N = 512 };
    static uint32_t u[N];
    memset(u, 0, sizeof u);
    u[0] = 256u << 10;
    uint32_t child = 256 ^ 'x';
    u[child] = 'x' | 1u << 8 | 1u << 10;
    u[child ^ 1] = 0x80000000u | value;
    uint32_t size = N * 4;
    memcpy(blob, &size, 4);
    memcpy(blob + 4, u, sizeof u);
    memcpy(blob + 4 + sizeof u, "y\0", 2);
    return 4 + sizeof u + 2;
}

TEST(spm_charsmap)
{
    static unsigned char blob[4 + 2048 + 2];
    size_t n = make_charsmap(blob, 0);
    const char *p[] = {"\xE2\x96\x81", "y", "x"};
    float s[] = {-1, -1, -1};
    build(&buf, p, s, 3, (Opts){.charsmap = blob, .charsmap_len = n});
    TfmErr err;
    Spm *m = load(&buf, &err);
    CHECK(m);
    CHECK_STR(enc(m, "xyx"), "\xE2\x96\x81 y y y");
    spm_free(m);
    /* a leaf pointing past the strings, a trie larger than its blob */
    make_charsmap(blob, 7);
    build(&buf, p, s, 3, (Opts){.charsmap = blob, .charsmap_len = n});
    CHECK(!load(&buf, &err));
    CHECK_STR(err.msg, "m.model: damaged SentencePiece model (normalization rules point "
                       "outside their table)");
    make_charsmap(blob, 0);
    build(&buf, p, s, 3, (Opts){.charsmap = blob, .charsmap_len = 100});
    CHECK(!load(&buf, &err));
    CHECK_STR(err.msg, "m.model: damaged SentencePiece model (precompiled_charsmap is broken)");
}

TEST(spm_truncated_everywhere)
{
    const char *p[] = {"\xE2\x96\x81", "a", "b"};
    float s[] = {-1, -2, -3};
    build(&buf, p, s, 3, (Opts){.byte_fallback = true});
    TfmErr err;
    Spm *m = load(&buf, &err);
    CHECK(m);
    spm_free(m);
    /* every strict prefix is refused as damaged (the normalizer_spec comes
     * last), none crashes */
    for (size_t cut = 0; cut < buf.n; cut++) {
        m = NULL;
        err = (TfmErr){0};
        TfmStatus st = spm_from_bytes(&m, buf.b, cut, "m.model", &err);
        if (st != TFM_ERR_FORMAT) test_fail(__FILE__, __LINE__, "cut at %zu: status %d", cut, st);
        CHECK(m == NULL);
    }
    CHECK(spm_sniff(buf.b, 16));
    CHECK(!spm_sniff("tfm-bpe 1\npieces", 16));
}

TEST(spm_refuses_features)
{
    const char *p[] = {"\xE2\x96\x81", "a"};
    float s[] = {-1, -1};
    TfmErr err;
    build(&buf, p, s, 2, (Opts){.model_type = 3});
    CHECK(!load(&buf, &err));
    CHECK_STR(err.msg, "m.model: SentencePiece model type word is not supported (only unigram and bpe)");
    build(&buf, p, s, 2, (Opts){.model_type = 4});
    CHECK(!load(&buf, &err));
    CHECK_STR(err.msg, "m.model: SentencePiece model type char is not supported (only unigram and bpe)");
    build(&buf, p, s, 2, (Opts){.suffix = true});
    CHECK(!load(&buf, &err));
    CHECK_STR(err.msg, "m.model: SentencePiece option treat_whitespace_as_suffix is not supported");
    build(&buf, p, s, 2, (Opts){.denorm = true});
    CHECK(!load(&buf, &err));
    CHECK_STR(err.msg, "m.model: SentencePiece denormalization rules (denormalizer_spec) are not supported");
    const char *dup[] = {"a", "a"};
    build(&buf, dup, s, 2, (Opts){0});
    CHECK(!load(&buf, &err));
    CHECK_STR(err.msg, "m.model: piece 4 'a' is defined twice");
    /* byte pieces without byte_fallback; byte_fallback without all 256 */
    build(&buf, p, s, 2, (Opts){.byte_fallback = true});
    buf.b[buf.n] = 0;
    Buf t = {.n = 0};
    put_piece(&t, "<0x00>", 0, 6);
    Buf b2 = {.n = 0};
    put_piece(&b2, "<unk>", 0, 2);
    memcpy(b2.b + b2.n, t.b, t.n);
    b2.n += t.n;
    put_bytes(&b2, 2, "\x18\x01", 2);      /* trainer_spec {model_type: 1} */
    put_bytes(&b2, 3, "", 0);
    CHECK(!load(&b2, &err));
    CHECK_STR(err.msg, "m.model: byte piece <0x00> although byte_fallback is off");
    b2.n = 0;
    put_piece(&b2, "a", 0, 1);
    put_bytes(&b2, 2, "\x18\x01", 2);
    put_bytes(&b2, 3, "", 0);
    CHECK(!load(&b2, &err));
    CHECK_STR(err.msg, "m.model: the model has no <unk> piece");
}

/* The model behind the Bpe interface (what training, model files and
 * translation use): tfm's specials, then the model's pieces at id 4 + its
 * own; its bytes serialize as they came. */
TEST(spm_as_bpe_vocabulary)
{
    const char *p[] = {"\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "ab"};
    float s[] = {-1, -2, -2, -3, -3.5f};
    build(&buf, p, s, 5, (Opts){0});
    Bpe *b = NULL;
    TfmErr err = {0};
    CHECK_EQ_INT(bpe_deserialize(&b, (const char *)buf.b, buf.n, "m.model", &err), TFM_OK);
    CHECK_STR(bpe_kind(b), "SentencePiece unigram");
    CHECK_EQ_INT(bpe_vocab_size(b), 4 + 8);
    CHECK_STR(bpe_piece(b, TOK_PAD, NULL), "<pad>");
    CHECK_STR(bpe_piece(b, 4 + 7, NULL), "\xE2\x96\x81" "ab");
    CHECK_EQ_INT(bpe_piece_id(b, "<unk>", 5), TOK_UNK);
    CHECK_EQ_INT(bpe_piece_id(b, "ab", 2), 4 + 6);
    CHECK_EQ_INT(bpe_piece_id(b, "zz", 2), -1);
    int *ids = NULL, n = 0, cap = 0;
    CHECK_EQ_INT(bpe_encode(b, "ab ba", 5, &ids, &n, &cap, &err), TFM_OK);
    CHECK_EQ_INT(n, 4);         /* ▁ab ▁ b a */
    CHECK_EQ_INT(ids[0], 4 + 7);
    CHECK_EQ_INT(ids[1], 4 + 3);
    int with_specials[] = {TOK_BOS, ids[0], ids[1], ids[2], ids[3], TOK_UNK, TOK_EOS, TOK_PAD};
    char *out = NULL;
    size_t len = 0, ocap = 0;
    CHECK_EQ_INT(bpe_decode(b, with_specials, 8, &out, &len, &ocap, &err), TFM_OK);
    CHECK_STR(out, "ab ba \xE2\x81\x87 ");
    int bad = 12;
    CHECK_EQ_INT(bpe_decode(b, &bad, 1, &out, &len, &ocap, &err), TFM_ERR_FORMAT);
    size_t sl = 0;
    char *bytes = bpe_serialize(b, &sl);
    CHECK(bytes && sl == buf.n && memcmp(bytes, buf.b, sl) == 0);
    free(bytes);
    free(out);
    free(ids);
    bpe_free(b);
}

/* model.output_vocab "target" over a SentencePiece vocabulary: the pieces
 * every text needs are <unk>, the byte pieces, user-defined ones and those of
 * one character; a piece outside the subset is spelled in the fewest subset
 * pieces, a character no subset piece holds as its bytes (or <unk>). */
static void check_spelling(const Bpe *b, const bool *in, int id, const int *want, int n_want)
{
    BpeSubset *sub = NULL;
    TfmErr err = {0};
    CHECK_EQ_INT(bpe_subset_new(&sub, b, in, &err), TFM_OK);
    int *ids = malloc(sizeof(int)), n = 1, cap = 1;
    ids[0] = id;
    CHECK_EQ_INT(bpe_subset_apply(sub, &ids, &n, &cap, &err), TFM_OK);
    CHECK_EQ_INT(n, n_want);
    for (int i = 0; i < n && i < n_want; i++) CHECK_EQ_INT(ids[i], want[i]);
    free(ids);
    bpe_subset_free(sub);
}

TEST(spm_target_subset_spells_pieces)
{
    /* ids: 4 <unk>, 5 <s>, 6 </s>, 7 ▁, 8 a, 9 b, 10 ab, 11 ▁ab, 12 aé */
    const char *p[] = {"\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "ab", "a\xC3\xA9"};
    float s[] = {-1, -2, -2, -3, -3.5f, -4};
    for (int fallback = 0; fallback < 2; fallback++) {
        build(&buf, p, s, 6, (Opts){.byte_fallback = fallback});
        Bpe *b = NULL;
        TfmErr err = {0};
        CHECK_EQ_INT(bpe_deserialize(&b, (const char *)buf.b, buf.n, "m.model", &err), TFM_OK);
        const int V = bpe_vocab_size(b);
        bool *in = calloc((size_t)V, 1);
        bpe_subset_mark_writable(b, in);
        for (int id = 0; id < 10; id++) CHECK(in[id] == (id != 5 && id != 6));
        CHECK(!in[10] && !in[11] && !in[12]);
        for (int id = 13; id < V; id++) CHECK(in[id]);          /* the byte pieces */
        check_spelling(b, in, 10, (int[]){8, 9}, 2);
        check_spelling(b, in, 11, (int[]){7, 8, 9}, 3);
        if (fallback) check_spelling(b, in, 12, (int[]){8, 13 + 0xC3, 13 + 0xA9}, 3);
        else check_spelling(b, in, 12, (int[]){8, 4}, 2);   /* the model's <unk> */
        in[10] = true;
        check_spelling(b, in, 11, (int[]){7, 10}, 2);
        check_spelling(b, in, 10, (int[]){10}, 1);
        in[8] = false;          /* "a" is needed to write text */
        BpeSubset *sub = NULL;
        CHECK_EQ_INT(bpe_subset_new(&sub, b, in, &err), TFM_ERR_FORMAT);
        CHECK(strstr(err.msg, "piece 8 (a special, <unk>, a byte or one character) is missing"));
        free(in);
        bpe_free(b);
    }
}

/* A damaged charsmap whose root comes back to itself as a child ('a' from the
 * root leads to unit 0, which has a leaf) with the leaf's value past the
 * strings: the load-time walk marks the root seen and never checks that
 * leaf, so the search must (an out-of-bounds read under ASan before it did).
 * "a" is then no rule: it is copied as it is. */
TEST(spm_charsmap_root_loop)
{
    enum { N = 98 };
    static uint32_t u[N];
    static unsigned char blob[4 + sizeof u + 2];
    memset(u, 0, sizeof u);
    u[0] = 0x61u << 10 | 1u << 8 | 0x61;     /* offset 'a', a leaf, label 'a' */
    u[0x61] = 0x80000000u | 0x40;             /* the leaf's value: past "x\0" */
    const uint32_t size = sizeof u;
    memcpy(blob, &size, 4);
    memcpy(blob + 4, u, sizeof u);
    memcpy(blob + 4 + sizeof u, "x\0", 2);
    const char *p[] = {"\xE2\x96\x81", "a", "b", "c"};
    float s[] = {-1, -1, -1, -1};
    build(&buf, p, s, 4, (Opts){.charsmap = blob, .charsmap_len = sizeof blob});
    TfmErr err;
    Spm *m = load(&buf, &err);
    CHECK(m);
    CHECK_STR(enc(m, "abc"), "\xE2\x96\x81 a b c");
    spm_free(m);
}
