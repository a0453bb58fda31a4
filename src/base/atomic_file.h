/* atomic_file: write a file so that readers see either the old or the new
 * content, never a torn one: write to a temp file in the same folder, fflush,
 * fsync, rename over the target, fsync the folder. A crash, kill -9 or a full
 * disk during the write leaves the previous file intact.
 *
 * Only regular files are replaced: rename would put a regular file in place
 * of a FIFO, a device node or a folder, so an existing target of another
 * kind is refused. A symbolic link is followed: the file it points to is
 * replaced (atomically, temp file in that file's folder) and the link stays;
 * a link that leads nowhere is refused. */
#ifndef TFM_ATOMIC_FILE_H
#define TFM_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>
#include "base/err.h"

typedef struct {
    FILE *f;            /* write here */
    char *path;         /* final name (a symlink's target, resolved) */
    char *tmp;          /* temp name, same folder */
} AtomicFile;

/* Creates the temp file. Errors: TFM_ERR_IO naming the path, including
 * "PATH: exists and is not a regular file; not replacing it" and
 * "PATH: cannot follow the symbolic link: REASON". */
TfmStatus atomic_open(AtomicFile *af, const char *path, TfmErr *err);

/* The checks of atomic_open, and its temp file made and removed again, for
 * callers that will write path much later (train.model after training). */
TfmStatus atomic_check_target(const char *path, TfmErr *err);

/* Refuses an existing, non-empty regular file at path (a symlink followed)
 * whose first bytes are not `magic`: "PATH: exists and is not a KIND; not
 * replacing it". For outputs tfm may only replace with their own kind. */
TfmStatus atomic_check_own_kind(const char *path, const char *magic, const char *kind,
                                TfmErr *err);

/* True when a and b name one existing file (symlinks followed, as saving
 * follows them): saving to a would replace b's content. */
bool atomic_same_file(const char *a, const char *b);

/* Flushes, syncs and renames into place; the struct is released either way.
 * Errors (a short write, a full disk) leave the old file and remove the temp. */
TfmStatus atomic_commit(AtomicFile *af, TfmErr *err);

/* Discards the temp file (after an error). Safe on a released struct. */
void atomic_abort(AtomicFile *af);

#endif
