/* data_print: fingerprints of data files. The hash reads at most 1 MiB of
 * a file (16 blocks of 64 KiB spread evenly over it, the whole file when it
 * is smaller), so checking a corpus of gigabytes at every resume costs
 * milliseconds; with the size it catches a replaced, truncated, appended or
 * re-generated file, though not an edit that keeps the size and falls
 * between the blocks. */
#include "train/data_print.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fnv.h"

enum { BLOCK = 64 << 10, BLOCKS = 16 };

static TfmStatus hash_file(const char *path, uint64_t *size, uint64_t *hash, TfmErr *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        TfmStatus st = err_set(err, TFM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return st;
    }
    static unsigned char buf[BLOCK];    /* not per step: once per file at the start */
    const uint64_t n = (uint64_t)sb.st_size;
    uint64_t h = fnv1a64(FNV1A64_START, &n, sizeof n);
    const int blocks = n <= (uint64_t)BLOCK * BLOCKS ? (int)((n + BLOCK - 1) / BLOCK) : BLOCKS;
    TfmStatus st = TFM_OK;
    for (int i = 0; i < blocks; i++) {
        const uint64_t at = n <= (uint64_t)BLOCK * BLOCKS ? (uint64_t)i * BLOCK
                                                           : (n - BLOCK) / (BLOCKS - 1) * (uint64_t)i;
        ssize_t got = pread(fd, buf, BLOCK, (off_t)at);
        if (got < 0) {
            st = err_set(err, TFM_ERR_IO, "%s: read error: %s", path, strerror(errno));
            break;
        }
        h = fnv1a64(h, buf, (size_t)got);
    }
    close(fd);
    *size = n;
    *hash = h;
    return st;
}

static TfmStatus add_line(char **out, size_t *len, size_t *cap, const char *key, const char *path,
                          TfmErr *err)
{
    uint64_t size = 0, hash = 0;
    TfmStatus st = hash_file(path, &size, &hash, err);
    if (st != TFM_OK) return st;
    char *real = realpath(path, NULL);
    const char *shown = real ? real : path;
    size_t need = strlen(key) + strlen(shown) + 64;
    if ((st = xgrow((void **)out, cap, *len + need, 1, err)) == TFM_OK)
        *len += (size_t)snprintf(*out + *len, *cap - *len, "%s\t%" PRIu64 "\t%016" PRIx64 "\t%s\n",
                                 key, size, hash, shown);
    free(real);
    return st;
}

char *data_print_make(const TfmConfig *cfg, TfmErr *err)
{
    const DataConfig *d = &cfg->data;
    char *out = NULL;
    size_t len = 0, cap = 0;
    if (xgrow((void **)&out, &cap, 1, 1, err) != TFM_OK) return NULL;
    out[0] = '\0';
    TfmStatus st = TFM_OK;
    for (int i = 0; st == TFM_OK && i < d->train_src.n; i++)
        st = add_line(&out, &len, &cap, "data.train_src", d->train_src.v[i], err);
    for (int i = 0; st == TFM_OK && i < d->train_tgt.n; i++)
        st = add_line(&out, &len, &cap, "data.train_tgt", d->train_tgt.v[i], err);
    if (st == TFM_OK) st = add_line(&out, &len, &cap, "data.valid_src", d->valid_src, err);
    if (st == TFM_OK) st = add_line(&out, &len, &cap, "data.valid_tgt", d->valid_tgt, err);
    if (st != TFM_OK) {
        free(out);
        return NULL;
    }
    return out;
}

typedef struct { char key[64]; unsigned long long size; char hash[17]; const char *path; size_t path_len; } Line;

/* Parses the line at *p (advancing it); false at the end or on a malformed line. */
static bool next_line(const char **p, Line *l)
{
    if (!**p) return false;
    const char *end = strchr(*p, '\n');
    if (!end) end = *p + strlen(*p);
    int key_len = 0, hash_len = 0, used = 0;
    if (sscanf(*p, "%63[^\t]%n\t%llu\t%16[0-9a-f]%n\t%n", l->key, &key_len, &l->size, l->hash,
               &hash_len, &used) < 3 || used == 0 || *p + used > end)
        return false;
    l->path = *p + used;
    l->path_len = (size_t)(end - l->path);
    *p = *end ? end + 1 : end;
    return true;
}

/* The lines of print that are key's files. */
static int count_files(const char *print, const char *key)
{
    int n = 0;
    const size_t k = strlen(key);
    for (const char *p = print; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        n += strncmp(p, key, k) == 0 && p[k] == '\t';
    return n;
}

TfmStatus data_print_compare(const char *saved, const char *now, const char *ckpt_path,
                             TfmErr *err)
{
    static const char ways[] = "; to train on other data, start from its model with train.init, "
                               "or start over with --restart";
    const char *a = saved, *b = now;
    Line x, y;
    for (;;) {
        bool has_x = next_line(&a, &x), has_y = next_line(&b, &y);
        if (!has_x && !has_y) return TFM_OK;
        if (has_x != has_y || strcmp(x.key, y.key) != 0) {
            const char *key = has_y ? y.key : x.key;
            const int n = count_files(now, key);
            return err_set(err, TFM_ERR_CONFIG, "%s: the config names %d file%s, the run of %s "
                           "read %d%s", key, n, n == 1 ? "" : "s", ckpt_path,
                           count_files(saved, key), ways);
        }
        if (x.path_len != y.path_len || memcmp(x.path, y.path, x.path_len) != 0)
            return err_set(err, TFM_ERR_CONFIG, "%s: %.*s is not the file the run of %s read "
                           "(%.*s)%s", y.key, (int)y.path_len, y.path, ckpt_path, (int)x.path_len,
                           x.path, ways);
        if (x.size != y.size)
            return err_set(err, TFM_ERR_CONFIG, "%s: %.*s has %llu bytes, %llu when %s was "
                           "saved%s", y.key, (int)y.path_len, y.path, y.size, x.size, ckpt_path, ways);
        if (strcmp(x.hash, y.hash) != 0)
            return err_set(err, TFM_ERR_CONFIG, "%s: %.*s changed since %s was saved (same size, "
                           "other contents)%s", y.key, (int)y.path_len, y.path, ckpt_path, ways);
    }
}
