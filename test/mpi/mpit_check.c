/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpit_check.c - strata's MPI_T performance variables, read as a tool reads them.
 *
 * Lists the variables named coll_strata_* (each must be a read-only, continuous,
 * unbound counter or aggregate of unsigned long long), allocates a handle for each in
 * one session, then runs a known sequence on MPI_COMM_WORLD: N blocking allreduces of
 * 32 KiB (above coll_strata_small_msg_size, so the first one sets strata up), K
 * nonblocking allreduces of 32 KiB, M bcasts of 4000 bytes and R reduces. It then
 * reads every handle (what happened since it was allocated) and checks it counted
 * exactly the job:
 *   allreduce_served = N + K, allreduce_<ALG>_served = N + K (-a ALG, the algorithm
 *   the job forces: coll_strata_allreduce_algorithm), every other allreduce algorithm 0;
 *   bcast_served = M (its algorithms sum to M); reduce_served = 0 and handed_back_setting = R (run with
 *   coll_strata_reduce_algorithm=base); every other handed_back_* 0;
 *   bytes_slots = (N + K) * 32768 + M * 4000 where a node has more than one rank (-l,
 *   the ranks per node), else 0; bytes_in_place = bytes_staged = 0 (host buffers);
 *   bytes_sent > 0 exactly when the job spans more than one node (-l < size);
 *   ipc_cache_* = deadline_expiries = 0.
 * -w expects one allreduce more than ran: a control that must fail. -V LEVEL writes
 * coll_strata_verbose through MPI_T (a control variable settable while the job runs)
 * before the sequence: its per-call lines then appear from that point on.
 * Prints "mpit_check: PASS" (rank 0) or a line per wrong counter and exits 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PVARS 256
#define AR_COUNT 4096   /* doubles: 32 KiB */
#define BC_BYTES 4000

typedef struct {
    char name[128];
    int index;
    MPI_T_pvar_handle handle;
    unsigned long long value;
} pvar_t;

static pvar_t pvars[MAX_PVARS];
static int npvars, rank, failures;

static void bad(const char *fmt, const char *name, unsigned long long got, unsigned long long want)
{
    fprintf(stdout, "rank %d: ", rank);
    fprintf(stdout, fmt, name, got, want);
    fputc('\n', stdout);
    ++failures;
}

/* The value read for coll_strata_<suffix>; -1 (and a failure) when there is none. */
static long long value_of(const char *suffix)
{
    char full[160];
    int i;
    snprintf(full, sizeof full, "coll_strata_%s", suffix);
    for (i = 0; i < npvars; ++i) {
        if (0 == strcmp(pvars[i].name, full)) {
            return (long long) pvars[i].value;
        }
    }
    bad("no performance variable %s (%llu %llu)", full, 0, 0);
    return -1;
}

static void expect(const char *suffix, unsigned long long want)
{
    long long got = value_of(suffix);
    if (got >= 0 && (unsigned long long) got != want) {
        bad("coll_strata_%s = %llu, expected %llu", suffix, (unsigned long long) got, want);
    }
}

/* Every variable of the component: listed, checked for what a counter must be. */
/* coll_strata_verbose := level, as a tool sets it. */
static void set_verbose(int level)
{
    int num, i;
    MPI_T_cvar_get_num(&num);
    for (i = 0; i < num; ++i) {
        char name[128];
        int name_len = sizeof name, verbosity, bind, scope, count, rc;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        MPI_T_cvar_handle h;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, NULL, NULL, &bind,
                                               &scope) ||
            0 != strcmp(name, "coll_strata_verbose")) {
            continue;
        }
        MPI_T_cvar_handle_alloc(i, NULL, &h, &count);
        rc = MPI_T_cvar_write(h, &level);
        MPI_T_cvar_handle_free(&h);
        if (MPI_SUCCESS != rc) bad("%s: MPI_T_cvar_write failed (%llu %llu)", name, (unsigned long long) rc, 0);
        return;
    }
    bad("no control variable %s (%llu %llu)", "coll_strata_verbose", 0, 0);
}

static int list_pvars(void)
{
    int num, i;
    MPI_T_pvar_get_num(&num);
    for (i = 0; i < num && npvars < MAX_PVARS; ++i) {
        char name[128], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &type, &enumtype, desc,
                                               &desc_len, &bind, &readonly, &continuous, &atomic) ||
            0 != strncmp(name, "coll_strata_", 12)) {
            continue;
        }
        if ((MPI_T_PVAR_CLASS_COUNTER != var_class && MPI_T_PVAR_CLASS_AGGREGATE != var_class) ||
            MPI_UNSIGNED_LONG_LONG != type || MPI_T_BIND_NO_OBJECT != bind || !readonly || !continuous ||
            desc_len <= 1) {
            bad("%s: not a read-only continuous unbound counter with a description (%llu %llu)", name,
                (unsigned long long) var_class, (unsigned long long) bind);
            continue;
        }
        snprintf(pvars[npvars].name, sizeof pvars[npvars].name, "%s", name);
        pvars[npvars++].index = i;
    }
    return npvars;
}

int main(int argc, char **argv)
{
    int n = 10, k = 3, m = 5, r = 1, per_node = 0, wrong = 0, verbose = -1, size, provided, opt, i, count, one = 1, sum = 0;
    const char *alg = "hier_rd";
    MPI_T_pvar_session session;
    double *ar;
    char *bc;
    MPI_Request reqs[64];
    unsigned long long bcast_algs = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "n:k:m:r:a:l:wV:")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'k': k = atoi(optarg); break;
        case 'm': m = atoi(optarg); break;
        case 'r': r = atoi(optarg); break;
        case 'a': alg = optarg; break;
        case 'l': per_node = atoi(optarg); break;
        case 'w': wrong = 1; break;
        case 'V': verbose = atoi(optarg); break;
        default:
            if (0 == rank) fprintf(stderr, "usage: mpit_check [-n N] [-k K] [-m M] [-r R] [-a ALG] [-l RANKS_PER_NODE] [-w] [-V LEVEL]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (per_node <= 0 || per_node > size) per_node = size;
    if (k > 64) k = 64;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    if (0 == list_pvars()) {
        printf("rank %d: no performance variable named coll_strata_*: is the component loaded?\n", rank);
        ++failures;
    }
    if (verbose >= 0) set_verbose(verbose);
    MPI_T_pvar_session_create(&session);
    for (i = 0; i < npvars; ++i) {
        if (MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, pvars[i].index, NULL, &pvars[i].handle, &count) ||
            1 != count) {
            bad("%s: no handle, or not one value (%llu %llu)", pvars[i].name, (unsigned long long) count, 1);
        }
    }

    /* The sequence: no collective but these between the handles and the reads. */
    ar = malloc(AR_COUNT * sizeof *ar);
    bc = malloc(BC_BYTES);
    for (i = 0; i < AR_COUNT; ++i) ar[i] = rank + i;
    memset(bc, rank, BC_BYTES);
    for (i = 0; i < n; ++i) MPI_Allreduce(MPI_IN_PLACE, ar, AR_COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < k; ++i) {
        MPI_Iallreduce(MPI_IN_PLACE, ar, AR_COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[i]);
        MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    }
    for (i = 0; i < m; ++i) MPI_Bcast(bc, BC_BYTES, MPI_BYTE, i % size, MPI_COMM_WORLD);
    for (i = 0; i < r; ++i) MPI_Reduce(&one, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);

    for (i = 0; i < npvars; ++i) MPI_T_pvar_read(session, pvars[i].handle, &pvars[i].value);

    expect("allreduce_served", (unsigned long long) (n + k + wrong));
    expect("bcast_served", (unsigned long long) m);
    expect("reduce_served", 0);
    for (i = 0; i < npvars; ++i) {
        const char *v = pvars[i].name + 12;
        char want_name[160];
        snprintf(want_name, sizeof want_name, "coll_strata_allreduce_%s_served", alg);
        if (0 == strncmp(v, "allreduce_", 10) && 0 != strcmp(v, "allreduce_served")) {
            unsigned long long want = 0 == strcmp(pvars[i].name, want_name) ? (unsigned long long) (n + k + wrong) : 0;
            if (pvars[i].value != want) bad("%s = %llu, expected %llu", pvars[i].name, pvars[i].value, want);
        }
        if (0 == strncmp(v, "bcast_", 6) && 0 != strcmp(v, "bcast_served")) bcast_algs += pvars[i].value;
        if (0 == strncmp(v, "handed_back_", 12)) {
            unsigned long long want = 0 == strcmp(pvars[i].name, "coll_strata_handed_back_setting") ? (unsigned long long) r : 0;
            if (pvars[i].value != want) bad("%s = %llu, expected %llu", pvars[i].name, pvars[i].value, want);
        }
    }
    if (bcast_algs != (unsigned long long) m) bad("%s: %llu in all, expected %llu", "coll_strata_bcast_*_served", bcast_algs, (unsigned long long) m);
    expect("bytes_slots", per_node > 1 ? (unsigned long long) (n + k) * AR_COUNT * sizeof(double) +
                                         (unsigned long long) m * BC_BYTES : 0);
    expect("bytes_in_place", 0);
    expect("bytes_staged", 0);
    {
        long long sent = value_of("bytes_sent");
        if (sent >= 0 && (sent > 0) != (per_node < size)) {
            bad("%s = %llu, expected %llu (1: more than 0, the job spans nodes)", "coll_strata_bytes_sent",
                (unsigned long long) sent, per_node < size);
        }
    }
    expect("ipc_cache_hits", 0);
    expect("ipc_cache_misses", 0);
    expect("ipc_cache_evictions", 0);
    expect("deadline_expiries", 0);

    for (i = 0; i < npvars; ++i) MPI_T_pvar_handle_free(session, &pvars[i].handle);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    {
        int all = 0;
        MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("mpit_check: %d performance variables; %d allreduces, %d nonblocking, %d bcasts, %d reduces; %s\n",
                   npvars, n, k, m, r, all ? "FAIL" : "PASS");
        }
        failures = all;
    }
    free(ar);
    free(bc);
    MPI_Finalize();
    return failures ? 1 : 0;
}
