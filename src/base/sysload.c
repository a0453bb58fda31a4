/* sysload: other runnable tasks and the cores they leave, from /proc/loadavg. */
#include "base/sysload.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* The 4th field of /proc/loadavg, "R/T": R tasks runnable now (this one
 * included), -1 when unreadable. */
static int runnable_now(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return -1;
    int running = -1, total;
    if (fscanf(f, "%*f %*f %*f %d/%d", &running, &total) != 2) running = -1;
    fclose(f);
    return running;
}

int sysload_other_runnable(void)
{
    enum { SAMPLES = 4 };
    const struct timespec gap = {0, 1000000};      /* 1 ms */
    int least = -1;
    for (int i = 0; i < SAMPLES; i++) {
        if (i > 0) nanosleep(&gap, NULL);
        int r = runnable_now();
        if (r < 0) return -1;
        if (least < 0 || r < least) least = r;
        if (least <= 1) break;                      /* only this process: idle */
    }
    return least - 1;
}

int sysload_free_cores(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    int others = sysload_other_runnable();
    long free_cores = others > 0 ? cores - others : cores;
    return free_cores > 1 ? (int)free_cores : 1;
}
