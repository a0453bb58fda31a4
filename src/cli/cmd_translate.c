/* cmd_translate: `tfm translate [-m MODEL] [-b BEAM] [-i IN] [-o OUT] ...`.
 * Reads raw lines, encodes them with the model's vocabulary, decodes a batch
 * at a time and writes detokenized lines in input order, flushing after each
 * batch so it works in a pipe. -o writes through atomic_file.c. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/text.h"
#include "nn/blas.h"
#include "nn/gemm_bf16.h"
#include "model/ckpt.h"
#include "decode/batch.h"
#include "decode/decoder.h"
#include "decode/pipeline.h"
#include "text/bpe_subset.h"
#include "train/progress.h"
#include "cli/cmds.h"
#include "cli/decode_args.h"

static const char usage[] =
    "usage: tfm translate [-m MODEL [-m MODEL ...] [--weights W,W,...]] [-i IN] [-o OUT]\n"
    "                     [-b BEAM] [--alpha A] [--nbest N]\n"
    "                     [--batch-size N] [--max-len-a A] [--max-len-b B]\n"
    "                     [--no-repeat-ngram N] [--sample [--top-k K] [--top-p P]\n"
    "                     [--temperature T] [--seed N]] [--score-reference REF]\n"
    "                     [--precision fp32|bf16|int8] [--shortlist FILE] [--threads N]\n"
    "                     [-q] < input > output\n"
    "\n"
    "Translates stdin (raw UTF-8 text, one sentence a line) to stdout, one line per\n"
    "input line; an empty line gives an empty line. At the end a summary line\n"
    "(lines, tokens, seconds, sentences/s) goes to stderr.\n"
    "\n"
    "  -m, --model MODEL    model file (default: $TFM_MODEL, else model.tfm)\n"
    "  -i, --input IN       read IN instead of stdin (\"-\": stdin)\n"
    "  -o, --output OUT     write OUT instead of stdout (\"-\": stdout). OUT is written\n"
    "                       to a temporary file in its folder and renamed into place\n"
    "                       at the end: after an error OUT is unchanged and no half\n"
    "                       file is left (a kill -9 can leave the temporary file)\n"
    "  -b, --beam N         beam size; 1 is greedy (default: the model's decode.beam)\n"
    "      --alpha A        length penalty ((5+len)/6)^A (default: decode.alpha)\n"
    "      --nbest N        print N hypotheses a line, best first, in Moses form\n"
    "                       'i ||| text ||| F0= LOGPROB ||| SCORE' (i from 0; LOGPROB\n"
    "                       the summed log-probability, SCORE the length-normalized\n"
    "                       score that ranks them)\n"
    "      --batch-size N   sentences decoded together (default 32)\n"
    "      --max-len-a A    output length limit A*source_len + B tokens, at least 1\n"
    "                       (default: decode.max_len_a)\n"
    "      --max-len-b B    (default: decode.max_len_b)\n"
    "      --no-repeat-ngram N  no output repeats an n-gram of N tokens (BPE pieces),\n"
    "                       for greedy and beam search (default 0: off)\n"
    "      --sample         draw each token from the model's distribution instead\n"
    "                       of searching (back-translation data); implies beam 1\n"
    "      --top-k K        sample among the K most likely tokens (default 0: all)\n"
    "      --top-p P        ... and the fewest that hold P of the mass (default 1)\n"
    "      --temperature T  divide the log-probabilities by T (default 1)\n"
    "      --seed N         the draws are a function of N and the line number:\n"
    "                       the same for any --batch-size or --threads (default 1)\n"
    "      --score-reference REF  no search: print, for each input line, the model's\n"
    "                       log-probability of REF's line (its tokens and </s>,\n"
    "                       summed; natural log), one number a line (rescoring,\n"
    "                       data filtering). REF may be gzipped\n"
    "  -m A -m B ...        an ensemble: each step uses the mean of the models'\n"
    "                       log-probabilities (they must share one vocabulary)\n"
    "      --weights W,W..  the ensemble's weights, one a model (default: equal)\n"
    "      --precision P    fp32, bf16 (products in bfloat16 on the CPU's bf16\n"
    "                       unit: AVX512-BF16 or AMX), or int8 (weights quantized\n"
    "                       as the model loads; products in int8). Default: int8\n"
    "                       for an int8 model (tfm quantize), else the precision\n"
    "                       the model was trained with; a bf16 model on a CPU\n"
    "                       without a bf16 unit translates in fp32, with a note\n"
    "      --shortlist FILE output layer and search over each line's candidates\n"
    "                       only (tfm shortlist; default off)\n"
    "      --threads N      threads (default 0: the cores other programs leave free)\n"
    "  -q, --quiet          no warnings about long lines, no summary line\n"
    "  -h, --help           this help\n"
    "\n"
    "A line longer than the model's positions allow (max_len + 1 tokens, with\n"
    "max_len as tfm info shows it) is truncated, with a warning.\n";

enum { MAX_ENSEMBLE = PIPELINE_MAX_MODELS };

typedef struct {
    DecodeArgs dec;         /* models (several: an ensemble), beam, alpha, lengths, precision,
                               threads (decode_args.h, shared with serve) */
    const char *model;      /* the first model, or the default */
    const char *input, *output, *score_ref;
    int nbest, batch;
    bool sample, have_seed;
    int top_k;
    float top_p, temperature;
    long seed_l;
    bool quiet;
} Options;

/* Marian's, fairseq's and OpenNMT's names for translate's options. */
static const OptionAlias aliases[] = {
    {"beam-size", "--beam"},                 /* Marian, OpenNMT */
    {"n-best", "--nbest"},                   /* Marian, OpenNMT */
    {"max-length", "--max-len-a 0 --max-len-b N"},    /* Marian, OpenNMT */
    {"max-len", "--max-len-a 0 --max-len-b N"},
    {"mini-batch", "--batch-size"},          /* Marian */
    {"models", "--model"},                   /* Marian */
    {"path", "--model"},                     /* fairseq */
    {"src", "--input"},                      /* OpenNMT */
    {"tgt", "--score-reference"},            /* OpenNMT */
    {"normalize", "--alpha"},                /* Marian */
    {"lenpen", "--alpha"},                   /* fairseq */
    {"length-penalty", "--alpha"},
    {"cpu-threads", "--threads"},            /* Marian */
    {"sampling", "--sample"},                /* fairseq */
    {"output-sampling", "--sample"},         /* Marian */
    {"sampling-topk", "--top-k"},            /* fairseq */
    {"random-sampling-topk", "--top-k"},     /* OpenNMT */
    {"sampling-topp", "--top-p"},            /* fairseq */
    {"random-sampling-temp", "--temperature"},   /* OpenNMT */
    {"no-repeat-ngram-size", "--no-repeat-ngram"},   /* fairseq */
    {"block-ngram-repeat", "--no-repeat-ngram"},     /* OpenNMT */
    {NULL, NULL},
};

static TfmStatus parse_options(int argc, char **argv, Options *o, bool *help, TfmErr *err)
{
    enum { OPT_NBEST = 256, OPT_BATCH, OPT_SAMPLE, OPT_TOP_K, OPT_TOP_P, OPT_TEMP, OPT_SEED,
           OPT_SCORE_REF };
    static const struct option longopts[] = {
        DECODE_ARGS_LONGOPTS,
        {"input", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},
        {"nbest", required_argument, NULL, OPT_NBEST},
        {"batch-size", required_argument, NULL, OPT_BATCH},
        {"sample", no_argument, NULL, OPT_SAMPLE},
        {"top-k", required_argument, NULL, OPT_TOP_K},
        {"top-p", required_argument, NULL, OPT_TOP_P},
        {"temperature", required_argument, NULL, OPT_TEMP},
        {"seed", required_argument, NULL, OPT_SEED},
        {"score-reference", required_argument, NULL, OPT_SCORE_REF},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char optstring[] = ":m:i:o:b:qh";
    TfmStatus st = cmd_check_single_dash("translate", argc, argv, optstring, longopts, aliases, err);
    if (st != TFM_OK) return st;
    CmdGetopt g = cmd_getopt_start("translate", argc, argv, optstring, longopts, aliases);
    const char *opt = g.opt;
    int c;
    while ((c = cmd_getopt_next(&g, err)) >= 0) {
        bool taken;
        st = decode_args_take(&o->dec, "translate", c, opt, optarg, &taken, err);
        if (st != TFM_OK) return st;
        if (taken) {
            o->model = o->dec.spec.models[0];
            continue;
        }
        switch (c) {
        case 'i': o->input = optarg; break;
        case 'o': o->output = optarg; break;
        case OPT_NBEST: st = cmd_option_int("translate", opt, optarg, 1, DECODE_MAX_BEAM, &o->nbest, err); break;
        case OPT_BATCH: st = cmd_option_int("translate", opt, optarg, 1, 4096, &o->batch, err); break;
        case OPT_SAMPLE: o->sample = true; break;
        case OPT_SCORE_REF: o->score_ref = optarg; break;
        case OPT_TOP_K: st = cmd_option_int("translate", opt, optarg, 0, 1 << 20, &o->top_k, err); break;
        case OPT_TOP_P: st = cmd_option_number("translate", opt, optarg, 1e-6, 1, &o->top_p, err); break;
        case OPT_TEMP:
            st = cmd_option_number("translate", opt, optarg, 1e-3, 1000, &o->temperature, err);
            break;
        case OPT_SEED:
            if (!cmd_parse_long(optarg, 0, LONG_MAX, &o->seed_l))
                return err_set(err, TFM_ERR_USAGE, "translate: %s: expected an integer in [0, %ld], "
                               "got '%s'", opt, LONG_MAX, optarg);
            o->have_seed = true;
            break;
        case 'q': o->quiet = true; break;
        case 'h': *help = true; return TFM_OK;
        }
        if (st != TFM_OK) return st;
    }
    if (c == CMD_GETOPT_ERROR) return err->status;
    if (optind < argc)
        return err_set(err, TFM_ERR_USAGE, "translate: unexpected argument '%s' (the input is stdin or -i FILE)",
                       argv[optind]);
    if (o->score_ref && o->dec.spec.shortlist)
        return err_set(err, TFM_ERR_USAGE, "translate: --shortlist does not apply to "
                       "--score-reference (it scores the whole vocabulary)");
    return TFM_OK;
}

/* -o must name no file this run reads: the output would replace it. */
static TfmStatus check_output_is_new(const Options *o, TfmErr *err)
{
    if (!o->output || strcmp(o->output, "-") == 0) return TFM_OK;
    const char *reads[PIPELINE_MAX_MODELS + 2];
    int n = 0;
    if (o->input) reads[n++] = o->input;
    if (o->score_ref) reads[n++] = o->score_ref;
    for (int k = 0; k < o->dec.spec.n_models; k++) reads[n++] = o->dec.spec.models[k];
    for (int k = 0; k < n; k++)
        if (atomic_same_file(o->output, reads[k]))
            return err_set(err, TFM_ERR_USAGE, "translate: -o '%s' is also an input; it would be "
                           "overwritten", o->output);
    return TFM_OK;
}

/* One line of --score-reference's batches (its input or its reference). */
typedef struct {
    int *ids;
    int n, cap;
} Line;

typedef struct {
    Options o;
    Pipeline p;             /* the model(s), the decoder and the resolved options */
    DecodeOptions dopt;
    LineBatch batch;        /* the lines read, translated a batch at a time */
    long lines_done;        /* lines written so far */
    FILE *out;              /* stdout, or -o's temporary file */
    const char *out_name;
    long long src_tokens, out_tokens;   /* for the summary line */
    bool progress;          /* a live progress line on stderr (a terminal; output elsewhere) */
    long lines_total;       /* of -i FILE, for the live line; -1 unknown */
    bool progress_shown;
    struct timespec start, last_progress;
} Translator;

static void write_hypothesis(Translator *t, long line_no, const BatchResult *r)
{
    if (t->o.nbest > 0)      /* --nbest given: Moses/Marian n-best format */
        /* %g: at a large --alpha the scores are tiny, and a fixed
         * 6 decimals would print them all as -0.000000 */
        fprintf(t->out, "%ld ||| %s ||| F0= %.8g ||| %.8g\n", line_no, r->text, r->logprob,
                r->score);
    else
        fprintf(t->out, "%s\n", r->text);
}

static double seconds_since(const struct timespec *a)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - a->tv_sec) + 1e-9 * (double)(now.tv_nsec - a->tv_nsec);
}

/* The live line for long inputs: lines so far and their rate, at most
 * twice a second, on a terminal's stderr while the output goes elsewhere. */
static void show_progress(Translator *t)
{
    if (!t->progress || seconds_since(&t->last_progress) < 0.5) return;
    clock_gettime(CLOCK_MONOTONIC, &t->last_progress);
    const double s = seconds_since(&t->start), rate = s > 0 ? (double)t->lines_done / s : 0.0;
    if (t->lines_total > 0) {
        char eta[32];
        progress_format_duration(eta, sizeof eta, rate > 0 ? (t->lines_total - t->lines_done) / rate
                                                            : NAN);
        fprintf(stderr, "\r\033[Ktranslated %ld/%ld lines, %.1f sentences/s, ETA %s", t->lines_done,
                t->lines_total, rate, eta);
    } else {
        fprintf(stderr, "\r\033[Ktranslated %ld lines, %.1f sentences/s", t->lines_done, rate);
    }
    fflush(stderr);
    t->progress_shown = true;
}

/* The lines of -i FILE, for the live line's total and ETA: a first pass
 * over the file (gzip too); -1 when it cannot be read (the translation
 * then reports the error). */
static long count_input_lines(const char *path)
{
    LineReader r = {0};
    TfmErr ignored = {0};
    if (text_reader_open(&r, path, &ignored) != TFM_OK) return -1;
    char *line;
    size_t len;
    int got;
    while ((got = text_read_line(&r, &line, &len, &ignored)) == 1) {}
    long n = got == 0 ? r.line_no : -1;
    text_reader_close(&r);
    return n;
}

/* Takes the live line off the screen before other text goes to stderr. */
static void clear_progress(Translator *t)
{
    if (!t->progress_shown) return;
    fputs("\r\033[K", stderr);
    t->progress_shown = false;
}

/* Translates the batch's lines [0..count) and writes them in order. */
static TfmStatus translate_batch(Translator *t, int count, TfmErr *err)
{
    LineBatch *b = &t->batch;
    TfmStatus st = line_batch_translate(b, count, &t->dopt, t->lines_done, err);
    if (st != TFM_OK) return st;
    for (int i = 0; i < count; i++) {
        /* a blank line's empty translation fills each of its n-best places */
        const bool blank = line_batch_blank(b, i);
        for (int h = 0; h < t->dopt.nbest; h++) {
            const BatchResult *r = line_batch_result(b, i, blank ? 0 : h);
            if (r) write_hypothesis(t, t->lines_done + i, r);   /* NULL: fewer finished */
        }
    }
    t->src_tokens += b->src_tokens;
    t->out_tokens += b->out_tokens;
    t->lines_done += count;
    if (fflush(t->out) != 0 || ferror(t->out))
        return err_set(err, TFM_ERR_IO, "%s: write failed: %s", t->out_name, strerror(errno));
    show_progress(t);
    return TFM_OK;
}

/* True when a read from f would not block: bytes in its stdio buffer, or
 * data (or end of file) on the descriptor. */
static bool input_waiting(FILE *f)
{
#ifdef __GLIBC__
    if (f->_IO_read_ptr < f->_IO_read_end) return true;
#else
    return true;        /* no way to look into the buffer: keep batching */
#endif
    struct pollfd p = {.fd = fileno(f), .events = POLLIN};
    return poll(&p, 1, 0) != 0;
}

static TfmStatus setup(Translator *t, TfmErr *err)
{
    Options *o = &t->o;
    PipelineSpec spec = o->dec.spec;
    spec.who = "translate";
    spec.nbest = o->nbest;
    if (spec.n_models == 0) spec.n_models = 1;
    spec.models[0] = o->model;
    TfmStatus st = pipeline_load(&t->p, &spec, err);
    if (st != TFM_OK) return st;
    if (t->p.bf16_fallback && !o->quiet)
        fprintf(stderr, "tfm: note: %s was trained in bf16; this CPU has no bf16 unit "
                "(AVX512-BF16 or AMX), so it translates in fp32\n", o->model);
    t->dopt = t->p.dopt;
    if (!o->sample && (o->top_k || o->top_p != 1.0f || o->temperature != 1.0f || o->have_seed))
        return err_set(err, TFM_ERR_USAGE, "translate: --top-k, --top-p, --temperature and "
                       "--seed go with --sample");
    if (o->sample) {
        if (o->dec.spec.have_beam && o->dec.spec.beam != 1)
            return err_set(err, TFM_ERR_USAGE, "translate: --sample draws one translation a "
                           "line; it does not go with --beam %d", o->dec.spec.beam);
        t->dopt.beam = 1;
        t->dopt.sample = true;
        t->dopt.top_k = o->top_k;
        t->dopt.top_p = o->top_p;
        t->dopt.temperature = o->temperature;
        t->dopt.seed = o->have_seed ? (uint64_t)o->seed_l : 1;
    }
    if (t->dopt.nbest > t->dopt.beam)
        return err_set(err, TFM_ERR_USAGE, "translate: --nbest %d is larger than the beam (%d)",
                       t->dopt.nbest, t->dopt.beam);
    if ((st = pipeline_start(&t->p, &spec, o->batch, t->dopt.beam, err)) != TFM_OK) return st;
    return line_batch_init(&t->batch, &t->p, o->batch, t->dopt.nbest, err);
}

/* Reads a line into l (BPE ids, cut to max_src with a warning). Returns
 * 1, 0 at the end, -1 on error. */
static int read_ids(Translator *t, LineReader *r, Line *l, int max_src, TfmErr *err)
{
    char *line;
    size_t len;
    int got = text_read_line(r, &line, &len, err);
    if (got <= 0) return got;
    if (bpe_encode(t->p.mf.bpe, line, len, &l->ids, &l->n, &l->cap, err) != TFM_OK) return -1;
    if (l->n > max_src) {
        clear_progress(t);
        if (!t->o.quiet)
            fprintf(stderr, "tfm: warning: %s: line %ld: %d tokens, truncated to the model's "
                    "limit of %d\n", r->name, r->line_no, l->n, max_src);
        l->n = max_src;
    }
    return 1;
}

/* Models with model.output_vocab "target" score only their output pieces:
 * a reference is spelled in the pieces every model of the ensemble with a
 * say (a weight above 0) can write (*out stays NULL when they can all write
 * every piece). */
static TfmStatus reference_subset(const Translator *t, BpeSubset **out, TfmErr *err)
{
    *out = NULL;
    const Pipeline *p = &t->p;
    const int V = p->mf.model.cfg.vocab_size;
    const Model *models[MAX_ENSEMBLE];
    int n = 0;
    for (int i = 0; i <= p->n_extra; i++)
        if (!p->have_weights || p->weights[i] > 0)
            models[n++] = i ? &p->extra_mf[i - 1].model : &p->mf.model;
    bool any = false;
    for (int k = 0; k < n; k++) any |= models[k]->out_ids != NULL;
    if (!any) return TFM_OK;
    bool *in = xmalloc(sizeof(bool) * (size_t)V, err);
    if (!in) return TFM_ERR_NOMEM;
    for (int v = 0; v < V; v++) {
        in[v] = true;
        for (int k = 0; k < n; k++) in[v] &= !models[k]->out_pos || models[k]->out_pos[v] >= 0;
    }
    TfmStatus st = bpe_subset_new(out, p->mf.bpe, in, err);
    free(in);
    return st;
}

/* --score-reference: the log-probability of each reference line given its
 * input line, batch by batch. */
static TfmStatus score_references(Translator *t, LineReader *in, TfmErr *err)
{
    LineReader ref = {0};
    const int B = t->o.batch, max_src = t->p.max_src;
    BpeSubset *sub = NULL;
    Line *srcs = xcalloc((size_t)B, sizeof *srcs, err), *refs = xcalloc((size_t)B, sizeof *refs, err);
    const int **sents = xcalloc((size_t)B, sizeof *sents, err);
    const int **tgts = xcalloc((size_t)B, sizeof *tgts, err);
    int *lens = xcalloc((size_t)B, sizeof *lens, err), *tlens = xcalloc((size_t)B, sizeof *tlens, err);
    double *scores = xcalloc((size_t)B, sizeof *scores, err);
    TfmStatus st = srcs && refs && sents && tgts && lens && tlens && scores ? TFM_OK : TFM_ERR_NOMEM;
    if (st == TFM_OK) st = reference_subset(t, &sub, err);
    if (st == TFM_OK) st = text_reader_open(&ref, t->o.score_ref, err);
    for (bool more = true; st == TFM_OK && more;) {
        int n = 0;
        while (n < B) {
            int a = read_ids(t, in, &srcs[n], max_src, err);
            if (a < 0) { st = err->status; break; }
            int b = read_ids(t, &ref, &refs[n], max_src, err);
            if (b < 0) { st = err->status; break; }
            if (a != b) {
                /* the one that ended has read all its lines */
                long lines = a ? ref.line_no : in->line_no;
                st = err_set(err, TFM_ERR_FORMAT, "translate: --score-reference: %s ends after %ld "
                             "line%s, %s goes on", a ? ref.name : in->name, lines,
                             lines == 1 ? "" : "s", a ? in->name : ref.name);
                break;
            }
            if (!a) { more = false; break; }
            if (sub) {
                Line *r = &refs[n];
                if ((st = bpe_subset_apply(sub, &r->ids, &r->n, &r->cap, err)) != TFM_OK) break;
                if (r->n > max_src) r->n = max_src;    /* as read_ids cuts, without a second warning */
            }
            sents[n] = srcs[n].ids;
            lens[n] = srcs[n].n;
            t->src_tokens += srcs[n].n;
            t->out_tokens += refs[n].n;
            tgts[n] = refs[n].ids;
            tlens[n] = refs[n].n;
            n++;
        }
        if (st != TFM_OK || n == 0) break;
        st = decoder_score(t->p.dec, &t->p.mf.model, sents, lens, tgts, tlens, n, scores, err);
        for (int i = 0; st == TFM_OK && i < n; i++) fprintf(t->out, "%.6f\n", scores[i]);
        if (fflush(t->out) != 0 && st == TFM_OK)
            st = err_set(err, TFM_ERR_IO, "%s: write failed: %s", t->out_name, strerror(errno));
        t->lines_done += n;
    }
    for (int i = 0; i < B; i++) {
        if (srcs) free(srcs[i].ids);
        if (refs) free(refs[i].ids);
    }
    FREE_ALL(srcs, refs, sents, tgts, lens, tlens, scores);
    bpe_subset_free(sub);
    text_reader_close(&ref);
    return st;
}

static void teardown(Translator *t)
{
    line_batch_free(&t->batch);
    pipeline_free(&t->p);
}

TfmStatus cmd_translate(int argc, char **argv, TfmErr *err)
{
    Translator t;
    memset(&t, 0, sizeof t);
    t.o.batch = 32;
    t.o.top_p = 1.0f;
    t.o.temperature = 1.0f;
    bool help = false;
    TfmStatus st = parse_options(argc, argv, &t.o, &help, err);
    if (st != TFM_OK) return st;
    if (help) {
        fputs(usage, stdout);
        return TFM_OK;
    }
    if ((st = decode_args_start(&t.o.dec, err)) != TFM_OK) return st;
    t.o.model = t.o.dec.spec.models[0];
    if ((st = check_output_is_new(&t.o, err)) != TFM_OK) return st;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    LineReader in = {0};
    AtomicFile af = {0};
    t.out = stdout;
    t.out_name = "stdout";
    if ((st = setup(&t, err)) != TFM_OK ||
        (st = text_reader_open(&in, t.o.input ? t.o.input : "-", err)) != TFM_OK)
        goto done;
    if (t.o.output && strcmp(t.o.output, "-") != 0) {
        if ((st = atomic_open(&af, t.o.output, err)) != TFM_OK) goto done;
        t.out = af.f;
        t.out_name = t.o.output;
        cli_remove_on_signals(af.tmp, t.o.output);
    }
    int count = 0;
    t.progress = !t.o.quiet && isatty(STDERR_FILENO) && !isatty(fileno(t.out));
    t.lines_total = t.progress && t.o.input && strcmp(t.o.input, "-") != 0
                        ? count_input_lines(t.o.input) : -1;
    t.start = t.last_progress = t0;
    if (t.o.score_ref) st = score_references(&t, &in, err);
    for (; !t.o.score_ref;) {
        char *line;
        size_t len;
        /* Nothing more to read right now (an interactive user, a pipe fed
         * line by line): translate what we have instead of waiting. */
        if (count > 0 && !input_waiting(in.f)) {
            if ((st = translate_batch(&t, count, err)) != TFM_OK) break;
            count = 0;
        }
        int got = text_read_line(&in, &line, &len, err);
        if (got < 0) {
            /* translate what came before the bad line, then report it */
            TfmErr keep = *err;
            if (count > 0 && translate_batch(&t, count, err) != TFM_OK) { st = err->status; break; }
            *err = keep;
            st = keep.status;
            break;
        }
        if (got == 0) {
            if (count > 0) st = translate_batch(&t, count, err);
            break;
        }
        if ((st = line_batch_set(&t.batch, count, line, len, err)) != TFM_OK) break;
        const BatchLine *l = &t.batch.lines[count];
        if (l->full > l->n) {
            clear_progress(&t);
            if (!t.o.quiet)
                fprintf(stderr, "tfm: warning: %s: line %ld: %d tokens, truncated to the "
                        "model's limit of %d\n", in.name, in.line_no, l->full, l->n);
        }
        if (++count == t.o.batch) {
            if ((st = translate_batch(&t, count, err)) != TFM_OK) break;
            count = 0;
        }
    }
    clear_progress(&t);                 /* the summary replaces it */
    if (st == TFM_OK && af.f) {
        st = atomic_commit(&af, err);
        t.out = stdout;
    }
    if (st == TFM_OK && !t.o.quiet) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        const double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        fprintf(stderr, "tfm: %s %ld line%s (%lld source tokens, %lld %s tokens) in "
                "%.2f s, %.2f sentences/s\n", t.o.score_ref ? "scored" : "translated",
                t.lines_done, t.lines_done == 1 ? "" : "s", t.src_tokens, t.out_tokens,
                t.o.score_ref ? "reference" : "output", secs,
                secs > 0 ? (double)t.lines_done / secs : 0.0);
        if (t.o.dec.spec.shortlist)
            fprintf(stderr, "tfm: the shortlist's guard gave %ld of them the whole output\n",
                    pipeline_lines_guarded(&t.p));
    }
done:
    atomic_abort(&af);
    if (t.o.output) cli_output_written();
    text_reader_close(&in);
    teardown(&t);
    return st;
}
