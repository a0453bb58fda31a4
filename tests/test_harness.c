/* test_harness: the runner itself. The harness_* tests (tests/cli_harness.sh
 * runs them) do nothing unless TFM_TEST_HARNESS names them: each shows what a
 * failure or a crash does to a run, so it must not happen in the normal
 * suite. The runner_* tests check its helpers in the normal suite. */
#include "test.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool asked(const char *what)
{
    const char *h = getenv("TFM_TEST_HARNESS");
    return h && strcmp(h, what) == 0;
}

static void nothing(void) {}

/* A failed set-up ends the test: the line after it would crash. */
TEST(harness_failed_check_ends_test)
{
    if (!asked("check")) return;
    int *p = NULL;
    CHECK(p != NULL);
    *p = 1;
}

/* A crash is a failure, and the closing line still comes. */
TEST(harness_crash_still_summarized)
{
    if (!asked("crash")) return;
    raise(SIGSEGV);
}

/* More tests than the first table held are all run, none dropped. */
TEST(harness_many_tests)
{
    if (!asked("many")) return;
    for (int i = 0; i < 2000; i++) test_register("harness_extra", __FILE__, nothing);
}

static int ends_in_txt(const char *dir, const char *name)
{
    (void)dir;
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".txt") == 0;
}

/* A folder of fixtures is listed whole and sorted, however many it holds
 * (the first version kept 256 and dropped the rest without a word). */
TEST(runner_list_dir_keeps_every_name)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/many_cases", test_tmpdir());
    CHECK(mkdir(dir, 0700) == 0);
    enum { N = 700 };
    for (int i = N - 1; i >= 0; i--) {
        snprintf(path, sizeof path, "%s/case%04d.txt", dir, i);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/skipped.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fclose(f);
    char **names;
    int n = test_list_dir(dir, ends_in_txt, &names);
    CHECK_EQ_INT(n, N);
    CHECK_STR(names[0], "case0000.txt");
    CHECK_STR(names[N - 1], "case0699.txt");
    for (int i = 1; i < n; i++) CHECK(strcmp(names[i - 1], names[i]) < 0);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    CHECK_EQ_INT(test_list_dir("/nonexistent/tfm", ends_in_txt, &names), 0);
}
