/* Tests for corpus: loading, filtering, and the batching invariants (each
 * pair exactly once per epoch, no batch over budget, masks right, same seed
 * same order). */
#include "test.h"

#include <stdlib.h>
#include <string.h>

#include "text/bpe.h"
#include "text/bpe_subset.h"
#include "train/corpus.h"
#include "train/trainer.h"

static Bpe *tiny_bpe(const char *src, const char *tgt)
{
    const char *paths[2] = {src, tgt};
    Bpe *bpe = NULL;
    TfmErr err = {0};
    if (bpe_learn(&bpe, paths, 2, 300, &err) != TFM_OK) {
        fprintf(stderr, "bpe_learn: %s\n", err.msg);
        return NULL;
    }
    return bpe;
}

/* A corpus of 200 pairs of varied length plus one empty and one long pair. */
static void write_corpus(char *src_path, char *tgt_path)
{
    size_t cap = 1 << 16;
    char *s = calloc(cap, 1), *t = calloc(cap, 1);
    size_t ns = 0, nt = 0;
    static const char *words[] = {"ein", "Hund", "läuft", "über", "die", "Wiese", "und", "bellt"};
    static const char *ewords[] = {"a", "dog", "runs", "across", "the", "meadow", "and", "barks"};
    for (int i = 0; i < 200; i++) {
        int len = 1 + (i * 7) % 9;
        for (int w = 0; w < len; w++) {
            ns += snprintf(s + ns, cap - ns, "%s%s", w ? " " : "", words[(i + w) % 8]);
            nt += snprintf(t + nt, cap - nt, "%s%s", w ? " " : "", ewords[(i * 3 + w) % 8]);
        }
        s[ns++] = '\n';
        t[nt++] = '\n';
    }
    ns += snprintf(s + ns, cap - ns, "\n");                 /* empty source */
    nt += snprintf(t + nt, cap - nt, "not empty\n");
    for (int w = 0; w < 200; w++) ns += snprintf(s + ns, cap - ns, "Wiese ");
    ns += snprintf(s + ns, cap - ns, "\n");                 /* over max_len */
    nt += snprintf(t + nt, cap - nt, "long\n");
    strcpy(src_path, test_write_file("corpus.de", s));
    strcpy(tgt_path, test_write_file("corpus.en", t));
    free(s);
    free(t);
}

TEST(test_corpus_load_filters_and_counts)
{
    char src[512], tgt[512];
    write_corpus(src, tgt);
    Bpe *bpe = tiny_bpe(src, tgt);
    CHECK(bpe != NULL);
    Corpus c;
    TfmErr err = {0};
    CHECK(corpus_load(&c, src, tgt, bpe, NULL, 60, false, &err) == TFM_OK);
    CHECK_EQ_INT(c.n_lines, 202);
    CHECK_EQ_INT(c.n_pairs, 200);
    CHECK_EQ_INT(c.skipped_empty, 1);
    CHECK_EQ_INT(c.skipped_long, 1);
    corpus_free(&c);
    bpe_free(bpe);
}

TEST(test_corpus_line_count_mismatch)
{
    char src[512], tgt[512];
    strcpy(src, test_write_file("three.de", "a\nb\nc\n"));
    strcpy(tgt, test_write_file("two.en", "a\nb\n"));
    Bpe *bpe = tiny_bpe(src, tgt);
    CHECK(bpe != NULL);
    Corpus c;
    TfmErr err = {0};
    CHECK(corpus_load(&c, src, tgt, bpe, NULL, 60, false, &err) == TFM_ERR_FORMAT);
    char want[1200];
    snprintf(want, sizeof want, "%s has 3 lines, %s has 2 lines", src, tgt);
    CHECK_STR(err.msg, want);
    bpe_free(bpe);
}

/* Checks one epoch's batches against the invariants; returns a hash of the order. */
static unsigned long check_epoch(Batcher *b, const Corpus *c, int budget)
{
    int *seen = calloc((size_t)c->n_pairs, sizeof(int));
    unsigned long h = 1469598103;
    for (long i = 0; i < b->n_batches; i++) {
        Batch bt;
        batcher_get(b, i, &bt);
        CHECK(bt.n > 0);
        CHECK((long)bt.n * (bt.src_len + bt.tgt_len) <= budget);
        for (int r = 0; r < bt.n; r++) {
            const int *s = bt.src + (long)r * bt.src_len, *in = bt.tgt_in + (long)r * bt.tgt_len,
                      *out = bt.tgt_out + (long)r * bt.tgt_len;
            int ls = 0, lt = 0;
            while (ls < bt.src_len && s[ls] != TOK_EOS) ls++;
            while (lt < bt.tgt_len && out[lt] != TOK_EOS) lt++;
            CHECK(ls < bt.src_len && lt < bt.tgt_len);       /* both sides end with </s> */
            for (int k = ls + 1; k < bt.src_len; k++) CHECK_EQ_INT(s[k], TOK_PAD);
            CHECK_EQ_INT(in[0], TOK_BOS);
            for (int k = 0; k < lt; k++) CHECK_EQ_INT(in[k + 1], out[k]);  /* shifted by one */
            for (int k = lt + 1; k < bt.tgt_len; k++) {
                CHECK_EQ_INT(out[k], TOK_PAD);
                CHECK_EQ_INT(in[k], TOK_PAD);
            }
            /* find the pair by content */
            long found = -1;
            for (long p = 0; p < c->n_pairs && found < 0; p++)
                if (!seen[p] && c->src_len[p] == ls && c->tgt_len[p] == lt &&
                    !memcmp(c->tokens + c->src_off[p], s, sizeof(int) * ls) &&
                    !memcmp(c->tokens + c->tgt_off[p], out, sizeof(int) * lt))
                    found = p;
            CHECK(found >= 0);
            if (found >= 0) seen[found] = 1;
            h = (h ^ (unsigned long)found) * 1099511628211UL;
        }
    }
    for (long p = 0; p < c->n_pairs; p++) CHECK_EQ_INT(seen[p], 1);
    free(seen);
    return h;
}

TEST(test_batcher_invariants_and_determinism)
{
    char src[512], tgt[512];
    write_corpus(src, tgt);
    Bpe *bpe = tiny_bpe(src, tgt);
    CHECK(bpe != NULL);
    Corpus c;
    TfmErr err = {0};
    CHECK(corpus_load(&c, src, tgt, bpe, NULL, 60, false, &err) == TFM_OK);
    Batcher a, b;
    int budget = 200;
    CHECK(batcher_init(&a, &c, budget, 7, true, &err) == TFM_OK);
    CHECK(batcher_init(&b, &c, budget, 7, true, &err) == TFM_OK);
    CHECK_EQ_INT(a.skipped_budget, 0);
    batcher_plan_epoch(&a, 0);
    batcher_plan_epoch(&b, 0);
    CHECK(a.n_batches > 1);
    unsigned long h0 = check_epoch(&a, &c, budget);
    CHECK(h0 == check_epoch(&b, &c, budget));        /* same seed, same order */
    batcher_plan_epoch(&a, 1);
    CHECK(h0 != check_epoch(&a, &c, budget));        /* reshuffled next epoch */
    batcher_plan_epoch(&b, 1);
    batcher_plan_epoch(&b, 0);                       /* plans depend on (seed, epoch) only */
    CHECK(h0 == check_epoch(&b, &c, budget));
    batcher_free(&a);
    batcher_free(&b);
    /* a budget too small for some pairs: they are skipped and counted */
    CHECK(batcher_init(&a, &c, 12, 7, true, &err) == TFM_OK);
    CHECK(a.skipped_budget > 0);
    batcher_plan_epoch(&a, 0);
    long served = 0;
    for (long i = 0; i < a.n_batches; i++) {
        Batch bt;
        batcher_get(&a, i, &bt);
        CHECK((long)bt.n * (bt.src_len + bt.tgt_len) <= 12);
        served += bt.n;
    }
    CHECK_EQ_INT(served + a.skipped_budget, c.n_pairs);
    batcher_free(&a);
    corpus_free(&c);
    bpe_free(bpe);
}

/* The target count a loss is averaged over, and the shares of a batch
 * (ranks, or threads under train.parallel "sentences"): every sentence in
 * exactly one share, in order, each share carrying the whole batch's count. */
TEST(test_batch_targets_and_shares)
{
    enum { N = 5, S = 3, T = 4 };
    int src[N * S], tin[N * T], tout[N * T];
    long want = 0;
    for (int i = 0; i < N * S; i++) src[i] = i % S == S - 1 ? TOK_PAD : 7;
    for (int r = 0; r < N; r++)
        for (int j = 0; j < T; j++) {
            const int pad = j > r % T;      /* row r: r % T + 1 targets */
            tin[r * T + j] = tout[r * T + j] = pad ? TOK_PAD : 9;
            want += !pad;
        }
    Batch b = {.n = N, .src_len = S, .tgt_len = T, .src = src, .tgt_in = tin, .tgt_out = tout};
    CHECK_EQ_INT(batch_targets(&b), want);
    CHECK_EQ_INT(batch_real_tokens(&b), want + N * (S - 1));
    for (int parts = 1; parts <= 7; parts++) {
        int next = 0;
        for (int k = 0; k < parts; k++) {
            Batch mine;
            batch_share(&b, k, parts, &mine);
            CHECK(mine.n >= N / parts && mine.n <= (N + parts - 1) / parts);
            CHECK(mine.src == src + next * S && mine.tgt_out == tout + next * T &&
                  mine.tgt_in == tin + next * T);
            CHECK_EQ_INT(parts == 1 ? batch_targets(&mine) : mine.loss_tokens, want);
            next += mine.n;
        }
        CHECK_EQ_INT(next, N);
    }
    b.loss_tokens = 1000;       /* a rank's slice of a larger batch keeps its count */
    Batch mine;
    batch_share(&b, 1, 2, &mine);
    CHECK_EQ_INT(mine.loss_tokens, 1000);
}

/* BPE-dropout per epoch: corpus_resegment gives each pair a finer or equal
 * segmentation of the same text, the same for the same seed, another for
 * another seed, never over max_len, and p = 0 restores the plain ids. */
TEST(test_corpus_resegment)
{
    char src[512], tgt[512];
    write_corpus(src, tgt);
    Bpe *bpe = tiny_bpe(src, tgt);
    CHECK(bpe != NULL);
    Corpus c, plain;
    TfmErr err = {0};
    CHECK(corpus_load(&plain, src, tgt, bpe, NULL, 60, false, &err) == TFM_OK);
    CHECK(corpus_load(&c, src, tgt, bpe, NULL, 60, true, &err) == TFM_OK);
    CHECK_EQ_INT(c.n_pairs, plain.n_pairs);
    long n_plain = plain.tgt_off[plain.n_pairs - 1] + plain.tgt_len[plain.n_pairs - 1];
    int *first = malloc((size_t)n_plain * 4 * sizeof *first);
    long n_first = 0;
    for (int round = 0; round < 3; round++) {
        uint64_t seed = round == 2 ? 11 : 10;      /* rounds 0 and 1 alike */
        CHECK(corpus_resegment(&c, bpe, NULL, 0.3f, seed, NULL, 16, &err) == TFM_OK);
        long n_tok = c.tgt_off[c.n_pairs - 1] + c.tgt_len[c.n_pairs - 1];
        long changed = 0;
        char *text = NULL;
        size_t len = 0, cap = 0;
        for (long i = 0; i < c.n_pairs; i++) {
            CHECK(c.src_len[i] >= plain.src_len[i] && c.tgt_len[i] >= plain.tgt_len[i]);
            CHECK(c.src_len[i] <= 16 || c.src_len[i] == plain.src_len[i]);
            CHECK(c.tgt_len[i] <= 16 || c.tgt_len[i] == plain.tgt_len[i]);
            changed += c.src_len[i] != plain.src_len[i];
            const char *want = c.text + c.text_off[2 * i];
            size_t want_len = c.text_off[2 * i + 1] - c.text_off[2 * i];
            CHECK(bpe_decode(bpe, c.tokens + c.src_off[i], c.src_len[i], &text, &len, &cap, &err) == TFM_OK);
            CHECK(len == want_len && memcmp(text, want, len) == 0);
        }
        free(text);
        if (changed <= c.n_pairs / 4) fprintf(stderr, "changed %ld of %ld\n", changed, c.n_pairs);
        CHECK(changed > c.n_pairs / 4);
        if (round == 0) {
            n_first = n_tok;
            if (n_tok <= 4 * n_plain) memcpy(first, c.tokens, (size_t)n_tok * sizeof *first);
        } else {
            bool same = n_tok == n_first && memcmp(first, c.tokens, (size_t)n_tok * sizeof *first) == 0;
            CHECK(round == 1 ? same : !same);
        }
    }
    CHECK(corpus_resegment(&c, bpe, NULL, 0.0f, 3, NULL, 60, &err) == TFM_OK);
    CHECK(memcmp(c.tokens, plain.tokens, (size_t)n_plain * sizeof *c.tokens) == 0);
    free(first);
    corpus_free(&c);
    corpus_free(&plain);
    bpe_free(bpe);
}

/* BPE-dropout with model.output_vocab "target": the targets are spelled in
 * the output subset (made from the plain targets, as training makes it), so
 * every target id is one the output layer scores, and each side still
 * decodes to its own text (a pair's sides are not mixed up). */
TEST(test_corpus_resegment_target_subset)
{
    char src[512], tgt[512];
    write_corpus(src, tgt);
    Bpe *bpe = tiny_bpe(src, tgt);
    CHECK(bpe != NULL);
    TfmErr err = {0};
    Corpus plain, c;
    CHECK(corpus_load(&plain, src, tgt, bpe, NULL, 60, false, &err) == TFM_OK);
    int V = bpe_vocab_size(bpe);
    bool *in = calloc((size_t)V, sizeof *in);
    for (int id = 0; id < BPE_MIN_VOCAB; id++) in[id] = true;
    for (long i = 0; i < plain.n_pairs; i++)
        for (int j = 0; j < plain.tgt_len[i]; j++) in[plain.tokens[plain.tgt_off[i] + j]] = true;
    BpeSubset *sub = NULL;
    CHECK(bpe_subset_new(&sub, bpe, in, &err) == TFM_OK);
    CHECK(corpus_load(&c, src, tgt, bpe, sub, 60, true, &err) == TFM_OK);
    CHECK(corpus_resegment(&c, bpe, sub, 0.5f, 7, NULL, 60, &err) == TFM_OK);
    long outside = 0, wrong = 0, finer = 0;
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (long i = 0; i < c.n_pairs; i++) {
        for (int side = 0; side < 2; side++) {
            const int *ids = c.tokens + (side ? c.tgt_off[i] : c.src_off[i]);
            int n = side ? c.tgt_len[i] : c.src_len[i];
            for (int j = 0; side && j < n; j++) outside += !bpe_subset_has(sub, ids[j]);
            CHECK(bpe_decode(bpe, ids, n, &text, &len, &cap, &err) == TFM_OK);
            size_t want = c.text_off[2 * i + side + 1] - c.text_off[2 * i + side];
            wrong += len != want || memcmp(text, c.text + c.text_off[2 * i + side], want) != 0;
        }
        finer += c.tgt_len[i] > plain.tgt_len[i];
    }
    CHECK_EQ_INT(outside, 0);
    CHECK_EQ_INT(wrong, 0);
    CHECK(finer > c.n_pairs / 4);
    free(text);
    free(in);
    bpe_subset_free(sub);
    corpus_free(&c);
    corpus_free(&plain);
    bpe_free(bpe);
}

/* Encoding by several threads (blocks of pairs, shares appended in order)
 * gives the corpus one thread gives, over block boundaries, with the
 * filters, the target subset and the kept text. */
TEST(test_corpus_chunk_same_for_any_threads)
{
    char src[512], tgt[512];
    write_corpus(src, tgt);
    Bpe *bpe = tiny_bpe(src, tgt);
    CHECK(bpe != NULL);
    /* 20000 pairs: the 202 above repeated (its empty and long pairs too) */
    FILE *in[2] = {fopen(src, "r"), fopen(tgt, "r")};
    char *text[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        CHECK(in[k] != NULL);
        fseek(in[k], 0, SEEK_END);
        len[k] = (size_t)ftell(in[k]);
        rewind(in[k]);
        text[k] = malloc(len[k] * 100 + 1);
        CHECK(fread(text[k], 1, len[k], in[k]) == len[k]);
        fclose(in[k]);
        for (int r = 1; r < 99; r++) memcpy(text[k] + r * len[k], text[k], len[k]);
        text[k][99 * len[k]] = '\0';
    }
    char big_src[512], big_tgt[512];
    strcpy(big_src, test_write_file("big.de", text[0]));
    strcpy(big_tgt, test_write_file("big.en", text[1]));
    free(text[0]);
    free(text[1]);
    bool *in_sub = calloc((size_t)bpe_vocab_size(bpe), 1);
    for (int id = 0; id < BPE_MIN_VOCAB + 10; id++) in_sub[id] = true;
    BpeSubset *sub = NULL;
    TfmErr err = {0};
    CHECK(bpe_subset_new(&sub, bpe, in_sub, &err) == TFM_OK);
    free(in_sub);
    const char *sp[1] = {big_src}, *tp[1] = {big_tgt};
    Corpus c[3];
    const int threads[3] = {1, 2, 3};
    for (int k = 0; k < 3; k++) {
        PairStream ps;
        CHECK(pair_stream_open(&ps, sp, tp, 1, NULL, 0, 0, &err) == TFM_OK);
        CHECK(corpus_load_chunk(&c[k], &ps, 19000, bpe, sub, 60, true, 0, 1, threads[k], NULL, &err) == TFM_OK);
        pair_stream_close(&ps);
    }
    CHECK_EQ_INT(c[0].n_lines, 19000);
    CHECK(c[0].skipped_empty == 94 && c[0].skipped_long == 94);
    for (int k = 1; k < 3; k++) {
        CHECK(c[k].n_pairs == c[0].n_pairs && c[k].n_lines == c[0].n_lines);
        CHECK(c[k].skipped_empty == c[0].skipped_empty && c[k].skipped_long == c[0].skipped_long);
        long n_tok = c[0].tgt_off[c[0].n_pairs - 1] + c[0].tgt_len[c[0].n_pairs - 1];
        CHECK(memcmp(c[k].tokens, c[0].tokens, (size_t)n_tok * sizeof(int)) == 0);
        CHECK(memcmp(c[k].src_len, c[0].src_len, (size_t)c[0].n_pairs * sizeof(int)) == 0);
        CHECK(memcmp(c[k].tgt_off, c[0].tgt_off, (size_t)c[0].n_pairs * sizeof(long)) == 0);
        CHECK(memcmp(c[k].text, c[0].text, c[0].text_off[2 * c[0].n_pairs]) == 0);
    }
    for (int k = 0; k < 3; k++) corpus_free(&c[k]);
    bpe_subset_free(sub);
    bpe_free(bpe);
}

/* A job's rank reads every line but encodes its part (lines j % parts ==
 * part): the parts' kept pairs, merged in line order, are the whole
 * corpus's, with its skip counts; own_lens has every line of the part; and
 * a pair of files ending early is found by every part. */
TEST(test_corpus_chunk_parts)
{
    char src[512], tgt[512];
    write_corpus(src, tgt);
    Bpe *bpe = tiny_bpe(src, tgt);
    CHECK(bpe != NULL);
    const char *sp[1] = {src}, *tp[1] = {tgt};
    TfmErr err = {0};
    enum { PARTS = 3 };
    Corpus whole, part[PARTS];
    PairStream ps;
    CHECK(pair_stream_open(&ps, sp, tp, 1, NULL, 0, 0, &err) == TFM_OK);
    CHECK(corpus_load_chunk(&whole, &ps, 1000, bpe, NULL, 60, true, 0, 1, 1, NULL, &err) == TFM_OK);
    pair_stream_close(&ps);
    CHECK(whole.own_lens == NULL && whole.n_encoded == whole.n_lines);
    for (int k = 0; k < PARTS; k++) {
        CHECK(pair_stream_open(&ps, sp, tp, 1, NULL, 0, 0, &err) == TFM_OK);
        CHECK(corpus_load_chunk(&part[k], &ps, 1000, bpe, NULL, 60, true, k, PARTS, 2, NULL, &err) ==
              TFM_OK);
        pair_stream_close(&ps);
        CHECK_EQ_INT(part[k].n_lines, whole.n_lines);
        CHECK_EQ_INT(part[k].n_encoded, corpus_part_lines(whole.n_lines, k, PARTS));
    }
    long next[PARTS] = {0}, kept = 0, empty = 0, lng = 0, bad = 0;
    for (long j = 0; j < whole.n_lines; j++) {
        const Corpus *c = &part[j % PARTS];
        const int *l = c->own_lens + 2 * (j / PARTS);
        PairFate fate = pair_fate(l[0], l[1], 60);
        empty += fate == PAIR_EMPTY;
        lng += fate == PAIR_LONG;
        if (fate != PAIR_KEPT) continue;
        long q = next[j % PARTS]++, p = kept++;
        bad += c->src_len[q] != l[0] || c->tgt_len[q] != l[1] ||
               whole.src_len[p] != l[0] || whole.tgt_len[p] != l[1] ||
               memcmp(c->tokens + c->src_off[q], whole.tokens + whole.src_off[p],
                      (size_t)(l[0] + l[1]) * sizeof(int)) != 0 ||
               memcmp(c->text + c->text_off[2 * q], whole.text + whole.text_off[2 * p],
                      c->text_off[2 * q + 2] - c->text_off[2 * q]) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(kept, whole.n_pairs);
    CHECK(empty == whole.skipped_empty && lng == whole.skipped_long && empty == 1 && lng == 1);
    for (int k = 0; k < PARTS; k++) corpus_free(&part[k]);
    corpus_free(&whole);
    /* the target file ends early: part 1 never encodes line 3, still finds it */
    strcpy(src, test_write_file("three.de", "a\nb\nc\n"));
    strcpy(tgt, test_write_file("two.en", "a\nb\n"));
    CHECK(pair_stream_open(&ps, sp, tp, 1, NULL, 0, 0, &err) == TFM_OK);
    CHECK(corpus_load_chunk(&part[0], &ps, 1000, bpe, NULL, 60, false, 1, 2, 1, NULL, &err) ==
          TFM_ERR_FORMAT);
    pair_stream_close(&ps);
    char want[1200];
    snprintf(want, sizeof want, "%s has 3 lines, %s has 2 lines", src, tgt);
    CHECK_STR(err.msg, want);
    bpe_free(bpe);
}

static void corpus_ids_of(const void *ctx, long p, int row, const int **src, const int **tgt)
{
    (void)row;
    const Corpus *c = ctx;
    *src = c->tokens + c->src_off[p];
    *tgt = c->tokens + c->tgt_off[p];
}

/* A rank's share built from the ids of its rows alone (batcher_get_share)
 * is batch_share's cut of the whole batch: its rows, the whole batch's
 * widths and target count; batcher_real_tokens counts the whole batch's. */
TEST(test_batcher_get_share_is_batch_share)
{
    char src[512], tgt[512];
    write_corpus(src, tgt);
    Bpe *bpe = tiny_bpe(src, tgt);
    CHECK(bpe != NULL);
    Corpus c;
    Batcher b;
    TfmErr err = {0};
    CHECK(corpus_load(&c, src, tgt, bpe, NULL, 60, false, &err) == TFM_OK);
    CHECK(batcher_init(&b, &c, 120, 5, true, &err) == TFM_OK);
    batcher_plan_epoch(&b, 2);
    long bad = 0, batches_with_3 = 0;
    for (long i = 0; i < b.n_batches; i++) {
        Batch whole;
        batcher_get(&b, i, &whole);
        const long real = batch_real_tokens(&whole), targets = batch_targets(&whole);
        batches_with_3 += whole.n >= 3;
        bad += batcher_real_tokens(&b, i) != real;
        /* a copy: batcher_get_share reuses the batcher's buffers */
        size_t ns = (size_t)whole.n * whole.src_len, nt = (size_t)whole.n * whole.tgt_len;
        int *copy = malloc((ns + 2 * nt) * sizeof(int));
        memcpy(copy, whole.src, ns * sizeof(int));
        memcpy(copy + ns, whole.tgt_in, nt * sizeof(int));
        memcpy(copy + ns + nt, whole.tgt_out, nt * sizeof(int));
        Batch kept = whole;
        kept.src = copy;
        kept.tgt_in = copy + ns;
        kept.tgt_out = copy + ns + nt;
        for (int k = 0; k < 3; k++) {
            Batch want, got;
            batch_share(&kept, k, 3, &want);
            batcher_get_share(&b, i, k, 3, corpus_ids_of, &c, &got);
            bad += got.n != want.n || got.src_len != want.src_len || got.tgt_len != want.tgt_len ||
                   got.loss_tokens != targets || want.loss_tokens != targets;
            if (got.n != want.n) continue;
            bad += memcmp(got.src, want.src, (size_t)got.n * got.src_len * sizeof(int)) != 0 ||
                   memcmp(got.tgt_in, want.tgt_in, (size_t)got.n * got.tgt_len * sizeof(int)) != 0 ||
                   memcmp(got.tgt_out, want.tgt_out, (size_t)got.n * got.tgt_len * sizeof(int)) != 0;
        }
        free(copy);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(batches_with_3 > 5);
    batcher_free(&b);
    corpus_free(&c);
    bpe_free(bpe);
}
