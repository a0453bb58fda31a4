/* dist: the processes of a data-parallel run (`mpirun -np N tfm train`).
 * Every rank trains the same model on its slice of each global batch; the
 * gradients are summed across ranks, so all hold the same weights. Without
 * MPI (the default build, or a plain `tfm train` in an MPI build) there is
 * one rank and every call below is trivial, so the callers need no #ifdef.
 * dist_mpi.c is the one file that includes <mpi.h> (make MPI=1);
 * dist_single.c is the build without it. */
#ifndef TFM_DIST_H
#define TFM_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Joins the job when started by mpirun (MPI_Init), else does nothing. A
 * build without MPI started by mpirun with more than one rank is refused
 * (TFM_ERR_USAGE), since each process would train alone. Call once, first. */
TfmStatus dist_init(int *argc, char ***argv, TfmErr *err);
/* Leaves the job (MPI_Finalize); call before a normal exit. */
void dist_finalize(void);
/* Ends every rank of the job at once, after a rank's own error. */
void dist_abort(int code);

int dist_rank(void);        /* 0 .. dist_size() - 1 */
int dist_size(void);        /* 1 without mpirun */
/* Ranks on this machine (for the threads each may use). */
int dist_local_size(void);
/* "Open MPI v4.1.4" (built in), or NULL in a build without MPI. */
const char *dist_library(void);

/* In-place sums over all ranks; every rank gets the same result. */
void dist_sum_floats(float *x, size_t n);
void dist_sum_doubles(double *x, int n);
/* Sums overlapped with the backward pass: dist_sum_start begins summing
 * x[0..n) over all ranks (in place) and returns at once; dist_sum_wait
 * returns when every sum started so far is in place. Every rank must start
 * the same ranges in the same order. dist_sum_start also lets the sums
 * already under way progress (MPI moves them only inside its calls). */
void dist_sum_start(float *x, size_t n);
void dist_sum_wait(void);
/* Whether training should sum its gradients per layer while the backward
 * pass runs, rather than in one sum after it: by default when the job's
 * ranks span more than one machine; TFM_MPI_OVERLAP=1 or 0 forces either. */
bool dist_overlap_sums(void);

/* Elementwise maximum of n longs over all ranks (agreements: any rank's
 * signal, rank 0's limits). */
void dist_max_longs(long *x, int n);
/* Rank 0's n bytes to every rank. */
void dist_broadcast(void *buf, size_t n);
/* Every rank's part of x to every rank: rank r's counts[r] ints follow the
 * parts of the ranks before it; each rank fills its own part before the
 * call and has them all after. counts are the same on every rank. */
void dist_allgather_ints(int *x, const size_t *counts);
/* An exchange of ints: this rank sends send_n[d] ints to rank d, from
 * send + the sum of send_n[< d], and receives recv_n[s] ints from rank s
 * into recv + the sum of recv_n[< s]. What a rank sends to d is what d
 * expects from it (its recv_n[rank]). */
void dist_alltoall_ints(const int *send, const size_t *send_n, int *recv, const size_t *recv_n);

/* Seconds this rank spent inside MPI calls so far (for benchmarks): the
 * exposed communication, waiting for slower ranks included; the part of an
 * overlapped sum that ran behind the backward pass is not in it. */
double dist_comm_seconds(void);

#endif
