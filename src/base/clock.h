/* clock: seconds on the monotonic clock, for durations (never wall time). */
#ifndef TFM_CLOCK_H
#define TFM_CLOCK_H

#include <time.h>

static inline double clock_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
