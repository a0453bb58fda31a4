/* Tests of sysload: the free cores a decoder takes by default. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/sysload.h"
#include "test.h"

TEST(sysload_free_cores_is_between_one_and_all)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int free_cores = sysload_free_cores();
    CHECK(free_cores >= 1);
    CHECK(free_cores <= cores);
}

/* With one busy process per core, no core is free: one thread, not all. */
TEST(sysload_free_cores_leaves_cores_that_others_keep_busy)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 2 || cores > 64) return;       /* nothing to leave, or too many to spin */
    pid_t kids[64];
    int n = 0;
    for (long i = 0; i < cores; i++) {
        pid_t p = fork();
        if (p == 0) {
            volatile unsigned long spin = 0;
            for (;;) spin++;
        }
        if (p > 0) kids[n++] = p;
    }
    const struct timespec settle = {0, 50 * 1000000};
    nanosleep(&settle, NULL);
    CHECK(sysload_other_runnable() >= 1);
    CHECK_EQ_INT(sysload_free_cores(), 1);
    for (int i = 0; i < n; i++) kill(kids[i], SIGKILL);
    for (int i = 0; i < n; i++) waitpid(kids[i], NULL, 0);
}
