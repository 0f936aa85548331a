/*
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * comm_check - creates communicators every way libraries do (dup, idup, split,
 * split_type, create, create_group, an intercommunicator and its merge, dup with
 * info) at a chosen thread level, and checks a blocking and a nonblocking
 * collective on each one. Plain MPI C: it must pass with and without strata.
 *
 *   comm_check [-T single|funneled|serialized|multiple] [-r ROUNDS] [-n COUNT]
 *
 * Prints "comm_check: PASS ..." on rank 0 and exits 0 when every result matched,
 * "MISMATCH ..." lines and exit 1 otherwise (STRATA_TEST_CORRUPT=1 injects one wrong
 * element, to show that it does). Hangs are caught by the caller's timeout: this
 * program has no way of its own to leave a blocked MPI call.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int errors;

/* sum over the ranks r of comm of (r + 1) * (i + 1), i the element */
static void check_sum(MPI_Comm comm, const char *what, int count, int nonblocking)
{
    int rank, size, i, *in, *out;
    long expect_unit;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    in = malloc(sizeof(int) * (size_t) count);
    out = malloc(sizeof(int) * (size_t) count);
    for (i = 0; i < count; ++i) {
        in[i] = (rank + 1) * (i % 1000 + 1);
        out[i] = -1;
    }
    if (nonblocking) {
        MPI_Request req;
        MPI_Iallreduce(in, out, count, MPI_INT, MPI_SUM, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
    }
    /* STRATA_TEST_CORRUPT=1: one wrong element on dup's communicators, which the check must catch */
    if (NULL != getenv("STRATA_TEST_CORRUPT") && 0 == strcmp(getenv("STRATA_TEST_CORRUPT"), "1") &&
        0 == strcmp(what, "dup") && count > 1)
        out[count / 2] += 1;
    expect_unit = (long) size * (size + 1) / 2;
    for (i = 0; i < count; ++i) {
        if (out[i] != (int) (expect_unit * (i % 1000 + 1))) {
            printf("MISMATCH %s %s: element %d is %d, expected %ld\n", what,
                   nonblocking ? "iallreduce" : "allreduce", i, out[i], expect_unit * (i % 1000 + 1));
            ++errors;
            break;
        }
    }
    free(in);
    free(out);
}

static void check_comm(MPI_Comm comm, const char *what, int count)
{
    check_sum(comm, what, 1, 0);
    check_sum(comm, what, count, 0);
    check_sum(comm, what, count, 1);
}

static int level_of(const char *s)
{
    if (0 == strcmp(s, "single")) return MPI_THREAD_SINGLE;
    if (0 == strcmp(s, "funneled")) return MPI_THREAD_FUNNELED;
    if (0 == strcmp(s, "serialized")) return MPI_THREAD_SERIALIZED;
    if (0 == strcmp(s, "multiple")) return MPI_THREAD_MULTIPLE;
    return -1;
}

int main(int argc, char **argv)
{
    int level = MPI_THREAD_SINGLE, provided, rounds = 2, count = 4096, opt, rank, size, round, total;
    const char *level_name = "single";

    while ((opt = getopt(argc, argv, "T:r:n:h")) != -1) {
        switch (opt) {
        case 'T':
            level_name = optarg;
            level = level_of(optarg);
            break;
        case 'r': rounds = atoi(optarg); break;
        case 'n': count = atoi(optarg); break;
        default: level = -1; break;
        }
    }
    if (level < 0 || rounds < 1 || count < 1) {
        fprintf(stderr, "usage: comm_check [-T single|funneled|serialized|multiple] [-r ROUNDS] [-n COUNT]\n");
        return 2;
    }
    MPI_Init_thread(&argc, &argv, level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    check_comm(MPI_COMM_WORLD, "world", count);
    for (round = 0; round < rounds; ++round) {
        MPI_Comm dup, idup, split, type, created, grouped, inter, merged, infodup;
        MPI_Group world_group, half_group;
        MPI_Request req;
        MPI_Info info;
        int ranks[2] = {0, size - 1}, low = rank < (size + 1) / 2;

        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        check_comm(dup, "dup", count);

        MPI_Comm_idup(dup, &idup, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check_comm(idup, "idup", count);

        MPI_Comm_split(idup, rank % 2, size - rank, &split);
        check_comm(split, "split", count);

        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &type);
        check_comm(type, "split_type", count);

        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        MPI_Group_incl(world_group, size > 1 ? 2 : 1, ranks, &half_group);
        MPI_Comm_create(dup, half_group, &created);
        if (MPI_COMM_NULL != created) check_comm(created, "create", count);
        if (rank == 0 || rank == size - 1) {
            MPI_Comm_create_group(MPI_COMM_WORLD, half_group, 7, &grouped);
            check_comm(grouped, "create_group", count);
            MPI_Comm_free(&grouped);
        }

        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
        MPI_Comm_dup_with_info(dup, info, &infodup);
        MPI_Info_free(&info);
        check_comm(infodup, "dup_with_info", count);

        if (size > 1) {
            MPI_Comm half;
            MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half);
            /* the other half's leader is world rank 0 or (size + 1) / 2 */
            MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? (size + 1) / 2 : 0, 11, &inter);
            MPI_Intercomm_merge(inter, low ? 0 : 1, &merged);
            check_comm(merged, "intercomm_merge", count);
            MPI_Comm_free(&merged);
            MPI_Comm_free(&inter);
            MPI_Comm_free(&half);
        }

        if (MPI_COMM_NULL != created) MPI_Comm_free(&created);
        MPI_Group_free(&half_group);
        MPI_Group_free(&world_group);
        MPI_Comm_free(&infodup);
        MPI_Comm_free(&type);
        MPI_Comm_free(&split);
        MPI_Comm_free(&idup);
        MPI_Comm_free(&dup);
    }
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("comm_check: %s (np %d, thread level %s provided %d, %d rounds, %d elements)\n",
               total ? "FAIL" : "PASS", size, level_name, provided, rounds, count);
    MPI_Finalize();
    return total ? 1 : 0;
}
