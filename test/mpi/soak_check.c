/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_check.c - a long run of mixed collectives on communicators strata serves.
 *
 * Calls allreduce, bcast, allgather and alltoall in turn at random, blocking,
 * nonblocking (one or two in flight) or persistent, at random sizes, every result
 * checked exactly. Between rounds it reserves libnbc tags on the same communicator
 * (persistent barrier inits, freed at once: libnbc's counter moves as in a job of
 * millions of nonblocking collectives), and every -m calls it makes one erroneous
 * call (a bcast whose count differs on one rank), after which the program recovers
 * the way the README describes: a barrier on MPI_COMM_WORLD (so that every rank has
 * heard), a dup of the spoiled communicator, which it uses from then on. Every rank
 * draws the same sequence (one seed). Nothing may hang (run it under a timeout) and
 * no call may return success with a wrong value.
 *
 * STRATA_TEST_CORRUPT=N (the control): rank 0 changes one value of call N's result
 * before checking it, which must make the run fail.
 *
 * Usage: soak_check [-n CALLS] [-m EVERY] [-b INITS] [-r ROUND] [-s SEED]
 *   -n  calls in all (default 20000)
 *   -m  an erroneous call every EVERY calls (default 3000; 0: none)
 *   -b  libnbc tags reserved per round (default 100000)
 *   -r  calls per round (default 1000)
 *   -s  seed (default 1)
 * Prints "soak_check: PASS ..." on success.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define P_INIT(name) MPI_##name##_init
#else
#define P_INIT(name) MPIX_##name##_init
#endif

static uint64_t g_state;
static unsigned draw(unsigned n)   /* the same sequence on every rank */
{
    g_state = g_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned) ((g_state >> 33) % n);
}

enum { ALLREDUCE, BCAST, ALLGATHER, ALLTOALL, NCOLLS };
static const char *const kNames[] = {"allreduce", "bcast", "allgather", "alltoall"};
enum { BLOCKING, NONBLOCKING, PERSISTENT, NMODES };
static const char *const kModes[] = {"blocking", "nonblocking", "persistent"};

typedef struct {
    int coll, count, root, seq;
    int *in, *out;
    MPI_Request req;
    int persistent;
} op_t;

static int g_rank, g_size;

static int value(int rank, int seq, int i) { return (rank + 1) * 131 + seq * 7 + i % 1009; }

static void fill(op_t *o)
{
    const int n = o->count, total = o->coll == ALLTOALL ? n * g_size : n;
    for (int i = 0; i < total; ++i) o->in[i] = value(g_rank, o->seq, i);
    for (int i = 0; i < n * g_size; ++i) o->out[i] = -1;
    if (o->coll == BCAST && g_rank != o->root)
        for (int i = 0; i < n; ++i) o->in[i] = -1;
}

/* Starts (nonblocking or persistent) or runs (blocking) o on comm. */
static int issue(op_t *o, int mode, MPI_Comm comm)
{
    const int n = o->count;
    o->persistent = mode == PERSISTENT;
    o->req = MPI_REQUEST_NULL;
    switch (o->coll) {
    case ALLREDUCE:
        if (mode == BLOCKING) return MPI_Allreduce(o->in, o->out, n, MPI_INT, MPI_SUM, comm);
        if (mode == NONBLOCKING) return MPI_Iallreduce(o->in, o->out, n, MPI_INT, MPI_SUM, comm, &o->req);
        return P_INIT(Allreduce)(o->in, o->out, n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &o->req);
    case BCAST:
        if (mode == BLOCKING) return MPI_Bcast(o->in, n, MPI_INT, o->root, comm);
        if (mode == NONBLOCKING) return MPI_Ibcast(o->in, n, MPI_INT, o->root, comm, &o->req);
        return P_INIT(Bcast)(o->in, n, MPI_INT, o->root, comm, MPI_INFO_NULL, &o->req);
    case ALLGATHER:
        if (mode == BLOCKING) return MPI_Allgather(o->in, n, MPI_INT, o->out, n, MPI_INT, comm);
        if (mode == NONBLOCKING) return MPI_Iallgather(o->in, n, MPI_INT, o->out, n, MPI_INT, comm, &o->req);
        return P_INIT(Allgather)(o->in, n, MPI_INT, o->out, n, MPI_INT, comm, MPI_INFO_NULL, &o->req);
    default:
        if (mode == BLOCKING) return MPI_Alltoall(o->in, n, MPI_INT, o->out, n, MPI_INT, comm);
        if (mode == NONBLOCKING) return MPI_Ialltoall(o->in, n, MPI_INT, o->out, n, MPI_INT, comm, &o->req);
        return P_INIT(Alltoall)(o->in, n, MPI_INT, o->out, n, MPI_INT, comm, MPI_INFO_NULL, &o->req);
    }
}

/* 0 when o's result is exact on this rank. */
static int wrong(const op_t *o)
{
    const int n = o->count;
    for (int i = 0; i < n; ++i) {
        if (o->coll == ALLREDUCE) {
            long want = 0;
            for (int r = 0; r < g_size; ++r) want += value(r, o->seq, i);
            if (o->out[i] != (int) want) return 1;
        } else if (o->coll == BCAST) {
            if (o->in[i] != value(o->root, o->seq, i)) return 1;
        } else {
            for (int r = 0; r < g_size; ++r) {
                const int want = o->coll == ALLGATHER ? value(r, o->seq, i) : value(r, o->seq, g_rank * n + i);
                if (o->out[r * n + i] != want) return 1;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    long calls = 20000, every = 3000, inits = 100000, round = 1000, reserved = 0;
    int opt, bad = 0, all_bad = 0, errors = 0, spoiled = 0;
    long per_mode[NMODES] = {0};
    static const int kCounts[] = {1, 7, 100, 1000, 4099, 20000};
    MPI_Comm comm;

    MPI_Init(&argc, &argv);
    g_state = 1;
    const char *corrupt_env = getenv("STRATA_TEST_CORRUPT");
    const long corrupt_at = corrupt_env != NULL ? atol(corrupt_env) : -1;
    while ((opt = getopt(argc, argv, "n:m:b:r:s:")) != -1) {
        switch (opt) {
        case 'n': calls = atol(optarg); break;
        case 'm': every = atol(optarg); break;
        case 'b': inits = atol(optarg); break;
        case 'r': round = atol(optarg); break;
        case 's': g_state = strtoull(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: soak_check [-n CALLS] [-m EVERY] [-b INITS] [-r ROUND] [-s SEED]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (round < 1) round = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    const int most = kCounts[sizeof kCounts / sizeof kCounts[0] - 1];
    op_t ops[2];
    for (int k = 0; k < 2; ++k) {
        ops[k].in = malloc(sizeof(int) * (size_t) most * g_size);
        ops[k].out = malloc(sizeof(int) * (size_t) most * g_size);
    }
    const double t0 = MPI_Wtime();
    for (long c = 0; c < calls; ++c) {
        if (c % round == 0) {
            for (long k = 0; k < inits; ++k) {
                MPI_Request r;
                P_INIT(Barrier)(comm, MPI_INFO_NULL, &r);
                MPI_Request_free(&r);
            }
            reserved += inits;
        }
        if (every > 0 && c > 0 && c % every == 0) {
            /* An erroneous call: rank 1 passes half the root's count. */
            int *buf = ops[0].in, rc;
            rc = MPI_Bcast(buf, g_rank == 1 ? 500 : 1000, MPI_INT, 0, comm);
            errors += rc != MPI_SUCCESS;
            ++spoiled;
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Comm next;
            rc = MPI_Comm_dup(comm, &next);
            if (rc != MPI_SUCCESS) {
                fprintf(stderr, "rank %d: MPI_Comm_dup of the spoiled communicator failed (%d)\n", g_rank, rc);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            MPI_Comm_free(&comm);
            comm = next;
            MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        }
        const int mode = (int) draw(NMODES), two = mode == NONBLOCKING && draw(3) == 0;
        for (int k = 0; k <= two; ++k) {
            op_t *o = &ops[k];
            o->coll = (int) draw(NCOLLS);
            o->count = kCounts[draw(sizeof kCounts / sizeof kCounts[0])];
            o->root = (int) draw((unsigned) g_size);
            o->seq = (int) (c * 2 + k);
            fill(o);
            const int rc = issue(o, mode, comm);
            if (rc != MPI_SUCCESS) {
                fprintf(stderr, "MISMATCH rank %d call %ld: %s %s count %d returned %d\n", g_rank, c,
                        kModes[mode], kNames[o->coll], o->count, rc);
                bad = 1;
            }
            if (mode == PERSISTENT && rc == MPI_SUCCESS) MPI_Start(&o->req);
        }
        for (int k = two; k >= 0; --k) {   /* the later one first, now and then */
            op_t *o = &ops[k];
            if (mode != BLOCKING && o->req != MPI_REQUEST_NULL) {
                const int rc = MPI_Wait(&o->req, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) bad = 1;
                if (o->persistent) MPI_Request_free(&o->req);
            }
            if (c == corrupt_at && k == 0 && g_rank == 0) {
                if (o->coll == BCAST) o->in[0] ^= 1;
                else o->out[0] ^= 1;
            }
            if (wrong(o)) {
                fprintf(stderr, "MISMATCH rank %d call %ld: %s %s count %d root %d: a wrong value\n", g_rank, c,
                        kModes[mode], kNames[o->coll], o->count, o->root);
                bad = 1;
            }
        }
        per_mode[mode] += 1 + two;
        if (bad) break;
    }
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&comm);
    for (int k = 0; k < 2; ++k) { free(ops[k].in); free(ops[k].out); }
    if (g_rank == 0)
        printf("soak_check: %s: %ld blocking, %ld nonblocking, %ld persistent calls, %d erroneous calls (%d "
               "returned an error on rank 0), %ld libnbc tags reserved, %.1f s\n",
               all_bad ? "FAIL" : "PASS", per_mode[BLOCKING], per_mode[NONBLOCKING], per_mode[PERSISTENT], spoiled,
               errors, reserved, MPI_Wtime() - t0);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
