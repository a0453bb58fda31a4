/* atomic_file: write a file so that readers see either the old or the new
 * content, never a torn one: write to a temp file in the same folder, fflush,
 * fsync, rename over the target, fsync the folder. A crash, kill -9 or a full
 * disk during the write leaves the previous file intact. */
#ifndef TFM_ATOMIC_FILE_H
#define TFM_ATOMIC_FILE_H

#include <stdio.h>
#include "err.h"

typedef struct {
    FILE *f;            /* write here */
    char *path;         /* final name */
    char *tmp;          /* temp name, same folder */
} AtomicFile;

/* Creates the temp file. Errors: TFM_ERR_IO naming the path. */
TfmStatus atomic_open(AtomicFile *af, const char *path, TfmErr *err);

/* Flushes, syncs and renames into place; the struct is released either way.
 * Errors (a short write, a full disk) leave the old file and remove the temp. */
TfmStatus atomic_commit(AtomicFile *af, TfmErr *err);

/* Discards the temp file (after an error). Safe on a released struct. */
void atomic_abort(AtomicFile *af);

#endif
