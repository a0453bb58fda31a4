/* launcher: what mpirun (Open MPI, MPICH, PMIx launchers) tells a process
 * through its environment, read the same way by both builds of dist. */
#ifndef TFM_DIST_LAUNCHER_H
#define TFM_DIST_LAUNCHER_H

#include <stdlib.h>

/* The rank count the launcher started, or 0 when not started by one. */
static inline int launcher_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v) return atoi(v) > 0 ? atoi(v) : 1;
    }
    return getenv("PMIX_RANK") || getenv("PMI_RANK") ? 1 : 0;
}

/* This process's rank as the launcher numbers them (0 when unknown). */
static inline int launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v) return atoi(v);
    }
    return 0;
}

#endif
