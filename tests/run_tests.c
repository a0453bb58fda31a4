/* run_tests: runs every registered TEST (or those whose name contains argv[1])
 * and ends with "N passed, N failed"; exits 1 on any failure. A failed check
 * ends its test (test_fail jumps back here); a crash is counted as a failure
 * and the closing line is printed before the crash goes on to its usual
 * handler (a core, or the sanitizer's report). */
#include "test.h"

#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"

typedef struct { const char *name, *file; TestFn fn; } Test;
static Test *tests;
static int n_tests, cap_tests;
static bool registry_full;      /* a test could not be registered: refuse to run */
static jmp_buf test_end;
static bool in_test;
static int passed, failed;
static const char *running;     /* the test now running, for the crash report */

void test_register(const char *name, const char *file, TestFn fn)
{
    if (n_tests == cap_tests) {
        int cap = cap_tests ? 2 * cap_tests : 256;
        Test *t = realloc(tests, sizeof *t * (size_t)cap);
        if (!t) {
            registry_full = true;
            return;
        }
        tests = t;
        cap_tests = cap;
    }
    tests[n_tests++] = (Test){name, file, fn};
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (in_test) longjmp(test_end, 1);
    abort();   /* a check outside any test: nothing to go back to */
}

/* A crash in a test: it failed, and the summary line still comes last. */
static struct sigaction old_actions[NSIG];
static void on_crash(int sig, siginfo_t *info, void *context)
{
    (void)context;
    char line[256];
    int n = snprintf(line, sizeof line, "FAIL %s (signal %d)\n", running ? running : "?", sig);
    if (n > 0) (void)!write(STDERR_FILENO, line, (size_t)n);
    n = snprintf(line, sizeof line, "%d passed, %d failed\n", passed, failed + 1);
    if (n > 0) (void)!write(STDOUT_FILENO, line, (size_t)n);
    /* back to the usual handler: a fault repeats into it on return (with
     * its own context, for a sanitizer's report); a sent signal is sent
     * again, and comes when this handler returns */
    sigaction(sig, &old_actions[sig], NULL);
    if (info->si_code <= 0) raise(sig);
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
                  char ***names)
{
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || !keep(dir, e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(*names, (size_t)cap * sizeof **names);
            if (!grown) test_fail(__FILE__, __LINE__, "%s: out of memory listing it", dir);
            *names = grown;
        }
        if (!((*names)[n++] = strdup(e->d_name)))
            test_fail(__FILE__, __LINE__, "%s: out of memory listing it", dir);
    }
    closedir(d);
    if (n) qsort(*names, (size_t)n, sizeof **names, compare_names);
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
    if (registry_full) {
        fprintf(stderr, "run_tests: out of memory registering the tests; none run\n");
        printf("0 passed, 1 failed\n");
        return 1;
    }
    const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction sa = {0};
        sa.sa_sigaction = on_crash;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, &old_actions[sigs[i]]);
    }
    fflush(stdout);
    for (int i = 0; i < n_tests; i++) {
        if (filter && !strstr(tests[i].name, filter) && !strstr(tests[i].file, filter))
            continue;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        running = tests[i].name;
        volatile bool ok = true;       /* set after the jump back */
        in_test = true;
        if (setjmp(test_end) == 0) tests[i].fn();
        else ok = false;
        in_test = false;
        err_fail_alloc_after(-1);      /* a test that ended early may leave it armed */
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (!ok) {
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
