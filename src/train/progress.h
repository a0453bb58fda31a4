/* progress: what `tfm train` shows while it runs — a live line on a terminal,
 * plain periodic lines otherwise, nothing with -q — and the log.jsonl record
 * of every log event. Fed by train.c; the training code never prints. */
#ifndef TFM_PROGRESS_H
#define TFM_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "base/err.h"

typedef struct {
    bool quiet, tty;
    FILE *out;              /* stderr */
    FILE *log;              /* out_dir/log.jsonl, appended */
    char *log_path;
    double last_print_s;    /* elapsed time of the last printed line */
    bool live_line_open;    /* a \r line is on screen */
    bool by_step;           /* plain lines only when forced (train.log_every) */
} Progress;

/* One event; fields that do not apply are NaN (numbers) or negative (counts). */
typedef struct {
    long step, epoch;      /* epoch counts from 1 */
    double train_loss, train_nll, valid_loss, valid_ppl, valid_bleu;
    double lr, tok_per_s, elapsed_s, eta_s;
    int averaged;          /* > 0: the figures are of the mean of this many checkpoints */
    bool ema;              /* the figures are of train.ema's moving average */
} ProgressEvent;

/* Shows and logs nothing (the ranks other than 0 of an mpirun job). */
void progress_open_silent(Progress *p);

/* Opens out_dir/log.jsonl, emptied first when truncate (a fresh run). */
TfmStatus progress_open(Progress *p, const char *out_dir, bool truncate, bool quiet, TfmErr *err);

/* A resumed run: drops the log's lines of steps after step (logged by the
 * run that was killed after its last checkpoint, and about to be redone). */
TfmStatus progress_trim(Progress *p, long step, TfmErr *err);
void progress_close(Progress *p);

/* Appends ev to log.jsonl. Errors: TFM_ERR_IO naming the file. */
TfmStatus progress_log(Progress *p, const ProgressEvent *ev, TfmErr *err);

/* Records in log.jsonl the model a run starts from (train.init): its path
 * and checksum, as a line of step 0. */
TfmStatus progress_log_init(Progress *p, const char *path, uint64_t checksum, TfmErr *err);

/* Shows a training update: the live line on a terminal (at most every 0.1
 * s), else a plain line when forced (or every few seconds unless by_step). */
void progress_show(Progress *p, const ProgressEvent *ev, bool force);
/* s seconds as people read them: "43s", "12m05s", "3h05m"; "?" when unknown. */
void progress_format_duration(char *buf, size_t n, double s);

/* Prints a message on its own line (clears a live line first). */
void progress_note(Progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
