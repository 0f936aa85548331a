/*
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * nb_setup_check - the nonblocking bar of a fresh communicator: on a new MPI_Comm_dup,
 * five nonblocking collectives outstanding at once (Iallreduce, Iallgather, Ibcast,
 * Ialltoall, Ireduce_scatter_block) then one MPI_Waitall; on another new dup, a
 * persistent allreduce (MPI_Allreduce_init, then MPI_Start/MPI_Wait three times).
 * Neither communicator ever sees a blocking collective. Every result is checked
 * exactly; then strata's MPI_T counters say whether strata served the calls.
 *
 *   nb_setup_check [-n COUNT] [-s]
 *
 * -n: elements (ints) per call and rank (default 131072: 512 KiB, above the built-in
 * host rules' hand-back sizes, so that a call strata may serve is one it serves);
 * -s: also require strata to have served every one of those calls (counters
 * coll_strata_<coll>_served grew by 4 allreduces and 1 of each other collective on
 * every rank, and handed_back_lazy_calls did not grow; handed_back_not_set_up may,
 * with the calls Open MPI makes on MPI_COMM_WORLD to number each dup). Without -s the
 * program is plain MPI C and must pass with and without strata.
 *
 *
 * nb_setup_check -g [-n COUNT] [-s] instead: the GPU chosen after MPI_Init (as almost
 * every application does), then on MPI_COMM_WORLD itself -- set up inside MPI_Init,
 * before any rank had a GPU -- six MPI_Iallreduce and a persistent allreduce started
 * three times on device buffers, and no blocking collective before them. With -s
 * strata must have served all nine and staged none (bytes_staged did not grow: they
 * ran in GPU memory), which holds only if a communicator asks again about GPUs at
 * nonblocking calls too. Needs a CUDA driver (test/fakecuda in CI).
 *
 *
 * nb_setup_check -y [-n COUNT] [-w SECONDS] instead: a device synchronize between one
 * rank's start of a nonblocking collective and its peers' starts, which MPI allows
 * (the peers may start only after, say, a message from that rank). On a dup of
 * MPI_COMM_WORLD made once the GPU is chosen, after two blocking allreduces on device
 * buffers that set the team up, three rounds of: rank 0 starts an MPI_Iallreduce on
 * device buffers, calls cuCtxSynchronize (every stream of its context), then sends
 * every other rank a message on MPI_COMM_WORLD; they start the same MPI_Iallreduce once
 * it came, or after the watchdog (-w, default 5 s). Exact results, and no watchdog
 * fired: the synchronize waited for nothing the peers had not started. A schedule
 * whose GPU work waits for peers' flags at its start (coll_strata_stream_flags eager)
 * makes the synchronize wait for them: "WAITED" lines, exit 1. Default COUNT 2048 ints
 * (8 KiB); run with coll_strata_device_segment_size 1024 for a call of 8 segments.
 *
 * Prints "nb_setup_check: PASS ..." on rank 0 and exits 0, else "MISMATCH ..." or
 * "NOT SERVED ..." lines and exit 1. Hangs are caught by the caller's timeout.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devbuf.h"

/* A persistent allreduce: MPI 4's (Open MPI 5.0 has it, though it reports MPI 3.1), else
 * Open MPI 4.1's extension. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define ALLREDUCE_INIT MPI_Allreduce_init
#else
#define ALLREDUCE_INIT MPIX_Allreduce_init
#endif

#define MAX_PVARS 256

static int rank, size, errors;

typedef struct {
    char name[128];
    int index;
    MPI_T_pvar_handle handle;
    unsigned long long value;
} pvar_t;

static pvar_t pvars[MAX_PVARS];
static int npvars;
static MPI_T_pvar_session session;

/* strata's counters of served and handed-back calls (and of staged bytes), with a handle each. */
static void open_counters(void)
{
    int num, i, count;
    MPI_T_pvar_get_num(&num);
    for (i = 0; i < num && npvars < MAX_PVARS; ++i) {
        char name[128];
        int name_len = sizeof name, verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type, &enumtype, NULL,
                                               NULL, &bind, &readonly, &continuous, &atomic) ||
            0 != strncmp(name, "coll_strata_", 12) || MPI_UNSIGNED_LONG_LONG != type ||
            (NULL == strstr(name, "_served") && NULL == strstr(name, "handed_back_") &&
             0 != strcmp(name, "coll_strata_bytes_staged"))) {
            continue;
        }
        snprintf(pvars[npvars].name, sizeof pvars[npvars].name, "%s", name);
        pvars[npvars++].index = i;
    }
    MPI_T_pvar_session_create(&session);
    for (i = 0; i < npvars; ++i) {
        MPI_T_pvar_handle_alloc(session, pvars[i].index, NULL, &pvars[i].handle, &count);
    }
}

/* The counter's value now, or -1 when strata has none of that name. */
static long long counter(const char *suffix)
{
    char full[160];
    int i;
    snprintf(full, sizeof full, "coll_strata_%s", suffix);
    for (i = 0; i < npvars; ++i) {
        if (0 == strcmp(pvars[i].name, full)) {
            unsigned long long v = 0;
            MPI_T_pvar_read(session, pvars[i].handle, &v);
            return (long long) v;
        }
    }
    return -1;
}

static void mismatch(const char *what, int i, long long got, long long want)
{
    if (errors++ < 5) {
        printf("MISMATCH rank %d: %s element %d: %lld, expected %lld\n", rank, what, i, got, want);
    }
}

/* Five nonblocking collectives outstanding on a fresh dup, then one wait. */
static void five_outstanding(int n)
{
    MPI_Comm c;
    MPI_Request req[5];
    int *ar_in = malloc(n * sizeof(int)), *ar_out = malloc(n * sizeof(int));
    int *ag_out = malloc((size_t) n * size * sizeof(int)), *bc = malloc(n * sizeof(int));
    int *a2a_in = malloc((size_t) n * size * sizeof(int)), *a2a_out = malloc((size_t) n * size * sizeof(int));
    int *rs_in = malloc((size_t) n * size * sizeof(int)), *rs_out = malloc(n * sizeof(int));
    int i, r, corrupt = NULL != getenv("STRATA_TEST_CORRUPT") && 0 == rank;
    long long sum_ranks = (long long) size * (size + 1) / 2;

    for (i = 0; i < n; ++i) {
        ar_in[i] = (rank + 1) * (i % 1000 + 1);
        bc[i] = 0 == rank ? i % 7919 : -1;
    }
    for (r = 0; r < size; ++r) {
        for (i = 0; i < n; ++i) {
            a2a_in[(size_t) r * n + i] = rank * 1000 + r + i % 13;
            rs_in[(size_t) r * n + i] = (rank + 1) * (r + 1) + i % 5;
        }
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Iallreduce(ar_in, ar_out, n, MPI_INT, MPI_SUM, c, &req[0]);
    MPI_Iallgather(ar_in, n, MPI_INT, ag_out, n, MPI_INT, c, &req[1]);
    MPI_Ibcast(bc, n, MPI_INT, 0, c, &req[2]);
    MPI_Ialltoall(a2a_in, n, MPI_INT, a2a_out, n, MPI_INT, c, &req[3]);
    MPI_Ireduce_scatter_block(rs_in, rs_out, n, MPI_INT, MPI_SUM, c, &req[4]);
    MPI_Waitall(5, req, MPI_STATUSES_IGNORE);
    if (corrupt) {
        ar_out[n / 2] += 1;
    }
    for (i = 0; i < n; ++i) {
        if (ar_out[i] != sum_ranks * (i % 1000 + 1)) mismatch("iallreduce", i, ar_out[i], sum_ranks * (i % 1000 + 1));
        if (bc[i] != i % 7919) mismatch("ibcast", i, bc[i], i % 7919);
        if (rs_out[i] != sum_ranks * (rank + 1) + size * (i % 5))
            mismatch("ireduce_scatter_block", i, rs_out[i], sum_ranks * (rank + 1) + size * (i % 5));
    }
    for (r = 0; r < size; ++r) {
        for (i = 0; i < n; ++i) {
            int ag = ag_out[(size_t) r * n + i], a2a = a2a_out[(size_t) r * n + i];
            if (ag != (r + 1) * (i % 1000 + 1)) mismatch("iallgather", r * n + i, ag, (r + 1) * (i % 1000 + 1));
            if (a2a != r * 1000 + rank + i % 13) mismatch("ialltoall", r * n + i, a2a, r * 1000 + rank + i % 13);
        }
    }
    MPI_Comm_free(&c);
    free(ar_in), free(ar_out), free(ag_out), free(bc), free(a2a_in), free(a2a_out), free(rs_in), free(rs_out);
}

/* A persistent allreduce on a fresh dup, started three times with new inputs. */
static void persistent_three(int n)
{
    MPI_Comm c;
    MPI_Request req;
    int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int));
    int i, round;
    long long sum_ranks = (long long) size * (size + 1) / 2;

    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    ALLREDUCE_INIT(in, out, n, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &req);
    for (round = 1; round <= 3; ++round) {
        for (i = 0; i < n; ++i) in[i] = (rank + 1) * round + i % 11;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (i = 0; i < n; ++i) {
            long long want = sum_ranks * round + (long long) size * (i % 11);
            if (out[i] != want) mismatch("persistent allreduce", i, out[i], want);
        }
    }
    MPI_Request_free(&req);
    MPI_Comm_free(&c);
    free(in), free(out);
}

/* -g: MPI_COMM_WORLD's nonblocking and persistent allreduces on device buffers, the GPU
 * chosen after MPI_Init. */
static void late_gpu(int n)
{
    int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int));
    void *d_in = devbuf_alloc(n * sizeof(int)), *d_out = devbuf_alloc(n * sizeof(int));
    long long sum_ranks = (long long) size * (size + 1) / 2;
    MPI_Request req;
    int call, i;

    if (NULL == d_in || NULL == d_out) {
        mismatch("device buffers (allocation failed)", 0, 0, 1);
        return;
    }
    for (call = 1; call <= 9; ++call) {
        for (i = 0; i < n; ++i) in[i] = (rank + 1) * call + i % 7;
        devbuf_to_dev(d_in, in, n * sizeof(int));
        if (call <= 6) {
            MPI_Iallreduce(d_in, d_out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        } else {
            if (7 == call) ALLREDUCE_INIT(d_in, d_out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
            MPI_Start(&req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        devbuf_to_host(out, d_out, n * sizeof(int));
        for (i = 0; i < n; ++i) {
            long long want = sum_ranks * call + (long long) size * (i % 7);
            if (out[i] != want) mismatch(call <= 6 ? "iallreduce on the GPU" : "persistent allreduce on the GPU", i,
                                         out[i], want);
        }
    }
    MPI_Request_free(&req);
    devbuf_free(d_in), devbuf_free(d_out);
    free(in), free(out);
}

/* -y: rank 0 synchronizes its device between its start and its peers' (see the top). */
static int sync_before_peers(int n, double watchdog, double *sync_ms)
{
    int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int));
    void *d_in = devbuf_alloc(n * sizeof(int)), *d_out = devbuf_alloc(n * sizeof(int));
    long long sum_ranks = (long long) size * (size + 1) / 2;
    int round, i, r, waited = 0, ok = NULL != d_in && NULL != d_out, all_ok = 0;
    MPI_Comm c;

    *sync_ms = 0;
    /* every rank leaves together when one could not allocate (no peer left waiting in a collective) */
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!ok) mismatch("device buffers (allocation failed)", 0, 0, 1);
        if (NULL != d_in) devbuf_free(d_in);
        if (NULL != d_out) devbuf_free(d_out);
        free(in), free(out);
        return 0;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    for (round = 0; round <= 4; ++round) {  /* 0, 1: blocking (setup); 2-4: the check */
        MPI_Request req;
        for (i = 0; i < n; ++i) in[i] = (rank + 1) * (round + 1) + i % 7;
        devbuf_to_dev(d_in, in, n * sizeof(int));
        if (round < 2) {
            MPI_Allreduce(d_in, d_out, n, MPI_INT, MPI_SUM, c);
        } else if (0 == rank) {
            int go = round;
            double t0;
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Iallreduce(d_in, d_out, n, MPI_INT, MPI_SUM, c, &req);
            t0 = MPI_Wtime();
            if (0 != devbuf_sync()) mismatch("cuCtxSynchronize (failed)", round, 1, 0);
            *sync_ms += (MPI_Wtime() - t0) * 1e3;
            for (r = 1; r < size; ++r) MPI_Send(&go, 1, MPI_INT, r, 7000 + round, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            int go = 0, came = 0;
            MPI_Request greq;
            double give_up;
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Irecv(&go, 1, MPI_INT, 0, 7000 + round, MPI_COMM_WORLD, &greq);
            give_up = MPI_Wtime() + watchdog;
            while (!came && MPI_Wtime() < give_up) {
                MPI_Test(&greq, &came, MPI_STATUS_IGNORE);
                if (!came) usleep(1000);
            }
            if (!came) {
                printf("WAITED rank %d: round %d: no word from rank 0 within %.0f s: its cuCtxSynchronize waited "
                       "for this rank to start the call\n", rank, round, watchdog);
                ++waited;
            }
            MPI_Iallreduce(d_in, d_out, n, MPI_INT, MPI_SUM, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            if (!came) MPI_Wait(&greq, MPI_STATUS_IGNORE);
        }
        devbuf_to_host(out, d_out, n * sizeof(int));
        for (i = 0; i < n; ++i) {
            long long want = sum_ranks * (round + 1) + (long long) size * (i % 7);
            if (out[i] != want) mismatch(round < 2 ? "allreduce on the GPU" : "iallreduce on the GPU", i, out[i], want);
        }
    }
    MPI_Comm_free(&c);
    devbuf_free(d_in), devbuf_free(d_out);
    free(in), free(out);
    return waited;
}

int main(int argc, char **argv)
{
    static const char *const colls[] = {"allreduce", "allgather", "bcast", "alltoall", "reduce_scatter"};
    static const long long calls[] = {4, 1, 1, 1, 1};
    long long before[5], lazy_before;
    long long staged_before = 0;
    int n = 0, need_strata = 0, gpu = 0, hazard = 0, opt, provided, k, all_errors = 0, not_served = 0, all_not_served;
    double watchdog = 5, sync_ms = 0;

    while ((opt = getopt(argc, argv, "n:sgyw:h")) != -1) {
        if ('n' == opt) n = atoi(optarg);
        else if ('s' == opt) need_strata = 1;
        else if ('g' == opt) gpu = 1;
        else if ('y' == opt) gpu = hazard = 1;
        else if ('w' == opt) watchdog = atof(optarg);
        else {
            fprintf(stderr, "usage: nb_setup_check [-g | -y [-w SECONDS]] [-n COUNT] [-s]\n");
            return 2;
        }
    }
    if (n <= 0) n = hazard ? 2048 : 131072;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    open_counters();
    for (k = 0; k < 5; ++k) {
        char name[64];
        snprintf(name, sizeof name, "%s_served", colls[k]);
        before[k] = counter(name);
    }
    lazy_before = counter("handed_back_lazy_calls");
    staged_before = counter("bytes_staged");

    if (gpu) {
        /* The local rank from the launcher, not MPI_Comm_split_type: no collective on
         * MPI_COMM_WORLD may come before the nonblocking ones. */
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
        char why[256];
        if (0 != devbuf_init(NULL != local ? atoi(local) : 0, why, sizeof why)) {
            printf("NO GPU rank %d: %s\n", rank, why);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (hazard) not_served += sync_before_peers(n, watchdog, &sync_ms);
        else late_gpu(n);
    } else {
        five_outstanding(n);
        persistent_three(n);
    }

    if (need_strata && gpu) {
        /* -g: nine calls, all in GPU memory; -y: two blocking and three nonblocking */
        long long now = counter("allreduce_served"), staged = counter("bytes_staged"), want = hazard ? 5 : 9;
        if (now < 0 || now - before[0] < want) {
            printf("NOT SERVED rank %d: coll_strata_allreduce_served grew by %lld, expected %lld\n", rank,
                   now < 0 ? -1 : now - before[0], want);
            ++not_served;
        }
        if (!hazard && (staged < 0 || staged != staged_before)) {
            printf("NOT SERVED rank %d: %lld bytes staged between host and GPU (not run in GPU memory)\n", rank,
                   staged - staged_before);
            ++not_served;
        }
    } else if (need_strata) {
        for (k = 0; k < 5; ++k) {
            char name[64];
            long long now;
            snprintf(name, sizeof name, "%s_served", colls[k]);
            now = counter(name);
            if (now < 0 || now - before[k] < calls[k]) {
                printf("NOT SERVED rank %d: coll_strata_%s grew by %lld, expected at least %lld\n", rank, name,
                       now < 0 ? -1 : now - before[k], calls[k]);
                ++not_served;
            }
        }
        if (counter("handed_back_lazy_calls") != lazy_before) {
            printf("NOT SERVED rank %d: %lld call(s) handed back before setup (lazy_calls)\n", rank,
                   counter("handed_back_lazy_calls") - lazy_before);
            ++not_served;
        }
    }
    MPI_Allreduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&not_served, &all_not_served, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (k = 0; k < npvars; ++k) MPI_T_pvar_handle_free(session, &pvars[k].handle);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    if (0 == rank && 0 == all_errors && 0 == all_not_served && hazard) {
        printf("nb_setup_check: PASS np %d, %d ints per call, rank 0's device synchronize between its start and its "
               "peers' waited for nothing they had not started (%.1f ms in all, 3 rounds)%s\n", size, n, sync_ms,
               need_strata ? ", every call served by strata" : "");
    } else if (0 == rank && 0 == all_errors && 0 == all_not_served) {
        printf("nb_setup_check: PASS np %d, %d ints per call%s%s\n", size, n,
               gpu ? ", the GPU chosen after MPI_Init, device buffers on MPI_COMM_WORLD" : "",
               need_strata ? (gpu ? ", every call served by strata in GPU memory" : ", every call served by strata")
                           : "");
    }
    MPI_Finalize();
    return all_errors || all_not_served ? 1 : 0;
}
