/* sysmem: how much memory this machine can give us, and the up-front check
 * that refuses a job which would not fit, with one clear error, instead of
 * being OOM-killed (exit 137, no message) halfway through. */
#ifndef TFM_SYSMEM_H
#define TFM_SYSMEM_H

#include "base/err.h"

/* Bytes available now: MemAvailable from /proc/meminfo (physical memory
 * where that is missing), capped by a cgroup v2 limit (memory.max minus
 * memory.current) when one is set. 0 when unknown. */
double sysmem_available(void);

/* This process's resident memory in bytes (VmRSS), 0 when unknown. */
double sysmem_resident(void);

/* TFM_OK when need bytes fit in 80% of sysmem_available() (or it is
 * unknown). Else TFM_ERR_NOMEM with
 * "WHAT needs about N GB of memory, this machine has M GB available (HINT)". */
TfmStatus sysmem_check(double need, const char *what, const char *hint, TfmErr *err);

#endif
