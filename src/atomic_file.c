/* atomic_file: temp + fsync + rename. */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TfmStatus atomic_open(AtomicFile *af, const char *path, TfmErr *err)
{
    memset(af, 0, sizeof *af);
    size_t n = strlen(path);
    af->path = xmalloc(n + 1, err);
    af->tmp = xmalloc(n + 32, err);
    if (!af->path || !af->tmp) goto fail;
    memcpy(af->path, path, n + 1);
    snprintf(af->tmp, n + 32, "%s.tmp.%ld", path, (long)getpid());
    af->f = fopen(af->tmp, "wb");
    if (!af->f) {
        err_set(err, TFM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        goto fail;
    }
    return TFM_OK;
fail:
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
    return err ? err->status : TFM_ERR_IO;
}

static void release(AtomicFile *af)
{
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
}

/* fsync the folder so the rename itself survives a power cut. */
static void sync_parent_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy) return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(copy);
}

TfmStatus atomic_commit(AtomicFile *af, TfmErr *err)
{
    int failed = ferror(af->f) || fflush(af->f) != 0 || fsync(fileno(af->f)) != 0;
    int saved_errno = errno;
    if (fclose(af->f) != 0 && !failed) {
        failed = 1;
        saved_errno = errno;
    }
    af->f = NULL;
    if (failed) {
        err_set(err, TFM_ERR_IO, "%s: write failed: %s", af->path,
                saved_errno ? strerror(saved_errno) : "I/O error");
        unlink(af->tmp);
        release(af);
        return TFM_ERR_IO;
    }
    if (rename(af->tmp, af->path) != 0) {
        err_set(err, TFM_ERR_IO, "%s: cannot replace: %s", af->path, strerror(errno));
        unlink(af->tmp);
        release(af);
        return TFM_ERR_IO;
    }
    sync_parent_dir(af->path);
    release(af);
    return TFM_OK;
}

void atomic_abort(AtomicFile *af)
{
    if (af->f) fclose(af->f);
    if (af->tmp) unlink(af->tmp);
    release(af);
}
