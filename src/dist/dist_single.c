/* dist_single: the build without MPI: one rank; the collectives are no-ops. */
#include "dist/dist.h"

#include "dist/launcher.h"

#include <string.h>

TfmStatus dist_init(int *argc, char ***argv, TfmErr *err)
{
    (void)argc;
    (void)argv;
    const int n = launcher_size();
    if (n <= 1) return TFM_OK;
    /* every rank says the same: rank 0 alone prints it */
    err->collective = true;
    err->quiet = launcher_rank() > 0;
    return err_set(err, TFM_ERR_USAGE, "started by mpirun with %d ranks, but this tfm is "
                   "built without MPI: build it with `make MPI=1`", n);
}

void dist_finalize(void) {}
void dist_abort(int code) { (void)code; }
int dist_rank(void) { return 0; }
int dist_size(void) { return 1; }
int dist_local_size(void) { return 1; }
const char *dist_library(void) { return NULL; }
void dist_sum_floats(float *x, size_t n) { (void)x; (void)n; }
void dist_sum_start(float *x, size_t n) { (void)x; (void)n; }
void dist_sum_wait(void) {}
bool dist_overlap_sums(void) { return false; }
void dist_sum_doubles(double *x, int n) { (void)x; (void)n; }
void dist_max_longs(long *x, int n) { (void)x; (void)n; }
void dist_broadcast(void *buf, size_t n) { (void)buf; (void)n; }
void dist_allgather_ints(int *x, const size_t *counts) { (void)x; (void)counts; }

void dist_alltoall_ints(const int *send, const size_t *send_n, int *recv, const size_t *recv_n)
{
    (void)recv_n;
    if (send_n[0]) memcpy(recv, send, send_n[0] * sizeof *send);
}
double dist_comm_seconds(void) { return 0; }
