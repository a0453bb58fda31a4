/* dist_mpi: the ranks of an `mpirun -np N tfm train` job, over MPI
 * (make MPI=1). The one file that includes <mpi.h>. A plain `tfm ...`
 * without mpirun runs as one rank and never calls MPI_Init. */
#include "dist/dist.h"
#include "dist/launcher.h"
#include "base/clock.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank_ = 0, size_ = 1, local_size_ = 1;
static bool joined = false;
static double comm_s = 0;
static char library[MPI_MAX_LIBRARY_VERSION_STRING];

/* The sums started and not yet waited for. The array grows to the most a
 * step has used and stays, so steps do not allocate. */
static MPI_Request *pending;
static int n_pending, cap_pending;

TfmStatus dist_init(int *argc, char ***argv, TfmErr *err)
{
    /* A plain `tfm ...` stays out of MPI: one rank, nothing to set up. */
    if (launcher_size() == 0) return TFM_OK;
    /* Only the main thread calls MPI (the OpenMP workers never do). */
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return err_set(err, TFM_ERR_IO, "MPI_Init failed");
    joined = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    /* errors of a collective end the job (the default), so a dead rank
     * never leaves the others waiting */
    return TFM_OK;
}

void dist_finalize(void)
{
    dist_sum_wait();
    free(pending);
    pending = NULL;
    cap_pending = 0;
    if (joined) MPI_Finalize();
    joined = false;
}

void dist_abort(int code)
{
    if (joined && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

int dist_rank(void) { return rank_; }
int dist_size(void) { return size_; }
int dist_local_size(void) { return local_size_; }

const char *dist_library(void)
{
    if (!library[0]) {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int n = 0;
        MPI_Get_library_version(v, &n);
        v[strcspn(v, ",\n")] = '\0';    /* "Open MPI v4.1.4, package: ..." */
        snprintf(library, sizeof library, "%s", v);
    }
    return library;
}

/* MPI counts are ints: long arrays go in chunks. */
#define CHUNK ((size_t)1 << 30)

void dist_sum_floats(float *x, size_t n)
{
    if (size_ == 1) return;
    double t0 = clock_now_s();
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        MPI_Allreduce(MPI_IN_PLACE, x + i, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    comm_s += clock_now_s() - t0;
}

static bool add_request(MPI_Request r)
{
    if (n_pending == cap_pending) {
        int cap = cap_pending ? 2 * cap_pending : 64;
        MPI_Request *p = xrealloc(pending, (size_t)cap * sizeof *p, NULL);
        if (!p) return false;
        pending = p;
        cap_pending = cap;
    }
    pending[n_pending++] = r;
    return true;
}

void dist_sum_start(float *x, size_t n)
{
    if (size_ == 1) return;
    double t0 = clock_now_s();
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        MPI_Request r;
        MPI_Iallreduce(MPI_IN_PLACE, x + i, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
        /* out of memory for one more handle: finish this sum now */
        if (!add_request(r)) MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    int done = 0;
    MPI_Testall(n_pending, pending, &done, MPI_STATUSES_IGNORE);
    if (done) n_pending = 0;
    comm_s += clock_now_s() - t0;
}

void dist_sum_wait(void)
{
    if (n_pending == 0) return;
    double t0 = clock_now_s();
    MPI_Waitall(n_pending, pending, MPI_STATUSES_IGNORE);
    n_pending = 0;
    comm_s += clock_now_s() - t0;
}

bool dist_overlap_sums(void)
{
    if (size_ == 1) return false;
    const char *v = getenv("TFM_MPI_OVERLAP");
    if (v && (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)) return v[0] == '1';
    /* Measured on one machine (shared memory, BENCHMARKS.md): a sum there
     * costs a few ms and one blocking MPI_Allreduce is as fast or faster
     * than per-layer MPI_Iallreduce; overlap pays across a network. */
    return local_size_ < size_;
}

void dist_sum_doubles(double *x, int n)
{
    if (size_ == 1) return;
    double t0 = clock_now_s();
    MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    comm_s += clock_now_s() - t0;
}

void dist_max_longs(long *x, int n)
{
    if (size_ == 1) return;
    double t0 = clock_now_s();
    MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    comm_s += clock_now_s() - t0;
}

void dist_broadcast(void *buf, size_t n)
{
    if (size_ == 1) return;
    double t0 = clock_now_s();
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        MPI_Bcast((char *)buf + i, (int)k, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    comm_s += clock_now_s() - t0;
}

/* One round of an exchange: n_send ints to rank `to` while n_recv come
 * from rank `from`, in pieces of at most CHUNK (MPI counts are ints). Both
 * ends of a message cut it the same way, so the pieces match. */
static void swap_ints(const int *send, size_t n_send, int to, int *recv, size_t n_recv, int from)
{
    for (size_t i = 0; i < n_send || i < n_recv; i += CHUNK) {
        MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        if (i < n_recv)
            MPI_Irecv(recv + i, (int)(n_recv - i < CHUNK ? n_recv - i : CHUNK), MPI_INT, from, 1,
                      MPI_COMM_WORLD, &r[0]);
        if (i < n_send)
            MPI_Isend(send + i, (int)(n_send - i < CHUNK ? n_send - i : CHUNK), MPI_INT, to, 1,
                      MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
}

/* Where rank r's part starts, in ints. */
static size_t part_at(const size_t *n, int r)
{
    size_t at = 0;
    for (int k = 0; k < r; k++) at += n[k];
    return at;
}

/* Both exchanges go pairwise: in round s each rank sends to rank + s and
 * receives from rank - s, so every pair meets once and no rank waits on a
 * rank that waits on it. */
void dist_allgather_ints(int *x, const size_t *counts)
{
    if (size_ == 1) return;
    double t0 = clock_now_s();
    for (int s = 1; s < size_; s++) {
        int to = (rank_ + s) % size_, from = (rank_ - s + size_) % size_;
        swap_ints(x + part_at(counts, rank_), counts[rank_], to, x + part_at(counts, from),
                  counts[from], from);
    }
    comm_s += clock_now_s() - t0;
}

void dist_alltoall_ints(const int *send, const size_t *send_n, int *recv, const size_t *recv_n)
{
    double t0 = clock_now_s();
    if (send_n[rank_])
        memcpy(recv + part_at(recv_n, rank_), send + part_at(send_n, rank_),
               send_n[rank_] * sizeof *send);
    for (int s = 1; s < size_; s++) {
        int to = (rank_ + s) % size_, from = (rank_ - s + size_) % size_;
        swap_ints(send + part_at(send_n, to), send_n[to], to, recv + part_at(recv_n, from),
                  recv_n[from], from);
    }
    comm_s += clock_now_s() - t0;
}

double dist_comm_seconds(void) { return comm_s; }
