/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tag_check.c - a long job's nonblocking collectives never meet strata's messages.
 *
 * Open MPI's libnbc takes one tag per nonblocking collective (and per persistent
 * init) on a communicator, counting down from its base (-28 in 4.1, -33 in 5.0).
 * strata's messages once used tags of that same space on the same communicator:
 * after about 8.38 million such operations libnbc's tag reached the one strata kept
 * posted as a receive from any rank (its failure notices, on teams of two nodes or
 * more), which then took libnbc's message, and the job hung. This program drives
 * the counter of a fresh communicator there the short way -- persistent barrier
 * inits, freed at once, reserve a tag each without a message -- and then runs
 * nonblocking barriers with tags around that one while strata serves allreduces on
 * the same communicator. Every result is checked exactly; a hang is the failure the
 * old layout had (run it under a timeout).
 *
 * A team whose messages stay on the communicator itself (one node: nothing of its
 * own stays posted between calls) moves them to a communicator of its own at its first
 * call after the counter walked far; with -i that call is nonblocking (the move runs
 * in steps, the call waits for it in the team's queue).
 *
 * Usage: tag_check [-n COUNT] [-k ITERATIONS] [-t TAG] [-i]
 *   -n  ints per allreduce (default 8192: above coll_strata_small_msg_size)
 *   -k  nonblocking barriers around the tag (default 33)
 *   -t  the tag to reach (default -(2^22) - 1023 * 4096, strata's old notice tag)
 *   -i  the first allreduce after the walk is an MPI_Iallreduce
 * Prints "tag_check: PASS" on success.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A persistent barrier: MPI 4's (Open MPI 5.0 has it, though it reports MPI 3.1), else Open MPI 4.1's extension. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define BARRIER_INIT MPI_Barrier_init
#else
#define BARRIER_INIT MPIX_Barrier_init
#endif

#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#define NBC_TAG_BASE (-33)
#else
#define NBC_TAG_BASE (-28)
#endif

static int check_allreduce(MPI_Comm comm, int *buf, int n, int round)
{
    int rank, size, i;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (i = 0; i < n; ++i) {
        buf[i] = (rank + 1) * (i % 97 + round);
    }
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, comm);
    for (i = 0; i < n; ++i) {
        const int want = size * (size + 1) / 2 * (i % 97 + round);
        if (buf[i] != want) {
            fprintf(stderr, "MISMATCH rank %d round %d element %d: got %d, want %d\n", rank, round, i, buf[i], want);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int n = 8192, k = 33, opt, rank, bad = 0, all_bad = 0, first_nonblocking = 0;
    long target = -(1L << 22) - 1023L * 4096L, reserved = 0, i;
    MPI_Comm comm;
    int *buf;

    MPI_Init(&argc, &argv);
    while ((opt = getopt(argc, argv, "n:k:t:i")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'k': k = atoi(optarg); break;
        case 't': target = atol(optarg); break;
        case 'i': first_nonblocking = 1; break;
        default:
            fprintf(stderr, "usage: tag_check [-n COUNT] [-k ITERATIONS] [-t TAG] [-i]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    buf = malloc(sizeof(int) * (size_t) n);
    /* A fresh communicator: its libnbc counter is at NBC_TAG_BASE. */
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    bad |= check_allreduce(comm, buf, n, 0);   /* strata sets the team up here */
    bad |= check_allreduce(comm, buf, n, 1);

    /* The next tag libnbc hands out is NBC_TAG_BASE - reserved. Stop k/2 short of the
     * target, so that the barriers below take the tags around it. */
    const long stop = NBC_TAG_BASE - target - k / 2;
    for (reserved = 0; reserved < stop; ++reserved) {
        MPI_Request r;
        BARRIER_INIT(comm, MPI_INFO_NULL, &r);
        MPI_Request_free(&r);
    }
    if (0 == rank) {
        printf("tag_check: %ld tags reserved; the next nonblocking barriers take tags %ld .. %ld\n", reserved,
               NBC_TAG_BASE - reserved, NBC_TAG_BASE - reserved - k + 1);
        fflush(stdout);
    }
    if (first_nonblocking) {
        int size, j;
        MPI_Request r;
        MPI_Comm_size(comm, &size);
        for (j = 0; j < n; ++j) {
            buf[j] = (rank + 1) * (j % 89);
        }
        MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, comm, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (j = 0; j < n; ++j) {
            if (buf[j] != size * (size + 1) / 2 * (j % 89)) {
                fprintf(stderr, "MISMATCH rank %d iallreduce element %d: got %d\n", rank, j, buf[j]);
                bad = 1;
                break;
            }
        }
    }
    for (i = 0; i < k; ++i) {
        MPI_Request r;
        MPI_Ibarrier(comm, &r);
        bad |= check_allreduce(comm, buf, n, (int) (2 + i));
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Barrier(comm);
    }
    bad |= check_allreduce(comm, buf, n, 100);
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&comm);
    free(buf);
    if (0 == rank) {
        printf("tag_check: %s\n", all_bad ? "FAIL" : "PASS");
    }
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
