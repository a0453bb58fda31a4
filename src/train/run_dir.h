/* run_dir: the output folder of a training run (train.out_dir): opened
 * (checked, created, locked, cleaned) once before the run, closed after it.
 * Numbered checkpoints are ckpt.STEP.tfm in it. */
#ifndef TFM_RUN_DIR_H
#define TFM_RUN_DIR_H

#include <stdbool.h>

#include "base/err.h"
#include "model/config.h"

enum { RUN_DIR_MAX_CHECKPOINTS = 4096 };

typedef struct {
    int lock_fd;            /* holds out_dir/lock for the run; -1 when closed */
    char *last_path, *best_path, *average_path;    /* out_dir/{last,best,average}.tfm */
    char *ema_path;                                /* out_dir/ema.tfm (train.ema) */
    bool resuming;          /* last.tfm is there to resume from (and no --restart) */
    /* what run_dir_abandon may remove: what this run created */
    char *out_dir;
    size_t out_dir_existed;     /* the length of out_dir's prefix that existed */
    bool had_lock, had_log, had_vocab;
} RunDir;

/* Prepares cfg's out_dir for a run: refuses outputs that would overwrite the
 * inputs (errors prefixed with config_path when not NULL), creates out_dir
 * and train.model's folder, locks out_dir, checks that train.model can be
 * replaced, removes temp files a crashed run left, with restart removes the
 * checkpoints, and refuses numbered checkpoints without a last.tfm. A
 * refused run changes nothing (folders it created are removed). On failure
 * rd is closed. */
TfmStatus run_dir_open(RunDir *rd, const TfmConfig *cfg, const char *config_path, bool restart,
                       TfmErr *err);

/* A fresh run that failed before its first checkpoint: removes the files
 * and folders it created (lock, log.jsonl, vocab.txt, a new out_dir), so a
 * refused run leaves nothing behind. Then closes rd. */
void run_dir_abandon(RunDir *rd);

/* Releases the lock and frees the paths; safe on a closed RunDir. */
void run_dir_close(RunDir *rd);

bool run_dir_file_exists(const char *path);

/* dir/ckpt.STEP.tfm, the numbered checkpoint of step (malloc'd; NULL with
 * TFM_ERR_NOMEM set). */
char *run_dir_checkpoint_path(const char *dir, long step, TfmErr *err);

/* The steps of dir's numbered checkpoints, ascending, at most
 * RUN_DIR_MAX_CHECKPOINTS of them (steps holds that many); returns the count. */
int run_dir_list_checkpoints(const char *dir, long *steps);

/* Removes numbered checkpoints beyond the newest `keep`. */
void run_dir_prune_checkpoints(const char *dir, int keep);

#endif
