/* atomic_file: temp + fsync + rename. */
#include "base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/text.h"

/* The file to replace: path itself, or the file a symlink at path points
 * to. Sets *out (malloc'd) or err. */
static TfmStatus resolve_target(const char *path, char **out, TfmErr *err)
{
    *out = NULL;
    if (path[0] == '\0') return err_set(err, TFM_ERR_IO, "output path is empty");
    if (path[strlen(path) - 1] == '/')
        return err_set(err, TFM_ERR_IO, "%s: names a folder, not a file", path);
    struct stat sb;
    char *target = NULL;
    if (lstat(path, &sb) != 0) {
        if (errno != ENOENT)
            return err_set(err, TFM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        target = xstrdup(path, NULL);          /* a new file */
    } else if (S_ISLNK(sb.st_mode)) {
        /* rename would replace the link itself; write where it points */
        target = realpath(path, NULL);
        if (!target)
            return err_set(err, TFM_ERR_IO, "%s: cannot follow the symbolic link: %s", path,
                           strerror(errno));
        if (stat(target, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            free(target);
            return err_set(err, TFM_ERR_IO, "%s: exists and is not a regular file; not "
                           "replacing it", path);
        }
    } else if (!S_ISREG(sb.st_mode)) {
        return err_set(err, TFM_ERR_IO, "%s: exists and is not a regular file; not replacing it",
                       path);
    } else {
        target = xstrdup(path, NULL);
    }
    if (!target) return err_set(err, TFM_ERR_NOMEM, "out of memory");
    *out = target;
    return TFM_OK;
}

TfmStatus atomic_check_target(const char *path, TfmErr *err)
{
    /* the temp file is made and removed: a read-only folder or file system,
     * or a missing permission, shows now */
    AtomicFile af;
    TfmStatus st = atomic_open(&af, path, err);
    if (st == TFM_OK) atomic_abort(&af);
    return st;
}

TfmStatus atomic_check_own_kind(const char *path, const char *magic, const char *kind,
                                TfmErr *err)
{
    bool regular;
    int fd = text_open_nonblocking(path, &regular);
    if (fd < 0 && errno != ENOENT)
        return err_set(err, TFM_ERR_IO, "%s: cannot read it to see what it is: %s", path,
                       strerror(errno));
    if (fd < 0) return TFM_OK;
    size_t want = strlen(magic);
    char head[16];
    ssize_t n = 0;
    if (regular && want <= sizeof head) n = read(fd, head, want);
    close(fd);
    if (!regular || n == 0 || (n == (ssize_t)want && memcmp(head, magic, want) == 0))
        return TFM_OK;
    return err_set(err, TFM_ERR_IO, "%s: exists and is not a %s; not replacing it", path, kind);
}

TfmStatus atomic_open(AtomicFile *af, const char *path, TfmErr *err)
{
    memset(af, 0, sizeof *af);
    TfmStatus st = resolve_target(path, &af->path, err);
    if (st != TFM_OK) return st;
    size_t n = strlen(af->path);
    af->tmp = xmalloc(n + 32, err);
    if (!af->tmp) goto fail;
    snprintf(af->tmp, n + 32, "%s.tmp.%ld", af->path, (long)getpid());
    /* O_EXCL: never write through whatever else sits at the temp name; a
     * stale temp of a dead process with our pid goes first. */
    unlink(af->tmp);
    int fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 || !(af->f = fdopen(fd, "wb"))) {
        err_set(err, TFM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(af->tmp);
        }
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
    char *copy = xstrdup(path, NULL);
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

bool atomic_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
