/* run_tests: runs every registered TEST (or those whose name contains argv[1])
 * and ends with "N passed, N failed"; exits 1 on any failure. */
#include "test.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024

static struct { const char *name, *file; TestFn fn; } tests[MAX_TESTS];
static int n_tests;
static int current_failures;

void test_register(const char *name, const char *file, TestFn fn)
{
    if (n_tests < MAX_TESTS) {
        tests[n_tests].name = name;
        tests[n_tests].file = file;
        tests[n_tests].fn = fn;
        n_tests++;
    }
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    current_failures++;
}

const char *test_data_dir(void)
{
    const char *d = getenv("TFM_TEST_DATA");
    return d ? d : "tests/data";
}

const char *test_shared_dir(void)
{
    const char *d = getenv("TFM_SHARED");
    return d ? d : "../shared";
}

static char tmpdir[256];

static void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", tmpdir);
}

const char *test_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(tmpdir, sizeof tmpdir, "%s/tfm-test.XXXXXX", base);
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

char *test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) { free(buf); buf = NULL; break; }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int test_list_dir(const char *dir, int (*keep)(const char *dir, const char *name),
                  char **names, int max)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && keep(dir, e->d_name))
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    return n;
}

const char *test_write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
    return path;
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    int passed = 0, failed = 0;
    for (int i = 0; i < n_tests; i++) {
        if (filter && !strstr(tests[i].name, filter) && !strstr(tests[i].file, filter))
            continue;
        current_failures = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tests[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (current_failures) {
            failed++;
            fprintf(stderr, "FAIL %s (%s)\n", tests[i].name, tests[i].file);
        } else {
            passed++;
            if (getenv("TFM_TEST_VERBOSE"))
                fprintf(stderr, "ok   %s (%.0f ms)\n", tests[i].name, ms);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
