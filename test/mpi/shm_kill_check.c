/*
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * shm_kill_check - communicator setups in a loop, for test/mpi/run-shm-kill: each
 * round duplicates MPI_COMM_WORLD (strata sets up its shared memory as it is made, or
 * at the first call with coll_strata_setup_at_creation=false), makes one allreduce on
 * it (large enough that strata serves it) and frees it. Plain MPI C.
 *
 *   shm_kill_check [-r ROUNDS] [-n COUNT] [-k RANK -d MICROSECONDS] [-t SECONDS] [-N]
 *
 *   -r  rounds (default 50); with -k, rounds go on until the kill (at most -t seconds)
 *   -n  ints per allreduce (default 16384: above strata's small-message size)
 *   -k  this rank kills itself (SIGKILL) -d microseconds after every rank has passed
 *       a barrier: wherever it is then, usually inside a communicator's setup
 *   -t  with -k: give up after this many seconds (default 30), exit 1 "not killed"
 *   -N  while each communicator lives, no mapping of this process may come from a
 *       file that was named "strata-<uid>-..." (/proc/self/maps keeps the name of an
 *       unlinked file): strata's segments must never have had a name ("NAMED ...")
 *
 * Prints "shm_kill_check: PASS ROUNDS rounds" on rank 0 and exits 0 when every result
 * matched; "MISMATCH ..." and exit 1 otherwise.
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long kill_after_us;

/* The first line of /proc/self/maps that names a strata segment file, or "". */
static void named_mapping(char *line, size_t size)
{
    char want[64];
    FILE *f = fopen("/proc/self/maps", "r");
    snprintf(want, sizeof want, "/strata-%u-", (unsigned) getuid());
    line[0] = '\0';
    if (f == NULL) return;
    while (fgets(line, (int) size, f) != NULL)
        if (strstr(line, want) != NULL) {
            fclose(f);
            return;
        }
    line[0] = '\0';
    fclose(f);
}

static void *killer(void *arg)
{
    struct timespec ts = {kill_after_us / 1000000, (kill_after_us % 1000000) * 1000};
    (void) arg;
    while (nanosleep(&ts, &ts) != 0) {
    }
    kill(getpid(), SIGKILL);
    return NULL;
}

int main(int argc, char **argv)
{
    int rank, size, rounds = 50, count = 16384, victim = -1, limit_s = 30, opt, errors = 0, r, no_names = 0;
    long done = 0;
    int *in, *out;
    double t0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "r:n:k:d:t:N")) != -1) {
        switch (opt) {
        case 'r': rounds = atoi(optarg); break;
        case 'n': count = atoi(optarg); break;
        case 'k': victim = atoi(optarg); break;
        case 'd': kill_after_us = atol(optarg); break;
        case 't': limit_s = atoi(optarg); break;
        case 'N': no_names = 1; break;
        default:
            if (rank == 0) fprintf(stderr, "usage: shm_kill_check [-r ROUNDS] [-n COUNT] [-k RANK -d US] [-t S] [-N]\n");
            MPI_Finalize();
            return 2;
        }
    }
    in = malloc(sizeof(int) * (size_t) count);
    out = malloc(sizeof(int) * (size_t) count);
    for (r = 0; r < count; ++r) in[r] = (rank + 1) * (r % 1000 + 1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim) {
        pthread_t t;
        printf("shm_kill_check: rank %d kills itself %ld us from now\n", rank, kill_after_us);
        fflush(stdout);
        pthread_create(&t, NULL, killer, NULL);
    }
    t0 = MPI_Wtime();
    for (;;) {
        MPI_Comm comm;
        if (victim < 0 && done >= rounds) break;
        if (victim >= 0 && MPI_Wtime() - t0 > limit_s) {
            printf("shm_kill_check: rank %d not killed after %ld rounds and %d s\n", rank, done, limit_s);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
        for (r = 0; r < count; ++r) {
            const long want = (long) size * (size + 1) / 2 * (r % 1000 + 1);
            if (out[r] != (int) want) {
                printf("MISMATCH round %ld rank %d: element %d is %d, expected %ld\n", done, rank, r, out[r], want);
                ++errors;
                break;
            }
        }
        if (no_names) {
            char line[512];
            named_mapping(line, sizeof line);
            if (line[0] != '\0') {
                printf("NAMED round %ld rank %d: %s", done, rank, line);
                ++errors;
            }
        }
        MPI_Comm_free(&comm);
        ++done;
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && errors == 0) printf("shm_kill_check: PASS %ld rounds\n", done);
    free(in);
    free(out);
    MPI_Finalize();
    return errors ? 1 : 0;
}
