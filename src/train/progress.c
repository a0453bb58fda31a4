/* progress: terminal line, periodic lines and log.jsonl. */
#include "train/progress.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/buf.h"

/* Plain lines every 10 s; the live line at most 10 times a second. */
static const double PLAIN_EVERY_S = 10, LIVE_EVERY_S = 0.1;

void progress_open_silent(Progress *p)
{
    memset(p, 0, sizeof *p);
    p->quiet = true;
    p->out = stderr;
}

TfmStatus progress_open(Progress *p, const char *out_dir, bool truncate, bool quiet, TfmErr *err)
{
    memset(p, 0, sizeof *p);
    p->quiet = quiet;
    p->out = stderr;
    p->tty = isatty(fileno(stderr));
    p->last_print_s = -1e9;
    size_t n = strlen(out_dir) + 16;
    p->log_path = xmalloc(n, err);
    if (!p->log_path) return TFM_ERR_NOMEM;
    snprintf(p->log_path, n, "%s/log.jsonl", out_dir);
    /* opening a FIFO there for writing would wait for a reader forever */
    TfmStatus st = atomic_check_target(p->log_path, err);
    if (st == TFM_OK) p->log = fopen(p->log_path, truncate ? "w" : "a");
    else p->log = NULL;
    if (!p->log) {
        if (st == TFM_OK)
            st = err_set(err, TFM_ERR_IO, "%s: cannot write: %s", p->log_path, strerror(errno));
        free(p->log_path);
        p->log_path = NULL;
        return st;
    }
    return TFM_OK;
}

TfmStatus progress_trim(Progress *p, long step, TfmErr *err)
{
    /* Rewrite the log with its lines up to step (a line cut short by a kill
     * goes too), atomically, then append as before. */
    FILE *in = fopen(p->log_path, "r");
    if (!in) return err_set(err, TFM_ERR_IO, "%s: cannot read: %s", p->log_path, strerror(errno));
    AtomicFile af;
    TfmStatus st = atomic_open(&af, p->log_path, err);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (st == TFM_OK && (n = getline(&line, &cap, in)) > 0) {
        long s;
        if (line[n - 1] != '\n' || sscanf(line, "{\"step\": %ld", &s) != 1 || s > step) continue;
        if (fwrite(line, 1, (size_t)n, af.f) != (size_t)n) break;   /* commit reports it */
    }
    free(line);
    fclose(in);
    if (st != TFM_OK) return st;
    if ((st = atomic_commit(&af, err)) != TFM_OK) return st;
    fclose(p->log);
    if (!(p->log = fopen(p->log_path, "a")))
        return err_set(err, TFM_ERR_IO, "%s: cannot write: %s", p->log_path, strerror(errno));
    return TFM_OK;
}

void progress_close(Progress *p)
{
    if (p->live_line_open && !p->quiet) fputc('\n', p->out);
    if (p->log) fclose(p->log);
    free(p->log_path);
    memset(p, 0, sizeof *p);
}

static void json_num(FILE *f, bool *first, const char *key, double v)
{
    if (isnan(v) || isinf(v)) return;       /* JSON has no NaN: leave the key out */
    fprintf(f, "%s\"%s\": %.9g", *first ? "" : ", ", key, v);
    *first = false;
}

TfmStatus progress_log(Progress *p, const ProgressEvent *ev, TfmErr *err)
{
    if (!p->log) return TFM_OK;     /* progress_open_silent */
    bool first = true;
    fputc('{', p->log);
    fprintf(p->log, "\"step\": %ld, \"epoch\": %ld", ev->step, ev->epoch);
    first = false;
    json_num(p->log, &first, "train_loss", ev->train_loss);
    json_num(p->log, &first, "train_nll", ev->train_nll);
    json_num(p->log, &first, "valid_loss", ev->valid_loss);
    json_num(p->log, &first, "valid_ppl", ev->valid_ppl);
    json_num(p->log, &first, "valid_bleu", ev->valid_bleu);
    json_num(p->log, &first, "lr", ev->lr);
    json_num(p->log, &first, "tok_per_s", ev->tok_per_s);
    json_num(p->log, &first, "elapsed_s", ev->elapsed_s);
    if (ev->averaged > 0) fprintf(p->log, ", \"averaged\": %d", ev->averaged);
    if (ev->ema) fprintf(p->log, ", \"ema\": true");
    fputs("}\n", p->log);
    if (fflush(p->log) != 0 || ferror(p->log))
        return err_set(err, TFM_ERR_IO, "%s: write failed: %s", p->log_path, strerror(errno));
    return TFM_OK;
}

TfmStatus progress_log_init(Progress *p, const char *path, uint64_t checksum, TfmErr *err)
{
    if (!p->log) return TFM_OK;
    fprintf(p->log, "{\"step\": 0, \"epoch\": 1, \"init\": \"");
    for (const char *c = path; *c; c++) {
        char esc[8];
        const int e = json_escape_byte((unsigned char)*c, esc);
        if (e) fwrite(esc, 1, (size_t)e, p->log);
        else fputc(*c, p->log);
    }
    fprintf(p->log, "\", \"init_checksum\": \"%016llx\"}\n", (unsigned long long)checksum);
    if (fflush(p->log) != 0 || ferror(p->log))
        return err_set(err, TFM_ERR_IO, "%s: write failed: %s", p->log_path, strerror(errno));
    return TFM_OK;
}

void progress_format_duration(char *buf, size_t n, double s)
{
    if (isnan(s) || s < 0) { snprintf(buf, n, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

void progress_show(Progress *p, const ProgressEvent *ev, bool force)
{
    if (p->quiet) return;
    if (!force && !p->tty && p->by_step) return;
    if (!force && ev->elapsed_s - p->last_print_s < (p->tty ? LIVE_EVERY_S : PLAIN_EVERY_S))
        return;
    p->last_print_s = ev->elapsed_s;
    char eta[32];
    progress_format_duration(eta, sizeof eta, ev->eta_s);
    /* the loss the optimizer sees (label-smoothed), and the NLL that
     * validation reports, with its perplexity */
    fprintf(p->out, "%sstep %ld  epoch %ld  smoothed loss %.4f  nll %.4f  ppl %.2f  lr %.3g  "
            "%.0f tok/s  ETA %s%s", p->tty ? "\r\033[K" : "", ev->step, ev->epoch,
            ev->train_loss, ev->train_nll, exp(ev->train_nll), ev->lr, ev->tok_per_s, eta,
            p->tty ? "" : "\n");
    p->live_line_open = p->tty;
    fflush(p->out);
}

void progress_note(Progress *p, const char *fmt, ...)
{
    if (p->quiet) return;
    if (p->live_line_open) {
        fputs("\r\033[K", p->out);
        p->live_line_open = false;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->out, fmt, ap);
    va_end(ap);
    fputc('\n', p->out);
    fflush(p->out);
}
