/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strata_overlap - how much of a nonblocking collective hides behind computation.
 *
 * For every size and side (strata, base) it measures, per rank, the mean of
 *   pure     MPI_I<coll>(...); MPI_Wait
 *   compute  the compute loop alone, sized to take `pure` on this side
 *   overlap  MPI_I<coll>(...); compute loop; MPI_Wait
 * each as the max over ranks (compute and overlap alternate, call by call, so that
 * a change in the machine's load hits both), and prints
 *   overlap% = max(0, 1 - (overlap - compute) / pure) * 100
 * i.e. the share of the collective's time that the computation hid. 100: the call
 * cost nothing beyond the computation; 0: none of it ran while the rank computed.
 *
 * The compute loop is a chain of dependent floating-point operations (no memory
 * traffic, no MPI calls), calibrated on each rank at start. A collective progressed
 * only from inside MPI calls (Open MPI's libnbc, strata's host progress) advances
 * during it only as far as its start went; --test K calls MPI_Test every K
 * microseconds of computation, as applications do to drive such progress (the time
 * of those calls counts against the overlap). --thread-multiple initialises MPI with
 * MPI_THREAD_MULTIPLE, which strata's progress thread (coll_strata_progress_thread=1)
 * needs: with it, strata's calls advance during computation without MPI calls.
 * --idle sleeps instead of computing, as a host thread does while its GPU works: on a
 * machine whose cores all compute (2 ranks on 2 cores), only then does a progress
 * thread get a core.
 *
 * The two sides run in the same job, as in strata_bench:
 *   strata: a duplicate of MPI_COMM_WORLD (the component, when selected, serves it)
 *   base:   MPI_Comm_dup_with_info(MPI_COMM_WORLD, {"strata": "off"}), which the
 *           component hands to the module it replaced (libnbc, for nonblocking calls)
 * ratio = base pure / strata pure (> 1: strata faster). Before measuring, each side
 * gets one nonblocking and one blocking 4-byte allreduce (untimed), which keeps any
 * setup out of the timing.
 *
 * --device puts the buffers in GPU memory (test/common/devbuf; exit 77 without a GPU).
 * strata gets them directly; the base side is host staging, as in strata_bench:
 * device -> pinned host before the start, the collective on host memory, host ->
 * device after the wait, all of it inside the timed region (the compute runs between
 * the start and the wait, so the copies cannot hide). Where strata does not serve a
 * nonblocking call itself, it stages the device buffers for the module it replaced.
 *
 *   strata_overlap [-c COLL|all] [-b MIN] [-e MAX] [-f FACTOR] [-t TYPE] [-o OP]
 *                  [-w WARMUP] [-n ITERS] [--test K] [--thread-multiple] [--idle] [--no-check]
 *                  [--device]
 * Exit status: 0, 1 if a result was wrong, 2 on bad arguments, 77 without a GPU.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "perf/bench_common.h"

static const struct { const char *name; coll_t id; } coll_names[] = {
    { "allreduce", C_ALLREDUCE }, { "allgather", C_ALLGATHER },
    { "reduce_scatter_block", C_REDUCE_SCATTER_BLOCK }, { "bcast", C_BCAST },
    { "alltoall", C_ALLTOALL }, { "reduce", C_REDUCE },
};
#define NCOLLS ((int)(sizeof coll_names / sizeof coll_names[0]))

static int warmup = 5, iters = 20, check = 1;
static double test_every_us = 0;      /* --test K: MPI_Test every K us of compute; 0: never */
static int thread_level = -1;         /* --thread-multiple: what MPI_Init_thread provided */
static size_t min_bytes = 1024, max_bytes = 4u << 20;
static double factor = 4;

/* ------------------------------------------------------------ computation
 * A dependent chain of multiply-adds: its time per unit does not depend on caches
 * or on the memory traffic of the collective, and the compiler cannot shorten it.
 * units_per_us is this rank's rate, the best of a few timed runs at start. */
static volatile double sink;
static double units_per_us;

static void compute_units(long n)
{
    double a = sink;
    for (long i = 0; i < n; i++) a = a * 0.9999999 + 1e-9;
    sink = a;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void calibrate(void)
{
    long n = 1 << 14;
    double best = 0;
    compute_units(n);
    for (int k = 0; k < 8; k++) {    /* grow to ~2 ms a run, keep the fastest rate */
        double t0 = now_us();
        compute_units(n);
        double dt = now_us() - t0, rate = dt > 0 ? n / dt : 0;
        if (rate > best) best = rate;
        if (dt < 2000 && n < (1L << 40)) n *= 2;
    }
    units_per_us = best > 0 ? best : 1000;
}

/* Compute for `units`; with --test, call MPI_Test on *req every test_every_us worth
 * of units until it completes (req NULL: the compute-alone measurement, no tests). */
/* --idle: the rank sleeps instead, as a host thread does while its GPU computes. */
static int idle;

static void work(long units)
{
    if (!idle) { compute_units(units); return; }
    long ns = (long)(units / units_per_us * 1e3);
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    nanosleep(&ts, NULL);
}

static void compute(long units, MPI_Request *req)
{
    if (!req || test_every_us <= 0) { work(units); return; }
    long chunk = (long)(test_every_us * units_per_us);
    int done = 0;
    if (chunk < 1) chunk = 1;
    for (long left = units; left > 0; left -= chunk) {
        work(left < chunk ? left : chunk);
        if (!done) MPI_Test(req, &done, MPI_STATUS_IGNORE);
    }
}

/* --------------------------------------------------------------- one size */
typedef struct {
    size_t count;        /* elements per rank (per peer for alltoall/allgather/reduce_scatter) */
    size_t send_elems, recv_elems;
    size_t bytes;        /* the "size" column: the largest buffer, as nccl-tests */
} shape_t;

static shape_t shape_of(size_t bytes)
{
    shape_t s; size_t es = (size_t)types[type].size, n = (size_t)nranks;
    memset(&s, 0, sizeof s);
    switch (coll) {
    case C_ALLREDUCE: case C_REDUCE: case C_BCAST:
        s.count = bytes / es; s.send_elems = s.recv_elems = s.count; break;
    case C_ALLGATHER:
        s.count = bytes / es / n; s.send_elems = s.count; s.recv_elems = s.count * n; break;
    case C_REDUCE_SCATTER: case C_REDUCE_SCATTER_BLOCK:   /* (no reduce_scatter here) */
        s.count = bytes / es / n; s.send_elems = s.count * n; s.recv_elems = s.count; break;
    case C_ALLTOALL:
        s.count = bytes / es / n; s.send_elems = s.recv_elems = s.count * n; break;
    }
    s.bytes = (s.send_elems > s.recv_elems ? s.send_elems : s.recv_elems) * es;
    return s;
}

static void start(const shape_t *s, void *sb, void *rb, MPI_Comm comm, MPI_Request *req)
{
    MPI_Datatype dt = types[type].dt;
    MPI_Op op = ops[opi].op;
    int c = (int)s->count;
    switch (coll) {
    case C_ALLREDUCE: MPI_Iallreduce(sb, rb, c, dt, op, comm, req); break;
    case C_REDUCE: MPI_Ireduce(sb, rb, c, dt, op, 0, comm, req); break;
    case C_BCAST: MPI_Ibcast(sb, c, dt, 0, comm, req); break;
    case C_ALLGATHER: MPI_Iallgather(sb, c, dt, rb, c, dt, comm, req); break;
    case C_REDUCE_SCATTER: case C_REDUCE_SCATTER_BLOCK: MPI_Ireduce_scatter_block(sb, rb, c, dt, op, comm, req); break;
    case C_ALLTOALL: MPI_Ialltoall(sb, c, dt, rb, c, dt, comm, req); break;
    }
}

/* A measured side: its communicator and, for the device-mode base, the pinned host
 * buffers it stages through (hs == NULL: the buffers go to MPI directly). */
typedef struct { const char *name; MPI_Comm comm; void *hs, *hr; } side_t;

/* One call: start, `units` of computation (0: none), wait; with staging, the copies
 * around it. */
static void run_call(const shape_t *s, const side_t *d, void *sb, void *rb, long units)
{
    size_t es = (size_t)types[type].size;
    MPI_Request req;
    if (!d->hs) {
        start(s, sb, rb, d->comm, &req);
        if (units > 0) compute(units, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        return;
    }
    if (coll != C_BCAST || rank == 0) bench_to_host(d->hs, sb, s->send_elems * es);
    start(s, d->hs, d->hr, d->comm, &req);
    if (units > 0) compute(units, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (coll == C_BCAST) { if (rank != 0) bench_to_dev(sb, d->hs, s->send_elems * es); }
    else if (coll != C_REDUCE || rank == 0) bench_to_dev(rb, d->hr, s->recv_elems * es);
}

/* Fill the inputs, run one call (with `units` of computation inside), count the
 * wrong elements on this rank. */
typedef struct { const shape_t *s; const side_t *d; void *sb, *rb; long units; } once_t;
static void run_once_call(void *ctx)
{
    const once_t *o = ctx;
    run_call(o->s, o->d, o->sb, o->rb, o->units);
}
static long check_once(const shape_t *s, const side_t *d, void *sb, void *rb, long units)
{
    once_t o = { s, d, sb, rb, units };
    return check_call(s->send_elems, s->recv_elems, s->count, sb, rb, run_once_call, &o);
}

typedef struct { double pure, compute, overlapped, overlap; long wrong; } result_t;

static double max_over_ranks(double v, MPI_Comm ctl)
{
    double most;
    MPI_Allreduce(&v, &most, 1, MPI_DOUBLE, MPI_MAX, ctl);
    return most;
}

/* Mean per call of `iters` calls without computation, max over ranks. */
static double time_pure(const shape_t *s, const side_t *d, void *sb, void *rb, MPI_Comm ctl)
{
    MPI_Barrier(ctl);
    double t0 = MPI_Wtime();
    for (int k = 0; k < iters; k++) {
        run_call(s, d, sb, rb, 0);
        if (on_device) devbuf_sync();   /* nothing left running on the GPU, as below */
    }
    return max_over_ranks((MPI_Wtime() - t0) / iters * 1e6, ctl);
}

/* The computation alone and the call with it inside, alternating, so that drift in
 * the machine's load hits both alike: each mean per call, max over ranks. */
static void time_overlap(const shape_t *s, const side_t *d, void *sb, void *rb, long units, MPI_Comm ctl,
                         double *comp_us, double *ovl_us)
{
    double comp = 0, ovl = 0;
    MPI_Barrier(ctl);
    for (int k = 0; k < iters; k++) {
        double t0 = MPI_Wtime();
        compute(units, NULL);
        double t1 = MPI_Wtime();
        run_call(s, d, sb, rb, units);
        if (on_device) devbuf_sync();
        double t2 = MPI_Wtime();
        comp += t1 - t0;
        ovl += t2 - t1;
    }
    *comp_us = max_over_ranks(comp / iters * 1e6, ctl);
    *ovl_us = max_over_ranks(ovl / iters * 1e6, ctl);
}

static result_t measure(const shape_t *s, const side_t *d, void *sb, void *rb, MPI_Comm ctl)
{
    result_t r;
    long w = check ? check_once(s, d, sb, rb, 0) : 0;
    for (int k = 0; k < warmup; k++) run_call(s, d, sb, rb, 0);
    r.pure = time_pure(s, d, sb, rb, ctl);
    /* the computation lasts as long as this side's pure call, on every rank */
    long units = (long)(r.pure * units_per_us);
    if (units < 1) units = 1;
    /* the overlapped path is checked too: progress during computation is new code */
    if (check) w += check_once(s, d, sb, rb, units);
    time_overlap(s, d, sb, rb, units, ctl, &r.compute, &r.overlapped);
    r.overlap = r.pure > 0 ? (1 - (r.overlapped - r.compute) / r.pure) * 100 : 0;
    if (r.overlap < 0) r.overlap = 0;
    MPI_Allreduce(&w, &r.wrong, 1, MPI_LONG, MPI_SUM, ctl);
    return r;
}

/* A communicator is set up as it is made (coll_strata_setup_at_creation auto) or, one
 * whose ranks all have a GPU, at its first call: in steps behind a nonblocking one,
 * to its end by the blocking call after it. Done on both sides, untimed. */
static void set_up(MPI_Comm comm)
{
    int one = 1, sum = 0;
    MPI_Request req;
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
}

/* ---------------------------------------------------------------- device */
/* devbuf_init on every rank with its node-local rank; 0 if all ranks have a GPU,
 * otherwise 77 with the first failing rank's reason printed by rank 0. */
static int device_init(MPI_Comm ctl)
{
    MPI_Comm node;
    int lr, first, mine;
    char why[256] = "";
    MPI_Comm_split_type(ctl, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lr);
    MPI_Comm_free(&node);
    mine = 0 == devbuf_init(lr, why, sizeof why) ? nranks : rank;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, ctl);
    if (first == nranks) return 0;
    if (first != 0 && rank == first) MPI_Send(why, sizeof why, MPI_CHAR, 0, 0, ctl);
    if (first != 0 && rank == 0) MPI_Recv(why, sizeof why, MPI_CHAR, first, 0, ctl, MPI_STATUS_IGNORE);
    if (rank == 0) fprintf(stderr, "strata_overlap: --device: %s\n", why);
    return 77;
}

/* ---------------------------------------------------------------- output */
static void print_header(double rate_min, double rate_max)
{
    const char *cn = coll_names[0].name;
    for (int k = 0; k < NCOLLS; k++) if (coll_names[k].id == coll) cn = coll_names[k].name;
    printf("# strata_overlap: i%s, %d ranks, %s buffers, warmup %d, iters %d, %s %s\n", cn,
           nranks, on_device ? "device" : "host", warmup, iters, idle ? "sleep" : "compute",
           test_every_us > 0 ? "with MPI_Test every" : "without MPI calls");
    if (test_every_us > 0) printf("#   (MPI_Test every %g us of %s)\n", test_every_us, idle ? "sleep" : "computation");
    if (thread_level >= 0)
        printf("# MPI_Init_thread(MPI_THREAD_MULTIPLE) provided %s\n",
               thread_level == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
               : "less (coll_strata_progress_thread does not start)");
    printf("# strata: MPI_COMM_WORLD dup%s; base: %s\n", on_device ? ", given the device buffers" : "",
           on_device ? "host staging on MPI_Comm_dup_with_info(strata=off): device -> pinned host,\n"
                       "#   start, compute, wait, host -> device, all timed"
                     : "MPI_Comm_dup_with_info(strata=off) in the same job");
    printf("# pure = start + wait; comp = the compute loop (--idle: sleep) alone, as long as pure;\n"
           "# ovl = start + compute + wait; ovl%% = max(0, 1 - (ovl - comp) / pure) * 100; times in\n"
           "# us, mean per call, max over ranks; compute rate %.0f-%.0f units/us over ranks;\n"
           "# ratio = base pure / strata pure\n#\n", rate_min, rate_max);
    printf("# %10s %11s %7s %5s | %-43s | %-43s |\n", "", "", "", "", "strata", "base (without strata)");
    printf("# %10s %11s %7s %5s | %9s %9s %9s %6s %6s | %9s %9s %9s %6s %6s | %6s\n",
           "size(B)", "count", "type", "op", "pure", "comp", "ovl", "ovl%", "#wrong",
           "pure", "comp", "ovl", "ovl%", "#wrong", "ratio");
    fflush(stdout);
}

static void print_row(const shape_t *s, const result_t *rs, const result_t *rb)
{
    int reduction = coll != C_BCAST && coll != C_ALLGATHER && coll != C_ALLTOALL;
    printf("  %10zu %11zu %7s %5s | %9.2f %9.2f %9.2f %6.1f %6ld | %9.2f %9.2f %9.2f %6.1f %6ld | %6.2f\n",
           s->bytes, s->bytes / (size_t)types[type].size, types[type].name,
           reduction ? ops[opi].name : "none",
           rs->pure, rs->compute, rs->overlapped, rs->overlap, rs->wrong,
           rb->pure, rb->compute, rb->overlapped, rb->overlap, rb->wrong,
           rs->pure > 0 ? rb->pure / rs->pure : 0);
    fflush(stdout);
}

static void usage(void)
{
    printf("usage: strata_overlap [-c COLL|all] [-b MIN] [-e MAX] [-f FACTOR] [-t TYPE] [-o OP]\n"
           "                      [-w WARMUP] [-n ITERS] [--test K] [--thread-multiple] [--idle]\n"
           "                      [--no-check] [--device]\n"
           "  -c  allreduce (default), allgather, reduce_scatter_block, bcast, alltoall, reduce, or all\n"
           "      (the nonblocking forms: MPI_Iallreduce, ...)\n"
           "  -b/-e  smallest/largest size in bytes (K/M/G suffixes; default 1K and 4M), -f factor (default 4)\n"
           "  -t  int8 uint8 int32 uint32 int64 uint64 float (default) double;  -o sum (default) prod max min\n"
           "  --test K   call MPI_Test every K microseconds of computation (default: no MPI calls)\n"
           "  --thread-multiple  MPI_Init_thread(MPI_THREAD_MULTIPLE), which coll_strata_progress_thread needs\n"
           "  --idle     sleep instead of computing (a host waiting for its GPU): leaves the cores free\n"
           "  --device   GPU buffers (CUDA driver needed; exit 77 without one); the base side stages\n"
           "             through pinned host memory\n"
           "  --version  strata's version and the commit this was built from (needs no job)\n");
}

/* One collective's table; returns the wrong elements of the sweep, or -1 if a
 * buffer could not be allocated. */
static long sweep(const side_t *strata, side_t *base, MPI_Comm ctl)
{
    double rmin, rmax;
    long total_wrong = 0;
    MPI_Allreduce(&units_per_us, &rmin, 1, MPI_DOUBLE, MPI_MIN, ctl);
    MPI_Allreduce(&units_per_us, &rmax, 1, MPI_DOUBLE, MPI_MAX, ctl);
    if (rank == 0) print_header(rmin, rmax);
    for (double b = (double)min_bytes; b <= (double)max_bytes * 1.0000001; b *= factor) {
        shape_t s = shape_of((size_t)b);
        size_t es = (size_t)types[type].size;
        if (s.count == 0) continue;
        void *sb = bench_alloc(s.send_elems * es), *rb = bench_alloc(s.recv_elems * es);
        if (on_device) {
            base->hs = devbuf_alloc_pinned(s.send_elems * es);
            base->hr = devbuf_alloc_pinned(s.recv_elems * es);
        }
        int ok = sb && rb && (!on_device || (base->hs && base->hr)), all_ok;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctl);
        if (all_ok) {
            /* alternate which side goes first so drift in machine load hits both */
            static int flip;
            result_t rs, rb_;
            if ((flip ^= 1)) { rb_ = measure(&s, base, sb, rb, ctl); rs = measure(&s, strata, sb, rb, ctl); }
            else { rs = measure(&s, strata, sb, rb, ctl); rb_ = measure(&s, base, sb, rb, ctl); }
            total_wrong += rs.wrong + rb_.wrong;
            if (rank == 0) print_row(&s, &rs, &rb_);
        } else if (rank == 0) {
            printf("# %zu bytes: buffer allocation failed on a rank; stopping\n", s.bytes);
        }
        bench_free(sb); bench_free(rb);
        if (on_device) {
            if (base->hs) devbuf_free_pinned(base->hs);
            if (base->hr) devbuf_free_pinned(base->hr);
            base->hs = base->hr = NULL;
        }
        if (!all_ok) return -1;
    }
    if (rank == 0) printf("# out of bounds values: %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    return total_wrong;
}

int main(int argc, char **argv)
{
    if (bench_print_version(argc, argv, "strata-overlap")) return 0;
    int want_multiple = 0;
    for (int a = 1; a < argc; a++) want_multiple |= !strcmp(argv[a], "--thread-multiple");
    if (want_multiple) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &thread_level);
    else MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int bad = 0, all_colls = 0;
    const bench_opts_t opts = { &min_bytes, &max_bytes, &factor, &warmup, &iters, &check };
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        int found = 0;
        if (!strcmp(s, "-c") && v) {
            for (int k = 0; k < NCOLLS; k++)
                if (!strcmp(v, coll_names[k].name)) { coll = coll_names[k].id; found = 1; }
            if (!strcmp(v, "all")) all_colls = found = 1;
            bad |= !found; a++;
        } else if (bench_common_option(s, v, &a, &opts, &bad)) {
            /* -t -o -b -e -f -w -n --no-check --device: taken */
        }
        else if (!strcmp(s, "--test") && v) { test_every_us = atof(v); bad |= test_every_us <= 0; a++; }
        else if (!strcmp(s, "--idle")) {
            idle = 1;
#ifdef PR_SET_TIMERSLACK
            prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);   /* sleeps of microseconds, not +50 us */
#endif
        }
        else if (!strcmp(s, "--thread-multiple")) continue;   /* taken before MPI_Init */
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) { if (rank == 0) usage(); MPI_Finalize(); return 0; }
        else bad = 1;
    }
    if (bad || factor <= 1 || iters < 1 || warmup < 0 || min_bytes < 1 || max_bytes < min_bytes) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    /* ctl: barriers and result reductions, never timed, never strata. */
    MPI_Comm ctl, cs, cb;
    MPI_Info off;
    MPI_Info_create(&off);
    MPI_Info_set(off, "strata", "off");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, off, &ctl);
    MPI_Comm_dup(MPI_COMM_WORLD, &cs);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, off, &cb);
    MPI_Info_free(&off);

    int status = on_device ? device_init(ctl) : 0;
    long wrong = 0;
    if (status == 0) {
        set_up(cs);
        set_up(cb);
        calibrate();
        side_t strata = { "strata", cs, NULL, NULL }, base = { "base", cb, NULL, NULL };
        for (int k = 0; k < NCOLLS && status == 0; k++) {
            if (all_colls) coll = coll_names[k].id;
            else if (k > 0) break;
            if (all_colls && k > 0 && rank == 0) printf("\n");
            long w = sweep(&strata, &base, ctl);
            if (w < 0) status = 1;
            else wrong += w;
        }
    }
    if (on_device && status != 77) {
        long counts[2] = { copy_failures, live_bufs }, all[2];
        MPI_Allreduce(counts, all, 2, MPI_LONG, MPI_SUM, ctl);
        if (rank == 0 && all[0]) printf("# device copies that failed: %ld FAILED\n", all[0]);
        if (rank == 0 && all[1]) printf("# buffers strata_overlap did not free: %ld FAILED\n", all[1]);
        if (all[0] || all[1]) status = 1;
    }
    MPI_Comm_free(&cs);
    MPI_Comm_free(&cb);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return status ? status : wrong ? 1 : 0;
}
