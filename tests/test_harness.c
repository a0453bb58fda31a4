/* test_harness: the runner itself (tests/cli_harness.sh runs these). They do
 * nothing unless TFM_TEST_HARNESS names them: each shows what a failure or a
 * crash does to a run, so it must not happen in the normal suite. */
#include "test.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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
