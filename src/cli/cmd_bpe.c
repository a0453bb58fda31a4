/* cmd_bpe: `tfm bpe learn|encode|decode`. Option parsing and line I/O only;
 * the algorithms are in bpe.c, and for a SentencePiece model in spm_*.c. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "text/bpe.h"
#include "text/spm.h"
#include "model/ckpt.h"
#include "cli/cmds.h"
#include "base/text.h"

static const char help_text[] =
    "usage: tfm bpe learn --vocab-size N -o VOCAB FILE [FILE ...]\n"
    "       tfm bpe encode -v VOCAB [--ids] < text > pieces\n"
    "       tfm bpe decode -v VOCAB [--ids] < pieces > text\n"
    "\n"
    "Joint byte-pair-encoding subwords, lossless: decode(encode(line)) == line.\n"
    "\n"
    "learn   learns at most N pieces (4 specials, 256 byte pieces and the word\n"
    "        marker included, so N >= 261) from all lines of all FILEs ('-' is\n"
    "        stdin) and writes the vocabulary file VOCAB (docs/vocab-format.md).\n"
    "encode  one line in, one line out: the pieces separated by spaces (bytes\n"
    "        <= 0x20, 0x7F and '\\' escaped as \\xHH); --ids prints ids instead.\n"
    "decode  the reverse: pieces (or ids with --ids) to text; <pad>, <s> and\n"
    "        </s> are dropped.\n"
    "\n"
    "A trailing \"\\r\" on an input line (CRLF files) is dropped; input must be\n"
    "UTF-8 without NUL bytes.\n"
    "\n"
    "options:\n"
    "  -s, --vocab-size N  vocabulary size (learn)\n"
    "  -o, --output FILE   vocabulary to write (learn)\n"
    "  -v, --vocab FILE    vocabulary to use (encode, decode): a vocabulary file,\n"
    "                      a tfm model, whose vocabulary is inside, or a\n"
    "                      SentencePiece .model file (unigram or bpe), encoded\n"
    "                      and decoded exactly as spm_encode/spm_decode do:\n"
    "                      pieces unescaped, any input bytes accepted\n"
    "      --ids           numeric ids instead of pieces (encode, decode)\n"
    "  -h, --help          this help\n";

static TfmStatus write_out(const char *s, size_t n, TfmErr *err)
{
    if (fwrite(s, 1, n, stdout) != n)
        return err_set(err, TFM_ERR_IO, "stdout: write failed: %s", strerror(errno ? errno : EIO));
    return TFM_OK;
}

/* -v VOCAB: a vocabulary file, or a tfm model (its vocabulary is inside).
 * A file that is neither gets the vocabulary reader's error. */
static TfmStatus load_vocab(const char *path, Bpe **b, TfmErr *err)
{
    TfmStatus st = bpe_load(b, path, err);
    if (st != TFM_ERR_FORMAT) return st;
    ModelFile mf;
    TfmErr model_err = {0};
    if (ckpt_load(path, &mf, false, &model_err) != TFM_OK) return st;
    *b = mf.bpe;
    mf.bpe = NULL;
    ckpt_free(&mf);
    return TFM_OK;
}

static TfmStatus run_learn(const char *out, int vocab_size, char **files, int n_files, TfmErr *err)
{
    Bpe *b = NULL;
    TfmStatus st = bpe_learn(&b, (const char *const *)files, n_files, vocab_size, err);
    if (st == TFM_OK) st = bpe_save(b, out, err);
    bpe_free(b);
    return st;
}

/* The four encode/decode commands are filters: each line of stdin (without
 * its end) through fn, which writes out[0..*len) (out grown in *cap), to
 * stdout with a "\n". raw: lines unchecked (invalid UTF-8 and NUL bytes
 * too: SentencePiece normalizes them). */
typedef TfmStatus (*LineFn)(void *ctx, char *line, size_t n, long line_no, char **out,
                            size_t *len, size_t *cap, TfmErr *err);

static TfmStatus filter_stdin(bool raw, LineFn fn, void *ctx, TfmErr *err)
{
    LineReader r;
    text_reader_from_file(&r, stdin, "stdin");
    if (raw) r.check_utf8 = false;
    char *out = NULL, *line;
    size_t len, cap = 0, line_len;
    int got;
    TfmStatus st = TFM_OK;
    while ((got = text_read_line(&r, &line, &line_len, err)) > 0) {
        len = 0;
        if ((st = fn(ctx, line, line_len, r.line_no, &out, &len, &cap, err))) break;
        if ((st = write_out(out ? out : "", len, err)) || (st = write_out("\n", 1, err))) break;
    }
    if (got < 0) st = err->status;
    text_reader_close(&r);
    free(out);
    return st;
}

/* Appends piece p[0..n) (escaped for a tfm vocabulary, as it is for
 * SentencePiece) or, with ids, the number id, then a space: the encoders
 * print pieces joined by single spaces (the caller drops the last). */
static TfmStatus put_piece(const char *p, size_t n, bool escape, bool ids, int id, char **out,
                           size_t *len, size_t *cap, TfmErr *err)
{
    char num[16];
    if (ids) {
        n = (size_t)snprintf(num, sizeof num, "%d", id);
        p = num;
    }
    /* ids need no escaping; bpe_escape just copies them (and keeps room for a NUL) */
    TfmStatus st = escape ? bpe_escape(p, n, out, len, cap, err)
                          : xgrow((void **)out, cap, *len + n + 2, 1, err);
    if (st) return st;
    if (!escape) {
        memcpy(*out + *len, p, n);
        *len += n;
    }
    (*out)[(*len)++] = ' ';
    return TFM_OK;
}

/* Token s[0..n) of a decode line as an id below vocab, for --ids. */
static TfmStatus parse_id(const char *s, size_t n, int vocab, long line_no, int *id, TfmErr *err)
{
    long v = 0;
    size_t i = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9' && v <= INT_MAX; i++) v = v * 10 + (s[i] - '0');
    if (i != n || v >= vocab)
        return err_set(err, TFM_ERR_FORMAT, "stdin: line %ld: '%.*s' is not an id below %d",
                       line_no, (int)(n > 40 ? 40 : n), s, vocab);
    *id = (int)v;
    return TFM_OK;
}

typedef struct {
    const Bpe *b;
    bool ids;           /* ids instead of pieces */
    int *tok, n, cap;   /* the line's ids: encoding's (bpe_encode grows them) */
    int *dec;           /* decoding's */
    size_t dec_cap;
} BpeLines;

static TfmStatus encode_line(void *ctx, char *line, size_t line_len, long line_no, char **out,
                             size_t *len, size_t *cap, TfmErr *err)
{
    BpeLines *c = ctx;
    (void)line_no;
    TfmStatus st = bpe_encode(c->b, line, line_len, &c->tok, &c->n, &c->cap, err);
    for (int i = 0; i < c->n && !st; i++) {
        size_t pl = 0;
        const char *p = c->ids ? NULL : bpe_piece(c->b, c->tok[i], &pl);
        st = put_piece(p, pl, true, c->ids, c->tok[i], out, len, cap, err);
    }
    if (*len > 0) --*len;       /* the last separator */
    return st;
}

/* Parses one space-separated token of a decode input line into an id. */
static TfmStatus token_id(const Bpe *b, char *tok, size_t n, bool ids_in, long line_no, int *id,
                          TfmErr *err)
{
    if (ids_in) return parse_id(tok, n, bpe_vocab_size(b), line_no, id, err);
    /* the piece as written, for messages: unescaping works in place, and a
     * "\x00" in it would end a quoted copy */
    char shown[41];
    snprintf(shown, sizeof shown, "%.*s", (int)(n > 40 ? 40 : n), tok);
    if (!bpe_unescape(tok, &n))
        return err_set(err, TFM_ERR_FORMAT, "stdin: line %ld: bad escape or raw control byte "
                       "in piece '%s' (pieces are separated by spaces)", line_no, shown);
    *id = bpe_piece_id(b, tok, n);
    if (*id < 0)
        return err_set(err, TFM_ERR_FORMAT, "stdin: line %ld: unknown piece '%s'", line_no, shown);
    return TFM_OK;
}

static TfmStatus decode_line(void *ctx, char *line, size_t line_len, long line_no, char **out,
                             size_t *len, size_t *cap, TfmErr *err)
{
    BpeLines *c = ctx;
    int n = 0;
    for (size_t i = 0; i < line_len;) {
        if (line[i] == ' ') { i++; continue; }
        size_t j = i;
        while (j < line_len && line[j] != ' ') j++;
        TfmStatus st = xgrow((void **)&c->dec, &c->dec_cap, (size_t)n + 1, sizeof *c->dec, err);
        if (st || (st = token_id(c->b, line + i, j - i, c->ids, line_no, &c->dec[n++], err)))
            return st;
        i = j;
    }
    TfmStatus st = bpe_decode(c->b, c->dec, n, out, len, cap, err);
    if (st) return st;
    /* byte pieces can spell any byte; these two would break the one
     * line out per line in that the other commands rely on */
    const char *bad = memchr(*out, '\n', *len) ? "a newline" : memchr(*out, '\0', *len) ? "a NUL byte" : NULL;
    if (bad)
        return err_set(err, TFM_ERR_FORMAT, "stdin: line %ld: the pieces decode to %s, which "
                       "one output line cannot hold", line_no, bad);
    return TFM_OK;
}

static TfmStatus run_bpe(const Bpe *b, bool encode, bool ids, TfmErr *err)
{
    BpeLines c = {.b = b, .ids = ids};
    TfmStatus st = filter_stdin(false, encode ? encode_line : decode_line, &c, err);
    FREE_ALL(c.tok, c.dec);
    return st;
}

/* ---- a SentencePiece model as VOCAB: spm_encode's and spm_decode's lines ---- */

typedef struct {
    const Spm *m;
    bool ids;
    SpmWork w;          /* encoding's */
    SpmTok *tok;        /* decoding's: the line's pieces */
    size_t cap;
} SpmLines;

/* One line in, its pieces (or ids) out, joined by single spaces and not
 * escaped, as spm_encode prints them. Lines are taken as they are (invalid
 * UTF-8 and NUL bytes too, which the model normalizes). */
static TfmStatus encode_line_spm(void *ctx, char *line, size_t line_len, long line_no,
                                 char **out, size_t *len, size_t *cap, TfmErr *err)
{
    SpmLines *c = ctx;
    (void)line_no;
    TfmStatus st = spm_encode(c->m, &c->w, line, line_len, err);
    for (size_t i = 0; i < c->w.n_tok && !st; i++) {
        const SpmTok *t = &c->w.tok[i];
        st = put_piece(t->s, t->len, false, c->ids, t->id, out, len, cap, err);
    }
    if (*len > 0) --*len;
    return st;
}

/* Pieces (or ids) separated by spaces (empty ones skipped, as spm_decode's
 * split skips them), to text. */
static TfmStatus decode_line_spm(void *ctx, char *line, size_t line_len, long line_no,
                                 char **out, size_t *len, size_t *cap, TfmErr *err)
{
    SpmLines *c = ctx;
    size_t n = 0;
    for (size_t i = 0; i < line_len;) {
        size_t j = i;
        while (j < line_len && line[j] != ' ') j++;
        if (j == i) {
            i++;
            continue;
        }
        TfmStatus st = xgrow((void **)&c->tok, &c->cap, n + 1, sizeof *c->tok, err);
        if (st) return st;
        SpmTok *t = &c->tok[n++];
        *t = (SpmTok){0, (uint32_t)(j - i), line + i};
        if (c->ids) {
            if ((st = parse_id(line + i, j - i, spm_vocab_size(c->m), line_no, &t->id, err)))
                return st;
            size_t pl;
            t->s = spm_piece(c->m, t->id, &pl);
            t->len = (uint32_t)pl;
        } else {
            t->id = spm_piece_id(c->m, t->s, t->len);
        }
        i = j + 1;
    }
    TfmStatus st = spm_decode(c->m, c->tok, n, out, len, cap, err);
    if (st) return st;
    if (memchr(*out, '\n', *len))
        return err_set(err, TFM_ERR_FORMAT, "stdin: line %ld: the pieces decode to a newline, "
                       "which one output line cannot hold", line_no);
    return TFM_OK;
}

static TfmStatus run_spm(const Spm *m, bool encode, bool ids, TfmErr *err)
{
    SpmLines c = {.m = m, .ids = ids};
    TfmStatus st = filter_stdin(true, encode ? encode_line_spm : decode_line_spm, &c, err);
    spm_work_free(&c.w);
    free(c.tok);
    return st;
}

TfmStatus cmd_bpe(int argc, char **argv, TfmErr *err)
{
    if (cmd_wants_help(argc, argv)) {
        fputs(help_text, stdout);
        return TFM_OK;
    }
    if (argc < 2)
        return err_set(err, TFM_ERR_USAGE, "bpe: expected learn, encode or decode (see tfm bpe --help)");
    const char *sub = argv[1];
    bool learn = strcmp(sub, "learn") == 0, encode = strcmp(sub, "encode") == 0,
         decode = strcmp(sub, "decode") == 0;
    if (!learn && !encode && !decode)
        return err_set(err, TFM_ERR_USAGE, "bpe: unknown subcommand '%s' (expected learn, encode or decode)", sub);

    enum { OPT_IDS = 256 };
    static const struct option longopts[] = {
        {"vocab-size", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},
        {"vocab", required_argument, NULL, 'v'},
        {"ids", no_argument, NULL, OPT_IDS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *vocab = NULL, *size_arg = NULL;
    bool ids = false;
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    CmdGetopt g = cmd_getopt_start(learn ? "bpe learn" : encode ? "bpe encode" : "bpe decode",
                                   sub_argc, sub_argv, ":s:o:v:h", longopts, NULL);
    int c;
    while ((c = cmd_getopt_next(&g, err)) >= 0) {
        switch (c) {
        case 's': size_arg = optarg; break;
        case 'o': out = optarg; break;
        case 'v': vocab = optarg; break;
        case OPT_IDS: ids = true; break;
        case 'h': fputs(help_text, stdout); return TFM_OK;     /* --he: after cmd_wants_help */
        }
    }
    if (c == CMD_GETOPT_ERROR) return err->status;
    if (learn) {
        if (vocab || ids)
            return err_set(err, TFM_ERR_USAGE, "bpe learn: takes --vocab-size, -o and files only");
        if (!size_arg) return err_set(err, TFM_ERR_USAGE, "bpe learn: --vocab-size N is required");
        if (!out) return err_set(err, TFM_ERR_USAGE, "bpe learn: -o VOCAB is required");
        if (optind >= sub_argc) return err_set(err, TFM_ERR_USAGE, "bpe learn: no input files");
        long v;
        if (!cmd_parse_long(size_arg, BPE_MIN_VOCAB, BPE_MAX_VOCAB, &v))
            return err_set(err, TFM_ERR_USAGE,
                           "bpe learn: --vocab-size must be an integer in [%d, %d] (4 specials + "
                           "256 bytes + the word marker at least), got '%s'",
                           BPE_MIN_VOCAB, BPE_MAX_VOCAB, size_arg);
        for (int i = optind; i < sub_argc; i++)
            if (atomic_same_file(out, sub_argv[i]))
                return err_set(err, TFM_ERR_USAGE, "bpe learn: -o '%s' is also an input file; "
                               "it would be overwritten", out);
        return run_learn(out, (int)v, sub_argv + optind, sub_argc - optind, err);
    }
    if (size_arg || out)
        return err_set(err, TFM_ERR_USAGE, "bpe %s: takes -v VOCAB and --ids only", sub);
    if (!vocab) return err_set(err, TFM_ERR_USAGE, "bpe %s: -v VOCAB is required", sub);
    if (optind < sub_argc)
        return err_set(err, TFM_ERR_USAGE, "bpe %s: reads stdin; unexpected argument '%s'", sub,
                       sub_argv[optind]);
    if (spm_file_sniff(vocab)) {
        Spm *m = NULL;
        TfmStatus st = spm_load(&m, vocab, err);
        if (st == TFM_OK) st = run_spm(m, encode, ids, err);
        spm_free(m);
        return st;
    }
    Bpe *b = NULL;
    TfmStatus st = load_vocab(vocab, &b, err);
    if (st == TFM_OK) st = run_bpe(b, encode, ids, err);
    bpe_free(b);
    return st;
}
