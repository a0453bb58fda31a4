/* fuzz_util: what the libFuzzer targets of tests/fuzz share. */
#ifndef TFM_FUZZ_UTIL_H
#define TFM_FUZZ_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The input as a file the readers can open by name: an in-memory file
 * (memfd), rewritten for each input. Returns its path, /proc/self/fd/N. */
static inline const char *fuzz_as_file(const unsigned char *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-input", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
    return path;
}

/* The input as a NUL-terminated string (malloc'd). */
static inline char *fuzz_as_string(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

#endif
