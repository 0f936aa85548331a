/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_check_modes.h - how coll_check issues and completes the call of each test
 * (-M). Part of coll_check.c, included once after its harness: it knows each
 * call's arguments, never its values.
 *
 * A test is one call with buffers of its own. A collective's run_<coll>() sets up
 * the buffers and arguments and hands the test to submit(); the mode decides when
 * the call is issued and completed, and finish() copies device results back,
 * checks, and counts the test.
 *
 *   blocking     MPI_<Coll>, one test at a time: the calls, values and output that
 *                coll_check had before the modes existed
 *   nonblocking  MPI_I<coll>: K calls (-K, default 4) posted in a row, each set up
 *                and filled while the earlier ones are in flight, then completed in
 *                an order that changes from batch to batch and from rank to rank
 *                (Waitall, Wait in reverse, Testany, Testsome, Waitany, Test in
 *                turn); each test is checked as soon as its request completes,
 *                while others of its batch may still be running
 *   persistent   MPI_<Coll>_init (MPIX_ on Open MPI 4.x) for K tests, then R starts
 *                (-R, default 3) of all of them, each with new inputs (refilled,
 *                results poisoned again): MPI_Startall on even starts, MPI_Start in
 *                reverse order on odd ones; completed as above; MPI_Request_free
 *   mixed        groups of three: the first posted nonblocking on the communicator,
 *                the second run blocking on a duplicate of it, the third blocking on
 *                the communicator itself (legal: same order on every rank), then the
 *                first waited for. The duplicate is made (once per collective) while
 *                the first call of the first group is in flight: Open MPI agrees on
 *                a new communicator's id with nonblocking allreduces on the parent
 *
 * Every rank posts and starts in the same order (MPI requires it); only the
 * completion order differs between ranks, which MPI allows and which a component
 * that progressed only the request being waited for would not survive.
 */
#ifndef COLL_CHECK_MODES_H
#define COLL_CHECK_MODES_H

/* Persistent collectives: MPI 4 names them MPI_<Coll>_init; Open MPI 5 has them
 * while it still says MPI 3.1; Open MPI 4.x has them as MPIX_<Coll>_init in the
 * pcollreq extension of <mpi-ext.h>. */
#if defined(OPEN_MPI) && OPEN_MPI && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define PCOLL(Up) MPI_##Up##_init
#define PCOLL_API "MPI_<Coll>_init"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PCOLL(Up) MPIX_##Up##_init
#define PCOLL_API "MPIX_<Coll>_init (mpi-ext.h pcollreq)"
#endif

enum { MODE_BLOCKING, MODE_NONBLOCKING, MODE_PERSISTENT, MODE_MIXED, MODE_COUNT };
static const char *mode_names[] = { "blocking", "nonblocking", "persistent", "mixed" };
static int mode = MODE_BLOCKING;
static int batch_k = 4, n_starts = 3;
static MPI_Comm comm_side = MPI_COMM_NULL;   /* mixed: the duplicate of comm (freed by main) */

enum coll_id { C_ALLREDUCE, C_ALLGATHER, C_ALLGATHERV, C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK,
               C_BCAST, C_ALLTOALL, C_ALLTOALLV, C_REDUCE, C_GATHER, C_SCATTER };
enum how { H_BLOCKING, H_NONBLOCKING, H_INIT };

typedef struct test {
    tdesc d;
    enum coll_id coll;
    MPI_Datatype dt;
    MPI_Op op;
    MPI_Comm comm;
    int root;
    const void *sbuf;            /* what the call sees: MPI_IN_PLACE, host or device memory */
    void *rbuf;
    int count, scount;           /* the call's counts, where it takes a single one */
    int *sc, *sd, *rc, *rd;      /* the call's count and displacement arrays (owned) */
    char *sb, *rb, *ex;          /* host buffers: inputs, results, expected values (owned) */
    int64_t n, first, mine, total, st, rt;   /* sizes that fill() and check() use */
    uint64_t seed0, seed;        /* the seed of the first start, of the current one */
    void (*fill)(struct test *); /* inputs from in_seed(), results poisoned, expected from seed */
    int (*check)(struct test *); /* 0 when the result matches */
    struct { char *host, *dev; size_t bytes; int back; } m[2];   /* device mirrors (-d) */
    int nm;
} test;

static test *test_new(const tdesc *d, enum coll_id c, uint64_t seed)
{
    test *x = calloc(1, sizeof *x);
    if (!x) { fprintf(stderr, "coll_check: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    x->d = *d;
    x->d.start = -1;
    x->coll = c;
    x->dt = d->t->dt;
    x->op = d->op < O_NOPS ? mpi_ops[d->op] : MPI_OP_NULL;
    x->root = d->root;
    x->comm = comm;
    x->seed0 = x->seed = seed;
    return x;
}

/* The pointer the collective sees for a host buffer: the buffer itself, or on ranks
 * whose buffers are on the GPU a device buffer of the same size that push() fills
 * from it and (back: the call writes it) pull() copies back. */
static void *coll_buf(test *x, void *host, size_t bytes, int back)
{
    if (!rank_on_device(my_world_rank) || host == NULL) return host;
    char *dev = buf_kind == KIND_MANAGED_ODD && my_world_rank % 2 ? devbuf_alloc_managed(bytes)
                                                                   : devbuf_alloc(bytes);
    if (!dev || x->nm == 2) MPI_Abort(MPI_COMM_WORLD, 2);
    x->m[x->nm].host = host;
    x->m[x->nm].dev = dev;
    x->m[x->nm].bytes = bytes;
    x->m[x->nm].back = back;
    x->nm++;
    return dev;
}

/* Before each post or start: the device copies get the host buffers' contents
 * (inputs, and the poisoned results). With -Q by copies queued on the legacy stream
 * that the call itself must wait for; on odd ranks behind 50 ms of other queued work,
 * so that their copies land after their peers have entered the call (a rank that
 * does not wait for its own queued work then has peers' writes into its buffers
 * overwritten, or gives peers its old inputs). */
static void push(test *x)
{
    if (queued_push && my_world_rank % 2 && x->nm > 0 && devbuf_queue_pause(50)) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int k = 0; k < x->nm; k++)
        if ((queued_push ? devbuf_to_dev_queued : devbuf_to_dev)(x->m[k].dev, x->m[k].host, x->m[k].bytes))
            MPI_Abort(MPI_COMM_WORLD, 2);
}

static void pull(test *x)
{
    for (int k = 0; k < x->nm; k++)
        if (x->m[k].back && devbuf_to_host(x->m[k].host, x->m[k].dev, x->m[k].bytes))
            MPI_Abort(MPI_COMM_WORLD, 2);
}

static void test_free(test *x)
{
    for (int k = 0; k < x->nm; k++) devbuf_free(x->m[k].dev);
    free(x->sb); free(x->rb); free(x->ex);
    free(x->sc); free(x->sd); free(x->rc); free(x->rd);
    free(x);
}

/* Start s of a persistent request gets values of its own; start 0 (and every other
 * mode) the test's seed, so that blocking runs keep their values. */
static uint64_t start_seed(const test *x, int s)
{
    return s <= 0 ? x->seed0 : mix(x->seed0 ^ ((uint64_t)s * 0x9e3779b97f4a7c15ull));
}

/* The seed this rank's inputs come from. STRATA_TEST_CORRUPT=stale: on the corrupt
 * rank, starts after the first keep the previous start's inputs while the expected
 * values move on, as if the MPI read the inputs of a persistent call only once. */
static uint64_t in_seed(const test *x)
{
    if (corrupt_kind == CORRUPT_STALE && mode == MODE_PERSISTENT && g_rank == corrupt_rank &&
        x->d.start > 0)
        return start_seed(x, x->d.start - 1);
    return x->seed;
}

/* The call itself, as MPI_<Coll>, MPI_I<coll> or the persistent init. */
#define ISSUE(Up, low, ...) \
    (how == H_BLOCKING ? MPI_##Up(__VA_ARGS__) \
     : how == H_NONBLOCKING ? MPI_I##low(__VA_ARGS__, r) : PINIT(Up, __VA_ARGS__))
#ifdef PCOLL
#define PINIT(Up, ...) PCOLL(Up)(__VA_ARGS__, MPI_INFO_NULL, r)
#else
#define PINIT(Up, ...) MPI_ERR_UNSUPPORTED_OPERATION
#endif
static void issue(test *x, enum how how, MPI_Request *r)
{
    int rc = MPI_ERR_OTHER;
    void *sb = (void *)x->sbuf;
    switch (x->coll) {
    case C_ALLREDUCE:
        rc = ISSUE(Allreduce, allreduce, sb, x->rbuf, x->count, x->dt, x->op, x->comm); break;
    case C_REDUCE:
        rc = ISSUE(Reduce, reduce, sb, x->rbuf, x->count, x->dt, x->op, x->root, x->comm); break;
    case C_REDUCE_SCATTER:
        rc = ISSUE(Reduce_scatter, reduce_scatter, sb, x->rbuf, x->rc, x->dt, x->op, x->comm); break;
    case C_REDUCE_SCATTER_BLOCK:
        rc = ISSUE(Reduce_scatter_block, reduce_scatter_block, sb, x->rbuf, x->count, x->dt, x->op,
                   x->comm);
        break;
    case C_BCAST:
        rc = ISSUE(Bcast, bcast, x->rbuf, x->count, x->dt, x->root, x->comm); break;
    case C_ALLGATHER:
        rc = ISSUE(Allgather, allgather, sb, x->scount, x->dt, x->rbuf, x->count, x->dt, x->comm); break;
    case C_ALLGATHERV:
        rc = ISSUE(Allgatherv, allgatherv, sb, x->scount, x->dt, x->rbuf, x->rc, x->rd, x->dt, x->comm);
        break;
    case C_ALLTOALL:
        rc = ISSUE(Alltoall, alltoall, sb, x->count, x->dt, x->rbuf, x->count, x->dt, x->comm); break;
    case C_ALLTOALLV:
        rc = ISSUE(Alltoallv, alltoallv, sb, x->sc, x->sd, x->dt, x->rbuf, x->rc, x->rd, x->dt, x->comm);
        break;
    case C_GATHER:
        rc = ISSUE(Gather, gather, sb, x->scount, x->dt, x->rbuf, x->count, x->dt, x->root, x->comm); break;
    case C_SCATTER:
        rc = ISSUE(Scatter, scatter, sb, x->scount, x->dt, x->rbuf, x->count, x->dt, x->root, x->comm); break;
    }
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len;
        MPI_Error_string(rc, msg, &len);
        fprintf(stdout, "coll_check: rank %d: %s %s (%s) failed: %s\n", g_rank, x->d.coll,
                how == H_BLOCKING ? "call" : how == H_NONBLOCKING ? "post" : "init", mode_names[mode], msg);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void req_ok(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    fprintf(stdout, "coll_check: rank %d: %s failed (error %d)\n", g_rank, what, rc);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The call of x is complete: results back from the GPU, checked, counted. The
 * injected flip (STRATA_TEST_CORRUPT=1) waits for the last start of a persistent
 * request, so that the control shows later starts are checked too. */
static void finish(test *x)
{
    pull(x);
    corrupt_armed = mode != MODE_PERSISTENT || x->d.start == n_starts - 1;
    done(&x->d, x->check(x));
}

/* Complete the n requests of one batch (nonblocking or persistent, all active) in
 * this batch's order, finishing each test as soon as its request completes. */
#define MAXK 16
#define NORDERS 6
static const char *order_names[NORDERS] = { "waitall", "wait-reverse", "testany", "testsome",
                                            "waitany", "test-in-turn" };
static unsigned long batch_no;
static void complete(int n, MPI_Request *r, test **t)
{
    int order = (int)((batch_no++ + (unsigned long)g_rank) % NORDERS), left = n, k, flag, idx[MAXK];
    char fin[MAXK] = { 0 };
    if (verbose > 2) printf("  rank %d: %d requests, %s\n", g_rank, n, order_names[order]);
    switch (order) {
    case 0:
        req_ok(MPI_Waitall(n, r, MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (k = 0; k < n; k++) finish(t[k]);
        return;
    case 1:
        for (k = n - 1; k >= 0; k--) { req_ok(MPI_Wait(&r[k], MPI_STATUS_IGNORE), "MPI_Wait"); finish(t[k]); }
        return;
    default:
        break;
    }
    while (left > 0) {
        int got = 0;
        if (order == 2 || order == 4) {
            if (order == 2) req_ok(MPI_Testany(n, r, &k, &flag, MPI_STATUS_IGNORE), "MPI_Testany");
            else { req_ok(MPI_Waitany(n, r, &k, MPI_STATUS_IGNORE), "MPI_Waitany"); flag = 1; }
            if (flag) {
                if (k == MPI_UNDEFINED) break;       /* reported all done early: caught below */
                idx[got++] = k;
            }
        } else if (order == 3) {
            int outc;
            req_ok(MPI_Testsome(n, r, &outc, idx, MPI_STATUSES_IGNORE), "MPI_Testsome");
            if (outc == MPI_UNDEFINED) break;
            got = outc;
        } else {
            for (k = 0; k < n; k++) {   /* an inactive persistent request tests complete: skip it */
                if (fin[k]) continue;
                req_ok(MPI_Test(&r[k], &flag, MPI_STATUS_IGNORE), "MPI_Test");
                if (flag) { idx[got++] = k; break; }
            }
        }
        for (int j = 0; j < got; j++) {
            if (fin[idx[j]]) {
                fprintf(stdout, "coll_check: rank %d: %s: request %d completed twice\n", g_rank,
                        order_names[order], idx[j]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            fin[idx[j]] = 1;
            finish(t[idx[j]]);
            left--;
        }
    }
    if (left > 0) {
        fprintf(stdout, "coll_check: rank %d: %s: no active request left, %d not completed\n", g_rank,
                order_names[order], left);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static test *batch[MAXK];
static MPI_Request breq[MAXK];
static int nbatch;

static void persistent_batch(void)
{
    for (int k = 0; k < nbatch; k++) issue(batch[k], H_INIT, &breq[k]);
    for (int s = 0; s < n_starts; s++) {
        for (int k = 0; k < nbatch; k++) {
            test *x = batch[k];
            x->d.start = s;
            x->seed = start_seed(x, s);
            x->fill(x);
            push(x);
        }
        if (s % 2 == 0) req_ok(MPI_Startall(nbatch, breq), "MPI_Startall");
        else
            for (int k = nbatch - 1; k >= 0; k--) req_ok(MPI_Start(&breq[k]), "MPI_Start");
        complete(nbatch, breq, batch);
    }
    for (int k = 0; k < nbatch; k++) {
        req_ok(MPI_Request_free(&breq[k]), "MPI_Request_free");
        if (breq[k] != MPI_REQUEST_NULL) req_ok(MPI_ERR_REQUEST, "MPI_Request_free (request not nulled)");
    }
}

/* Complete whatever the mode holds (end of a collective, or a full batch). */
static void flush(void)
{
    if (nbatch == 0) return;
    if (mode == MODE_NONBLOCKING) complete(nbatch, breq, batch);
    else if (mode == MODE_PERSISTENT) persistent_batch();
    else if (mode == MODE_MIXED) {
        req_ok(MPI_Wait(&breq[0], MPI_STATUS_IGNORE), "MPI_Wait");
        finish(batch[0]);
    }
    for (int k = 0; k < (mode == MODE_MIXED ? 1 : nbatch); k++) test_free(batch[k]);   /* mixed: the rest ran blocking */
    nbatch = 0;
}

static void submit(test *x)
{
    x->d.how = mode == MODE_BLOCKING ? NULL : mode_names[mode];
    if (mode == MODE_BLOCKING || (mode == MODE_MIXED && nbatch > 0)) {
        if (mode == MODE_MIXED) {
            x->comm = nbatch == 1 ? comm_side : comm;
            x->d.how = nbatch == 1 ? "mixed-blocking-on-dup" : "mixed-blocking-same-comm";
            nbatch++;
        }
        x->fill(x);
        push(x);
        issue(x, H_BLOCKING, NULL);
        finish(x);
        test_free(x);
        if (mode == MODE_MIXED && nbatch == 3) flush();
        return;
    }
    batch[nbatch] = x;
    if (mode != MODE_PERSISTENT) {   /* nonblocking, or the first of a mixed group */
        if (mode == MODE_MIXED) x->d.how = "mixed-nonblocking";
        x->fill(x);
        push(x);
        issue(x, H_NONBLOCKING, &breq[nbatch]);
        if (mode == MODE_MIXED && comm_side == MPI_COMM_NULL) MPI_Comm_dup(comm, &comm_side);
    }
    nbatch++;
    if (nbatch == batch_k && mode != MODE_MIXED) flush();
}

#endif
