/* sysload: whether other programs are keeping the CPUs busy right now, read
 * when tfm starts (OpenMP's threads must know before they start whether to
 * spin or to sleep while they wait for each other: nn/blas.c). */
#ifndef TFM_SYSLOAD_H
#define TFM_SYSLOAD_H

/* The tasks of other programs runnable at this moment: the smallest count
 * of a few samples of /proc/loadavg over a few milliseconds, this process
 * not counted (a CPU-bound program is runnable in every sample, a daemon's
 * short burst is not). -1 when it cannot be read. */
int sysload_other_runnable(void);

/* The cores that other programs leave free right now (at least 1): a
 * decoder run on more threads than that waits at every step for a thread
 * the kernel has put aside (BENCHMARKS.md, the busy machine). */
int sysload_free_cores(void);

#endif
