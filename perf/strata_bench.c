/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strata_bench - side-by-side collective benchmark in the nccl-tests style.
 *
 * For every size it times the collective on two communicators of the same job:
 *   strata: a duplicate of MPI_COMM_WORLD (the component, when selected, serves it)
 *   base:   MPI_Comm_dup_with_info(MPI_COMM_WORLD, {"strata": "off"}), which the
 *           component hands to the module it replaced
 * and prints time, algbw, busbw and #wrong for both, then base time / strata time.
 * Timings are ratios within one run: the machines are shared and noisy.
 *
 * With --device the buffers are GPU memory (test/common/devbuf: the CUDA driver,
 * loaded at run time). strata gets the device buffers. The module strata replaced
 * cannot take them (Debian's Open MPI is not CUDA-aware), so the second column is
 * "staged", what an application does without strata: per call, copy the send buffer
 * to pinned host memory, run the collective on the strata=off communicator, copy the
 * result back to the device; all of it timed. %roof compares strata's busbw with a
 * device-to-device copy measured at the start on every rank at once. No GPU (or no
 * driver): exit 77 with the reason. On host buffers, %mcpy compares it the same way
 * with memcpy (1 to 64 MiB, every rank at once): how far strata is from the limit.
 * On the fake CUDA driver (test/fakecuda) --device also prints what strata's timed calls
 * asked of the GPU, from the driver's counters (fakecuda_counters): kernel launches,
 * copies and host waits per call (the most of any rank), and device bytes read plus
 * written per call relative to the size S (the mean over ranks, and the most of any
 * rank); "-" on a real driver, which counts nothing.
 *
 * When the info key cannot be honoured, run the job twice instead (perf/compare
 * does this): --single prints the strata columns only, once with the component
 * and once with `--mca coll ^strata`, and perf/compare merges the two tables.
 *
 *   strata_bench [-c COLL] [-b MIN] [-e MAX] [-f FACTOR] [-t TYPE] [-o OP]
 *                [-w WARMUP] [-n ITERS] [--single] [--no-check] [--device] [--nonblocking]
 * Sizes take K/M/G suffixes (bytes). Time = max over ranks of the mean per call.
 * busbw factors: allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n;
 * bcast and reduce 1.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/bench_common.h"
#include "test/fakecuda/fakecuda.h"

static const struct { const char *name; coll_t id; } coll_names[] = {
    { "allreduce", C_ALLREDUCE }, { "allgather", C_ALLGATHER },
    { "reduce_scatter", C_REDUCE_SCATTER }, { "reduce_scatter_block", C_REDUCE_SCATTER_BLOCK },
    { "bcast", C_BCAST }, { "alltoall", C_ALLTOALL }, { "reduce", C_REDUCE },
};

static int warmup = 5, iters = 20, check = 1, single = 0;
static size_t min_bytes = 8, max_bytes = 8u << 20;
static double factor = 2;

/* Pinned host memory for the staged baseline (device mode only). */
static void *bench_alloc_pinned(size_t bytes)
{
    void *p = devbuf_alloc_pinned(bytes);
    live_bufs += NULL != p;
    return p;
}
static void bench_free_pinned(void *p)
{
    if (p) { devbuf_free_pinned(p); live_bufs--; }
}

/* --------------------------------------------------------------- one size */
typedef struct {
    size_t count;        /* elements per rank (per peer for alltoall/allgather/reduce_scatter) */
    size_t send_elems, recv_elems;
    size_t bytes;        /* the "size" column: the largest buffer, as nccl-tests */
    double bus;          /* busbw factor */
} shape_t;

static shape_t shape_of(size_t bytes)
{
    shape_t s; size_t es = (size_t)types[type].size, n = (size_t)nranks;
    memset(&s, 0, sizeof s);
    switch (coll) {
    case C_ALLREDUCE: case C_REDUCE:
        s.count = bytes / es; s.send_elems = s.recv_elems = s.count;
        s.bus = coll == C_ALLREDUCE ? 2.0 * (n - 1) / n : 1.0; break;
    case C_BCAST:
        s.count = bytes / es; s.send_elems = s.recv_elems = s.count; s.bus = 1.0; break;
    case C_ALLGATHER:
        s.count = bytes / es / n; s.send_elems = s.count; s.recv_elems = s.count * n;
        s.bus = (double)(n - 1) / n; break;
    case C_REDUCE_SCATTER: case C_REDUCE_SCATTER_BLOCK:
        s.count = bytes / es / n; s.send_elems = s.count * n; s.recv_elems = s.count;
        s.bus = (double)(n - 1) / n; break;
    case C_ALLTOALL:
        s.count = bytes / es / n; s.send_elems = s.recv_elems = s.count * n;
        s.bus = (double)(n - 1) / n; break;
    }
    s.bytes = (s.send_elems > s.recv_elems ? s.send_elems : s.recv_elems) * es;
    return s;
}

static int *rcounts;   /* reduce_scatter, alltoallv: all equal */
static int *displs;    /* alltoallv: r * count */
static int vcounts = 0;   /* -c alltoallv: alltoall's blocks through MPI_Alltoallv */

static int nonblocking = 0;   /* --nonblocking: MPI_I<coll> then MPI_Wait */
static int split_too = 0;     /* --split: each --comms cycle also splits MPI_COMM_WORLD */

/* The collective, blocking or (--nonblocking) started and waited for at once. */
#define ONE(Up, low, ...) \
    (nonblocking ? (MPI_I##low(__VA_ARGS__, &rq), MPI_Wait(&rq, MPI_STATUS_IGNORE)) : MPI_##Up(__VA_ARGS__))
static void run_once(const shape_t *s, void *sb, void *rb, MPI_Comm comm)
{
    MPI_Datatype dt = types[type].dt;
    MPI_Request rq;
    int c = (int)s->count;
    switch (coll) {
    case C_ALLREDUCE: ONE(Allreduce, allreduce, sb, rb, c, dt, ops[opi].op, comm); break;
    case C_REDUCE: ONE(Reduce, reduce, sb, rb, c, dt, ops[opi].op, 0, comm); break;
    case C_BCAST: ONE(Bcast, bcast, sb, c, dt, 0, comm); break;
    case C_ALLGATHER: ONE(Allgather, allgather, sb, c, dt, rb, c, dt, comm); break;
    case C_REDUCE_SCATTER: ONE(Reduce_scatter, reduce_scatter, sb, rb, rcounts, dt, ops[opi].op, comm); break;
    case C_REDUCE_SCATTER_BLOCK: ONE(Reduce_scatter_block, reduce_scatter_block, sb, rb, c, dt, ops[opi].op, comm); break;
    case C_ALLTOALL:
        if (vcounts) ONE(Alltoallv, alltoallv, sb, rcounts, displs, dt, rb, rcounts, displs, dt, comm);
        else ONE(Alltoall, alltoall, sb, c, dt, rb, c, dt, comm);
        break;
    }
}

/* A measured side: a communicator and how the buffers reach it. hs == NULL: directly.
 * Otherwise (the device-mode baseline) through the pinned host buffers hs/hr, as an
 * application does without a CUDA-aware MPI: device -> host, the collective on host
 * memory, host -> device, only the copies each rank needs. */
typedef struct { MPI_Comm comm; void *hs, *hr; } side_t;

static void run_side(const shape_t *s, const side_t *d, void *sb, void *rb)
{
    size_t es = (size_t)types[type].size;
    if (!d->hs) { run_once(s, sb, rb, d->comm); return; }
    if (coll != C_BCAST || rank == 0) bench_to_host(d->hs, sb, s->send_elems * es);
    run_once(s, d->hs, d->hr, d->comm);
    if (coll == C_BCAST) { if (rank != 0) bench_to_dev(sb, d->hs, s->send_elems * es); }
    else if (coll != C_REDUCE || rank == 0) bench_to_dev(rb, d->hr, s->recv_elems * es);
}

/* Fill inputs, run once, count wrong elements on this rank. */
typedef struct { const shape_t *s; const side_t *d; void *sb, *rb; } once_t;
static void run_once_side(void *ctx)
{
    const once_t *o = ctx;
    run_side(o->s, o->d, o->sb, o->rb);
}
static long check_once(const shape_t *s, const side_t *d, void *sb, void *rb)
{
    once_t o = { s, d, sb, rb };
    return check_call(s->send_elems, s->recv_elems, s->count, sb, rb, run_once_side, &o);
}

/* ---------------------------------------------------------------- the fake driver's counters
 * fakecuda_counters of the libcuda.so.1 devbuf loaded: NULL on a real driver. */
static int (*fake_counters)(struct fakecuda_counters *);

static void find_counters(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib) *(void **)&fake_counters = dlsym(lib, "fakecuda_counters");
}

/* What the timed calls asked of the GPU, per call: launches, copies and host waits (the
 * most of any rank), device bytes (mean and most of any rank). have: every rank counted. */
enum { K_LAUNCH, K_COPY, K_HWAIT, K_MAXB, K_N };
typedef struct { int have; double per_call[K_N], mean_bytes; } counts_t;

static struct fakecuda_counters counters_now(void)
{
    struct fakecuda_counters c;
    memset(&c, 0, sizeof c);
    if (fake_counters) fake_counters(&c);
    return c;
}

static counts_t counts_of(const struct fakecuda_counters *a, const struct fakecuda_counters *b, MPI_Comm ctl)
{
    counts_t r;
    double mine[K_N] = {
        (double)(b->launches - a->launches) / iters, (double)(b->copies - a->copies) / iters,
        (double)(b->host_waits - a->host_waits) / iters,
        (double)(b->dev_read - a->dev_read + b->dev_written - a->dev_written) / iters,
    }, sum;
    int have = fake_counters != NULL;
    MPI_Allreduce(&have, &r.have, 1, MPI_INT, MPI_MIN, ctl);
    MPI_Allreduce(mine, r.per_call, K_N, MPI_DOUBLE, MPI_MAX, ctl);
    MPI_Allreduce(&mine[K_MAXB], &sum, 1, MPI_DOUBLE, MPI_SUM, ctl);
    r.mean_bytes = sum / nranks;
    return r;
}

typedef struct { double us; long wrong; counts_t counts; } result_t;

static result_t measure(const shape_t *s, const side_t *d, void *sb, void *rb, MPI_Comm ctl)
{
    result_t r;
    memset(&r, 0, sizeof r);
    long w = check ? check_once(s, d, sb, rb) : 0;
    for (int k = 0; k < warmup; k++) run_side(s, d, sb, rb);
    MPI_Barrier(ctl);
    struct fakecuda_counters c0 = counters_now();
    double t0 = MPI_Wtime();
    for (int k = 0; k < iters; k++) run_side(s, d, sb, rb);
    struct fakecuda_counters c1 = counters_now();   /* before the sync below, which is ours */
    if (on_device) devbuf_sync();    /* nothing left running on the GPU counts as done */
    double mean = (MPI_Wtime() - t0) / iters * 1e6;
    /* reductions of the results run on the control communicator (never strata) */
    MPI_Allreduce(&mean, &r.us, 1, MPI_DOUBLE, MPI_MAX, ctl);
    MPI_Allreduce(&w, &r.wrong, 1, MPI_LONG, MPI_SUM, ctl);
    if (on_device) r.counts = counts_of(&c0, &c1, ctl);
    return r;
}

/* ---------------------------------------------------------------- roofline
 * The copy bandwidth a collective's busbw is compared with: device-to-device copies
 * for device buffers, memcpy for host buffers. The best of a few copies of `bytes`,
 * on every rank at once (ranks that share a GPU, or a host's memory, share its
 * bandwidth, so this is what one rank gets under that sharing), bytes counted once as
 * busbw counts them. The minimum over ranks; 0 if any rank failed. */
static int copy_once(void *b, const void *a, size_t bytes)
{
    if (on_device) return devbuf_dev_to_dev(b, a, bytes) || devbuf_sync();
    memcpy(b, a, bytes);
    return 0;
}

static double roofline(size_t bytes, MPI_Comm ctl)
{
    void *a = on_device ? devbuf_alloc(bytes) : malloc(bytes);
    void *b = on_device ? devbuf_alloc(bytes) : malloc(bytes);
    if (!on_device && a && b) memset(a, 1, bytes), memset(b, 0, bytes);   /* pages in */
    int ok = a && b && !copy_once(b, a, bytes);   /* warm up */
    double best = 0, bw = 0, all;
    for (int k = 0; k < 10; k++) {
        MPI_Barrier(ctl);
        if (!ok) continue;
        double t0 = MPI_Wtime();
        ok = !copy_once(b, a, bytes);
        double t = MPI_Wtime() - t0;
        if (best == 0 || t < best) best = t;
    }
    if (ok && best > 0) bw = (double)bytes / best / 1e9;
    if (on_device) devbuf_free(a), devbuf_free(b);
    else free(a), free(b);
    MPI_Allreduce(&bw, &all, 1, MPI_DOUBLE, MPI_MIN, ctl);
    return all;
}

/* devbuf_init on every rank with its node-local rank. 0 if all ranks have a GPU;
 * otherwise 77, with the first failing rank's reason printed by rank 0. Sets
 * *sharing to the most ranks that share one GPU (same host, same ordinal). Only
 * ctl carries collectives, so strata sets up nothing for the node communicator. */
static int device_init(MPI_Comm ctl, int *sharing)
{
    MPI_Comm node;
    int lr, ok, first, mine, same = 0;
    char why[256] = "";
    MPI_Comm_split_type(ctl, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lr);
    MPI_Comm_free(&node);
    ok = 0 == devbuf_init(lr, why, sizeof why);
    mine = ok ? nranks : rank;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, ctl);
    if (first < nranks) {
        if (first != 0 && rank == first) MPI_Send(why, sizeof why, MPI_CHAR, 0, 0, ctl);
        if (first != 0 && rank == 0) MPI_Recv(why, sizeof why, MPI_CHAR, first, 0, ctl, MPI_STATUS_IGNORE);
        if (rank == 0) fprintf(stderr, "strata_bench: --device: %s\n", why);
        return 77;
    }
    struct { int dev; char host[MPI_MAX_PROCESSOR_NAME]; } me, *all = malloc(sizeof me * nranks);
    int hl;
    memset(&me, 0, sizeof me);
    me.dev = devbuf_device();
    MPI_Get_processor_name(me.host, &hl);
    MPI_Allgather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, ctl);
    for (int r = 0; r < nranks; r++) same += all[r].dev == me.dev && !strcmp(all[r].host, me.host);
    MPI_Allreduce(&same, sharing, 1, MPI_INT, MPI_MAX, ctl);
    free(all);
    return 0;
}

/* ---------------------------------------------------------------- output */
static void print_header(MPI_Comm ctl, double roof, int sharing, size_t used_at_start)
{
    char host[MPI_MAX_PROCESSOR_NAME]; int hl;
    MPI_Get_processor_name(host, &hl);
    char *hosts = rank == 0 ? malloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, ctl);
    if (rank != 0) return;
    int nhosts = 0;
    for (int r = 0; r < nranks; r++) {
        int seen = 0;
        for (int q = 0; q < r; q++) seen |= !strcmp(hosts + q * MPI_MAX_PROCESSOR_NAME, hosts + r * MPI_MAX_PROCESSOR_NAME);
        nhosts += !seen;
    }
    free(hosts);
    const char *cn = "?";
    for (size_t k = 0; k < sizeof coll_names / sizeof coll_names[0]; k++) if (coll_names[k].id == coll) cn = coll_names[k].name;
    if (vcounts) cn = "alltoallv";
    printf("# strata_bench: %s, %d ranks on %d host(s), %s buffers, warmup %d, iters %d\n",
           cn, nranks, nhosts, on_device ? "device" : "host", warmup, iters);
    if (!on_device) {
        printf("# strata: MPI_COMM_WORLD dup; base: %s\n", single ? "(not in this run: --single)"
               : "MPI_Comm_dup_with_info(strata=off) in the same job");
        printf("# time = max over ranks of the mean per call; ratio = base time / strata time\n");
        if (roof > 0)
            printf("# roofline: memcpy %.1f GB/s per rank (measured, every rank at once)\n"
                   "# %%mcpy = strata busbw / roofline * 100\n#\n", roof);
        else
            printf("#\n");
    } else {
        printf("# device: rank 0 on GPU %d (%s); device memory in use at start: %zu bytes\n",
               devbuf_device(), devbuf_name(), used_at_start);
        printf("# strata: MPI_COMM_WORLD dup, given the device buffers\n# staged: %s\n", single
               ? "(not in this run: --single)"
               : "host staging without strata, what an application does without a CUDA-aware MPI:\n"
                 "#   per call, device -> pinned host copy, the same collective on host buffers on\n"
                 "#   MPI_Comm_dup_with_info(strata=off), host -> device copy; all of it timed");
        printf("# time = max over ranks of the mean per call; ratio = staged time / strata time\n");
        if (roof > 0)
            printf("# roofline: device-to-device copy %.1f GB/s per rank (measured, %d ranks sharing)\n"
                   "# %%roof = strata busbw / roofline * 100\n#\n", roof, sharing);
        else
            printf("# roofline: not measured (a device allocation or copy failed)\n#\n");
    }
    if (on_device)
        printf("# strata's timed calls on the GPU (fake driver's counters; - on a real driver): per call,\n"
               "#   launch, copy, hwait: kernel launches, copies, host waits (the most of any rank);\n"
               "#   devB/S: device bytes read + written / size (mean over ranks), maxB/S: the most of any rank\n#\n");
    const char *cols = on_device ? " | %7s %7s %7s %7s %7s" : "";
    if (single)
        printf("# %10s %11s %7s %5s %11s %11s %11s %7s%s", "size(B)", "count", "type", "op",
               "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong", on_device ? "  %roof" : "  %mcpy");
    else
        printf("# %10s %11s %7s %5s | %-42s | %-42s | %6s%s%s\n# %10s %11s %7s %5s | %9s %10s %10s %8s | %9s %10s %10s %8s | %6s%s",
               "", "", "", "", "strata", on_device ? "staged (host staging, without strata)" : "base (without strata)",
               "", on_device ? "       " : "", on_device ? " | strata on the GPU, per call" : "",
               "size(B)", "count", "type", "op", "time(us)", "algbw", "busbw", "#wrong",
               "time(us)", "algbw", "busbw", "#wrong", "ratio", on_device ? "  %roof" : "  %mcpy");
    printf(cols, "launch", "copy", "hwait", "devB/S", "maxB/S");
    printf("\n");
    fflush(stdout);
}

static void print_row(const shape_t *s, result_t rs, result_t rbase, int reduction, double roof)
{
    size_t es = (size_t)types[type].size;
    double gb = (double)s->bytes / 1e9;
    double a1 = gb / (rs.us / 1e6), a2 = single ? 0 : gb / (rbase.us / 1e6);
    if (single)
        printf("  %10zu %11zu %7s %5s %11.2f %11.3f %11.3f %7ld", s->bytes, s->bytes / es,
               types[type].name, reduction ? ops[opi].name : "none", rs.us, a1, a1 * s->bus, rs.wrong);
    else
        printf("  %10zu %11zu %7s %5s | %9.2f %10.3f %10.3f %8ld | %9.2f %10.3f %10.3f %8ld | %6.2f",
               s->bytes, s->bytes / es, types[type].name, reduction ? ops[opi].name : "none",
               rs.us, a1, a1 * s->bus, rs.wrong, rbase.us, a2, a2 * s->bus, rbase.wrong,
               rbase.us / rs.us);
    if (roof > 0) printf(" %6.1f", a1 * s->bus / roof * 100);
    else printf(" %6s", "-");
    const counts_t *c = &rs.counts;
    if (on_device && c->have)
        printf(" | %7.2f %7.2f %7.2f %7.3f %7.3f", c->per_call[K_LAUNCH], c->per_call[K_COPY], c->per_call[K_HWAIT],
               c->mean_bytes / (double)s->bytes, c->per_call[K_MAXB] / (double)s->bytes);
    else if (on_device)
        printf(" | %7s %7s %7s %7s %7s", "-", "-", "-", "-", "-");
    printf("\n");
    fflush(stdout);
}

/* --comms N: the cost of a communicator's life, N times MPI_Comm_dup_with_info, one
 * 8-byte allreduce on it (exact value checked; with --nonblocking an MPI_Iallreduce,
 * which sets strata up in steps, never handed back as a lazy call), MPI_Comm_free; with
 * strata and on the strata=off side, alternating, then both times per cycle and their
 * ratio. One cycle per side first, timed on its own and left out of the mean: the first
 * communicator of a set of ranks creates the node's shared memory (several ms at the
 * default segment size), which every later one takes up again. The strata=off side still
 * agrees on the opt-out at its first call; plain Open MPI is the same command run with
 * --mca coll ^strata. With --split each cycle (both sides) also splits MPI_COMM_WORLD in
 * one part and frees it: Open MPI's own blocking allgather on MPI_COMM_WORLD, besides the
 * id allreduces (nonblocking inside) that a dup makes. */
static double one_cycle(int strata_on, MPI_Info off, long *wrong)
{
    MPI_Comm c;
    long v = rank + 1, sum = 0;
    MPI_Request rq;
    double t0 = MPI_Wtime();
    if (split_too) {
        MPI_Comm part;
        MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &part);
        MPI_Comm_free(&part);
    }
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, strata_on ? MPI_INFO_NULL : off, &c);
    ONE(Allreduce, allreduce, &v, &sum, 1, MPI_LONG, MPI_SUM, c);
    *wrong += sum != (long)nranks * (nranks + 1) / 2;
    MPI_Comm_free(&c);
    return MPI_Wtime() - t0;
}

static int comm_cycles(int n, MPI_Comm ctl)
{
    MPI_Info off;
    double t[2] = { 0, 0 }, first[2], most;
    double gpu[3] = { 0, 0, 0 };   /* the strata side's launches, copies, host waits (fake driver) */
    long wrong = 0;
    MPI_Info_create(&off);
    MPI_Info_set(off, "strata", "off");
    for (int which = 0; which < 2; which++) {
        MPI_Barrier(ctl);
        double dt = one_cycle(!which, off, &wrong);
        MPI_Allreduce(&dt, &first[which], 1, MPI_DOUBLE, MPI_MAX, ctl);
    }
    for (int round = 0; round < 4; round++) {
        for (int side = 0; side < 2; side++) {
            int which = (round + side) % 2;   /* 0 strata, 1 base; alternate who goes first */
            MPI_Barrier(ctl);
            struct fakecuda_counters c0 = counters_now();
            double t0 = MPI_Wtime();
            for (int i = 0; i < n / 4; i++) one_cycle(!which, off, &wrong);
            double dt = MPI_Wtime() - t0;
            struct fakecuda_counters c1 = counters_now();
            if (which == 0) {
                gpu[0] += (double)(c1.launches - c0.launches);
                gpu[1] += (double)(c1.copies - c0.copies);
                gpu[2] += (double)(c1.host_waits - c0.host_waits);
            }
            MPI_Allreduce(&dt, &most, 1, MPI_DOUBLE, MPI_MAX, ctl);
            t[which] += most;
        }
    }
    MPI_Info_free(&off);
    long all_wrong = 0;
    double gpu_most[3];
    int have = fake_counters != NULL, all_have = 0;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, ctl);
    MPI_Allreduce(gpu, gpu_most, 3, MPI_DOUBLE, MPI_MAX, ctl);
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, ctl);
    if (rank == 0) {
        int done = n / 4 * 4;
        printf("# communicator cycles (dup, one 8-byte %sallreduce, free), %d ranks, %d cycles each after a first\n",
               nonblocking ? "nonblocking " : "", nranks, done);
        printf("# %14s %14s %8s %8s %16s %16s\n", "strata us/cyc", "base us/cyc", "ratio", "#wrong",
               "strata 1st (us)", "base 1st (us)");
        printf("  %14.1f %14.1f %8.2f %8ld %16.1f %16.1f\n", t[0] / done * 1e6, t[1] / done * 1e6,
               t[0] > 0 ? t[1] / t[0] : 0, all_wrong, first[0] * 1e6, first[1] * 1e6);
        printf("# ratio = base / strata (> 1: strata faster); base: communicators opted out (info strata=off)\n");
        if (on_device && all_have && done > 0)
            printf("# strata per cycle (the most of any rank): %.2f launches, %.2f copies, %.2f host waits\n",
                   gpu_most[0] / done, gpu_most[1] / done, gpu_most[2] / done);
    }
    return all_wrong ? 1 : 0;
}

static void usage(void)
{
    printf("usage: strata_bench [-c COLL] [-b MIN] [-e MAX] [-f FACTOR] [-t TYPE] [-o OP]\n"
           "                    [-w WARMUP] [-n ITERS] [--single] [--no-check] [--device] [--nonblocking]\n"
           "  -c  allreduce (default), allgather, reduce_scatter, reduce_scatter_block, bcast, alltoall, alltoallv (alltoall's\n"
           "      blocks through MPI_Alltoallv), reduce\n"
           "  -b/-e  smallest/largest size in bytes (K/M/G suffixes; default 8 and 8M), -f factor (default 2)\n"
           "  -t  int8 uint8 int32 uint32 int64 uint64 float (default) double;  -o sum (default) prod max min\n"
           "  --comms N  time N x (MPI_Comm_dup, one small allreduce, MPI_Comm_free) with and without strata\n"
           "             (with --device: on communicators whose ranks all have a GPU; --split: each cycle\n"
           "             also splits MPI_COMM_WORLD and frees the part)\n"
           "  --single   one communicator only (strata columns); for two-run comparisons (perf/compare)\n"
           "  --nonblocking  each call as MPI_I<coll> waited for at once (MPI_Wait)\n"
           "  --host-buffers  with --device: the ranks have GPUs, the buffers are host memory\n"
           "  --device   GPU buffers (CUDA driver needed; exit 77 without one); the baseline is then\n"
           "             host staging: device -> pinned host, the collective without strata, host -> device\n"
           "  --version  strata's version and the commit this was built from (needs no job)\n");
}

int main(int argc, char **argv)
{
    if (bench_print_version(argc, argv, "strata-bench")) return 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int bad = 0, comms = 0;
    const bench_opts_t opts = { &min_bytes, &max_bytes, &factor, &warmup, &iters, &check };
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        int found = 0;
        if (!strcmp(s, "-c") && v) {
            for (size_t k = 0; k < sizeof coll_names / sizeof coll_names[0]; k++)
                if (!strcmp(v, coll_names[k].name)) { coll = coll_names[k].id; found = 1; }
            if (!strcmp(v, "alltoallv")) { coll = C_ALLTOALL; vcounts = found = 1; }
            bad |= !found; a++;
        } else if (bench_common_option(s, v, &a, &opts, &bad)) {
            /* -t -o -b -e -f -w -n --no-check --device: taken */
        }
        else if (!strcmp(s, "--single") || !strcmp(s, "--no-strata-comm")) single = 1;
        else if (!strcmp(s, "--comms") && v) { comms = atoi(v); a++; }
        else if (!strcmp(s, "--nonblocking")) nonblocking = 1;
        else if (!strcmp(s, "--split")) split_too = 1;
        else if (!strcmp(s, "--host-buffers")) host_buffers = 1;
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) { if (rank == 0) usage(); MPI_Finalize(); return 0; }
        else bad = 1;
    }
    if (bad || factor <= 1 || iters < 1 || min_bytes < 1 || max_bytes < min_bytes) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    /* ctl: barriers and result reductions, never timed. strata: the measured
     * communicator. base: the same ranks with strata switched off by info key. */
    MPI_Comm ctl, cs, cb = MPI_COMM_NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "strata", "off");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &ctl);
    MPI_Comm_dup(MPI_COMM_WORLD, &cs);
    if (!single) MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &cb);
    MPI_Info_free(&info);
    if (comms > 0) {
        /* --device: every rank has a GPU first, so the communicators made are GPU teams
         * (their calls still on host buffers, staged through the GPU), MPI_COMM_WORLD
         * too: set up for host memory at MPI_Init, it takes the GPU path at one blocking
         * call on device buffers above coll_strata_small_msg_size, and the duplicates' communicator-id allreduces are then Open MPI's own
         * calls on a GPU team. */
        int sharing, st = on_device ? device_init(ctl, &sharing) : 0;
        if (on_device && st == 0) {
            const int n = 1 << 16;   /* 256 KiB of floats */
            float *d = devbuf_alloc(sizeof(float) * n);
            st = d == NULL || MPI_SUCCESS != MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (d) devbuf_free(d);
            find_counters();
        }
        if (st == 0) st = comm_cycles(comms, ctl);
        MPI_Comm_free(&cs);
        if (cb != MPI_COMM_NULL) MPI_Comm_free(&cb);
        MPI_Comm_free(&ctl);
        MPI_Finalize();
        return st;
    }
    rcounts = malloc(sizeof(int) * nranks);
    displs = malloc(sizeof(int) * nranks);

    int status = 0, sharing = 1;
    double roof = 0;
    size_t used_at_start = 0;
    if (on_device) status = device_init(ctl, &sharing);
    if (on_device && status == 0) find_counters();
    if (status == 0) {
        size_t largest = 0;     /* the largest buffer of the sweep (host: 1 to 64 MiB, past the caches) */
        for (double b = (double)min_bytes; b <= (double)max_bytes * 1.0000001; b *= factor)
            if (shape_of((size_t)b).count) largest = shape_of((size_t)b).bytes;
        if (!on_device) largest = largest < ((size_t)1 << 20) ? (size_t)1 << 20 : largest > ((size_t)64 << 20) ? (size_t)64 << 20 : largest;
        roof = largest ? roofline(largest, ctl) : 0;
        MPI_Barrier(ctl);
        if (on_device) used_at_start = devbuf_used_bytes();
    }
    if (status == 0) print_header(ctl, roof, sharing, used_at_start);

    long total_wrong = 0;
    int reduction = coll != C_BCAST && coll != C_ALLGATHER && coll != C_ALLTOALL;
    for (double b = (double)min_bytes; status == 0 && b <= (double)max_bytes * 1.0000001; b *= factor) {
        shape_t s = shape_of((size_t)b);
        if (s.count == 0) continue;
        for (int r = 0; r < nranks; r++) { rcounts[r] = (int)s.count; displs[r] = r * (int)s.count; }
        size_t es = (size_t)types[type].size;
        void *sb = bench_alloc(s.send_elems * es), *rb = bench_alloc(s.recv_elems * es);
        side_t ds = { cs, NULL, NULL }, db = { cb, NULL, NULL };
        if (on_device && !single) {
            db.hs = bench_alloc_pinned(s.send_elems * es);
            db.hr = bench_alloc_pinned(s.recv_elems * es);
        }
        int ok = sb && rb && (!on_device || single || (db.hs && db.hr)), all_ok;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctl);
        if (all_ok) {
            /* alternate which side goes first so drift in machine load hits both */
            static int flip;
            result_t rs, rbase = { 0, 0 };
            if (!single && (flip ^= 1)) { rbase = measure(&s, &db, sb, rb, ctl); rs = measure(&s, &ds, sb, rb, ctl); }
            else { rs = measure(&s, &ds, sb, rb, ctl); if (!single) rbase = measure(&s, &db, sb, rb, ctl); }
            total_wrong += rs.wrong + rbase.wrong;
            if (rank == 0) print_row(&s, rs, rbase, reduction, roof);
        } else {
            if (rank == 0) printf("# %zu bytes: buffer allocation failed on a rank; stopping\n", s.bytes);
            status = 1;
        }
        bench_free(sb); bench_free(rb);
        if (on_device) { bench_free_pinned(db.hs); bench_free_pinned(db.hr); }
    }
    if (status != 77 && rank == 0)
        printf("# out of bounds values: %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    if (on_device && status != 77) {
        long counts[2] = { copy_failures, live_bufs }, all[2];
        MPI_Allreduce(counts, all, 2, MPI_LONG, MPI_SUM, ctl);
        if (rank == 0 && all[0]) printf("# device copies that failed: %ld FAILED\n", all[0]);
        if (rank == 0 && all[1]) printf("# buffers strata_bench did not free: %ld FAILED\n", all[1]);
        if (all[0] || all[1]) status = 1;
        MPI_Barrier(ctl);
        if (rank == 0) printf("# device memory in use at end: %zu bytes\n", devbuf_used_bytes());
    }
    free(rcounts);
    free(displs);
    MPI_Comm_free(&cs);
    if (cb != MPI_COMM_NULL) MPI_Comm_free(&cb);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return status ? status : total_wrong ? 1 : 0;
}
