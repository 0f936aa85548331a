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
 * When the info key cannot be honoured, run the job twice instead (perf/compare
 * does this): --single prints the strata columns only, once with the component
 * and once with `--mca coll ^strata`, and perf/compare merges the two tables.
 *
 *   strata_bench [-c COLL] [-b MIN] [-e MAX] [-f FACTOR] [-t TYPE] [-o OP]
 *                [-w WARMUP] [-n ITERS] [--single] [--no-check] [--device]
 * Sizes take K/M/G suffixes (bytes). Time = max over ranks of the mean per call.
 * busbw factors: allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n;
 * bcast and reduce 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { C_ALLREDUCE, C_ALLGATHER, C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK, C_BCAST,
               C_ALLTOALL, C_REDUCE } coll_t;
static const struct { const char *name; coll_t id; } coll_names[] = {
    { "allreduce", C_ALLREDUCE }, { "allgather", C_ALLGATHER },
    { "reduce_scatter", C_REDUCE_SCATTER }, { "reduce_scatter_block", C_REDUCE_SCATTER_BLOCK },
    { "bcast", C_BCAST }, { "alltoall", C_ALLTOALL }, { "reduce", C_REDUCE },
};

typedef enum { T_INT8, T_UINT8, T_INT32, T_UINT32, T_INT64, T_UINT64, T_FLOAT, T_DOUBLE } type_t;
static const struct { const char *name; MPI_Datatype dt; int size; } types[] = {
    { "int8", MPI_INT8_T, 1 }, { "uint8", MPI_UINT8_T, 1 }, { "int32", MPI_INT32_T, 4 },
    { "uint32", MPI_UINT32_T, 4 }, { "int64", MPI_INT64_T, 8 }, { "uint64", MPI_UINT64_T, 8 },
    { "float", MPI_FLOAT, 4 }, { "double", MPI_DOUBLE, 8 },
};
static const struct { const char *name; MPI_Op op; } ops[] = {
    { "sum", MPI_SUM }, { "prod", MPI_PROD }, { "max", MPI_MAX }, { "min", MPI_MIN },
};

static int rank, nranks;
static coll_t coll = C_ALLREDUCE;
static int type = T_FLOAT, opi = 0;
static int warmup = 5, iters = 20, check = 1, single = 0, on_device = 0;
static size_t min_bytes = 8, max_bytes = 8u << 20;
static double factor = 2;

/* ------------------------------------------------------------ memory hook
 * Host buffers today. The CUDA path (cudaMalloc + cudaMemcpy for fill/check)
 * belongs here and only here: bench_alloc/bench_free/bench_to_dev/bench_to_host. */
static void *bench_alloc(size_t bytes)
{
    if (on_device) return NULL;    /* not built: see --device in usage() */
    return malloc(bytes ? bytes : 1);
}
static void bench_free(void *p) { free(p); }
static void bench_to_dev(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
static void bench_to_host(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

/* ---------------------------------------------------------------- values
 * Small integers, so every reduction order is exact and #wrong is meaningful. */
static double in_val(int r, size_t i)
{
    switch (ops[opi].op == MPI_PROD ? 1 : ops[opi].op == MPI_SUM ? 0 : 2) {
    case 0: return (double)((r + i) % 8);
    case 1: return ((r + i) % 16 == 0 && r < 6) ? 2.0 : 1.0;
    default: return (double)((r * 7 + i * 3) % 100);
    }
}
static double reduced(size_t i)
{
    double a = in_val(0, i);
    for (int r = 1; r < nranks; r++) {
        double b = in_val(r, i);
        if (ops[opi].op == MPI_SUM) a += b;
        else if (ops[opi].op == MPI_PROD) a *= b;
        else if (ops[opi].op == MPI_MAX) a = b > a ? b : a;
        else a = b < a ? b : a;
    }
    return a;
}
static void put(void *buf, size_t i, double v)
{
    char *p = (char *)buf + i * types[type].size;
    switch (type) {
    case T_INT8: case T_UINT8: *(int8_t *)p = (int8_t)v; break;
    case T_INT32: case T_UINT32: *(int32_t *)p = (int32_t)v; break;
    case T_INT64: case T_UINT64: *(int64_t *)p = (int64_t)v; break;
    case T_FLOAT: *(float *)p = (float)v; break;
    default: *(double *)p = v; break;
    }
}
static double get(const void *buf, size_t i)
{
    const char *p = (const char *)buf + i * types[type].size;
    switch (type) {
    case T_INT8: return *(const int8_t *)p;
    case T_UINT8: return *(const uint8_t *)p;
    case T_INT32: return *(const int32_t *)p;
    case T_UINT32: return *(const uint32_t *)p;
    case T_INT64: return (double)*(const int64_t *)p;
    case T_UINT64: return (double)*(const uint64_t *)p;
    case T_FLOAT: return *(const float *)p;
    default: return *(const double *)p;
    }
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

static int *rcounts;   /* reduce_scatter: all equal */

static void run_once(const shape_t *s, void *sb, void *rb, MPI_Comm comm)
{
    MPI_Datatype dt = types[type].dt;
    int c = (int)s->count;
    switch (coll) {
    case C_ALLREDUCE: MPI_Allreduce(sb, rb, c, dt, ops[opi].op, comm); break;
    case C_REDUCE: MPI_Reduce(sb, rb, c, dt, ops[opi].op, 0, comm); break;
    case C_BCAST: MPI_Bcast(sb, c, dt, 0, comm); break;
    case C_ALLGATHER: MPI_Allgather(sb, c, dt, rb, c, dt, comm); break;
    case C_REDUCE_SCATTER: MPI_Reduce_scatter(sb, rb, rcounts, dt, ops[opi].op, comm); break;
    case C_REDUCE_SCATTER_BLOCK: MPI_Reduce_scatter_block(sb, rb, c, dt, ops[opi].op, comm); break;
    case C_ALLTOALL: MPI_Alltoall(sb, c, dt, rb, c, dt, comm); break;
    }
}

/* Fill inputs, run once, count wrong elements on this rank. */
static long check_once(const shape_t *s, void *sb, void *rb, MPI_Comm comm)
{
    size_t es = (size_t)types[type].size, nsend = s->send_elems, nrecv = s->recv_elems;
    char *hs = malloc(nsend * es + 1), *hr = malloc(nrecv * es + 1);
    long wrong = 0;
    for (size_t i = 0; i < nsend; i++) {
        if (coll == C_BCAST) put(hs, i, rank == 0 ? in_val(0, i) : 0);
        else if (coll == C_ALLTOALL) put(hs, i, in_val(rank, i));    /* block j -> peer j */
        else put(hs, i, in_val(rank, i));
    }
    bench_to_dev(sb, hs, nsend * es);
    if (coll != C_BCAST) memset(hr, 0, nrecv * es), bench_to_dev(rb, hr, nrecv * es);
    run_once(s, sb, rb, comm);
    bench_to_host(hr, coll == C_BCAST ? sb : rb, nrecv * es);
    for (size_t i = 0; i < nrecv; i++) {
        double e;
        switch (coll) {
        case C_ALLREDUCE: e = reduced(i); break;
        case C_REDUCE: if (rank != 0) continue; e = reduced(i); break;
        case C_BCAST: e = in_val(0, i); break;
        case C_ALLGATHER: e = in_val((int)(i / s->count), i % s->count); break;
        case C_REDUCE_SCATTER: case C_REDUCE_SCATTER_BLOCK: e = reduced(rank * s->count + i); break;
        default: /* alltoall: block j came from rank j, its indices rank*count.. */
            e = in_val((int)(i / s->count), rank * s->count + i % s->count); break;
        }
        if (get(hr, i) != e) wrong++;
    }
    free(hs); free(hr);
    return wrong;
}

typedef struct { double us; long wrong; } result_t;

static result_t measure(const shape_t *s, void *sb, void *rb, MPI_Comm comm, MPI_Comm ctl)
{
    result_t r = { 0, 0 };
    long w = check ? check_once(s, sb, rb, comm) : 0;
    for (int k = 0; k < warmup; k++) run_once(s, sb, rb, comm);
    MPI_Barrier(ctl);
    double t0 = MPI_Wtime();
    for (int k = 0; k < iters; k++) run_once(s, sb, rb, comm);
    double mean = (MPI_Wtime() - t0) / iters * 1e6;
    /* reductions of the results run on the control communicator (never strata) */
    MPI_Allreduce(&mean, &r.us, 1, MPI_DOUBLE, MPI_MAX, ctl);
    MPI_Allreduce(&w, &r.wrong, 1, MPI_LONG, MPI_SUM, ctl);
    return r;
}

static size_t parse_size(const char *s)
{
    char *end; double v = strtod(s, &end);
    switch (*end) { case 'k': case 'K': v *= 1024; break; case 'm': case 'M': v *= 1048576; break;
                    case 'g': case 'G': v *= 1073741824.0; break; default: break; }
    return (size_t)v;
}

static void usage(void)
{
    printf("usage: strata_bench [-c COLL] [-b MIN] [-e MAX] [-f FACTOR] [-t TYPE] [-o OP]\n"
           "                    [-w WARMUP] [-n ITERS] [--single] [--no-check] [--device]\n"
           "  -c  allreduce (default), allgather, reduce_scatter, reduce_scatter_block, bcast, alltoall, reduce\n"
           "  -b/-e  smallest/largest size in bytes (K/M/G suffixes; default 8 and 8M), -f factor (default 2)\n"
           "  -t  int8 uint8 int32 uint32 int64 uint64 float (default) double;  -o sum (default) prod max min\n"
           "  --single   one communicator only (strata columns); for two-run comparisons (perf/compare)\n"
           "  --device   device buffers: not built yet (the CUDA hook is bench_alloc() in strata_bench.c)\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int bad = 0;
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        int found = 0;
        if (!strcmp(s, "-c") && v) {
            for (size_t k = 0; k < sizeof coll_names / sizeof coll_names[0]; k++)
                if (!strcmp(v, coll_names[k].name)) { coll = coll_names[k].id; found = 1; }
            bad |= !found; a++;
        } else if (!strcmp(s, "-t") && v) {
            for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
                if (!strcmp(v, types[k].name)) { type = (int)k; found = 1; }
            bad |= !found; a++;
        } else if (!strcmp(s, "-o") && v) {
            for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
                if (!strcmp(v, ops[k].name)) { opi = (int)k; found = 1; }
            bad |= !found; a++;
        } else if (!strcmp(s, "-b") && v) { min_bytes = parse_size(v); a++; }
        else if (!strcmp(s, "-e") && v) { max_bytes = parse_size(v); a++; }
        else if (!strcmp(s, "-f") && v) { factor = atof(v); a++; }
        else if (!strcmp(s, "-w") && v) { warmup = atoi(v); a++; }
        else if (!strcmp(s, "-n") && v) { iters = atoi(v); a++; }
        else if (!strcmp(s, "--single") || !strcmp(s, "--no-strata-comm")) single = 1;
        else if (!strcmp(s, "--no-check")) check = 0;
        else if (!strcmp(s, "--device")) on_device = 1;
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) { if (rank == 0) usage(); MPI_Finalize(); return 0; }
        else bad = 1;
    }
    if (bad || factor <= 1 || iters < 1 || min_bytes < 1 || max_bytes < min_bytes) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    if (on_device) {
        if (rank == 0) fprintf(stderr, "strata_bench: --device is not built yet (CUDA path lands with the device issue)\n");
        MPI_Finalize();
        return 77;
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
    rcounts = malloc(sizeof(int) * nranks);

    char host[MPI_MAX_PROCESSOR_NAME]; int hl;
    MPI_Get_processor_name(host, &hl);
    char *hosts = rank == 0 ? malloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, ctl);
    if (rank == 0) {
        int nhosts = 0;
        for (int r = 0; r < nranks; r++) {
            int seen = 0;
            for (int q = 0; q < r; q++) seen |= !strcmp(hosts + q * MPI_MAX_PROCESSOR_NAME, hosts + r * MPI_MAX_PROCESSOR_NAME);
            nhosts += !seen;
        }
        const char *cn = "?";
        for (size_t k = 0; k < sizeof coll_names / sizeof coll_names[0]; k++) if (coll_names[k].id == coll) cn = coll_names[k].name;
        printf("# strata_bench: %s, %d ranks on %d host(s), %s buffers, warmup %d, iters %d\n",
               cn, nranks, nhosts, on_device ? "device" : "host", warmup, iters);
        printf("# strata: MPI_COMM_WORLD dup; base: %s\n", single ? "(not in this run: --single)"
               : "MPI_Comm_dup_with_info(strata=off) in the same job");
        printf("# time = max over ranks of the mean per call; ratio = base time / strata time\n#\n");
        if (single)
            printf("# %10s %11s %7s %5s %11s %11s %11s %7s\n", "size(B)", "count", "type", "op",
                   "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
        else
            printf("# %10s %11s %7s %5s | %-42s | %-42s | %6s\n# %10s %11s %7s %5s | %9s %10s %10s %8s | %9s %10s %10s %8s | %6s\n",
                   "", "", "", "", "strata", "base (without strata)", "",
                   "size(B)", "count", "type", "op", "time(us)", "algbw", "busbw", "#wrong",
                   "time(us)", "algbw", "busbw", "#wrong", "ratio");
        fflush(stdout);
        free(hosts);
    }

    long total_wrong = 0;
    int reduction = coll != C_BCAST && coll != C_ALLGATHER && coll != C_ALLTOALL;
    for (double b = (double)min_bytes; b <= (double)max_bytes * 1.0000001; b *= factor) {
        shape_t s = shape_of((size_t)b);
        if (s.count == 0) continue;
        for (int r = 0; r < nranks; r++) rcounts[r] = (int)s.count;
        size_t es = (size_t)types[type].size;
        void *sb = bench_alloc(s.send_elems * es), *rb = bench_alloc(s.recv_elems * es);
        /* alternate which side goes first so drift in machine load hits both */
        static int flip;
        result_t rs, rbase = { 0, 0 };
        if (!single && (flip ^= 1)) { rbase = measure(&s, sb, rb, cb, ctl); rs = measure(&s, sb, rb, cs, ctl); }
        else { rs = measure(&s, sb, rb, cs, ctl); if (!single) rbase = measure(&s, sb, rb, cb, ctl); }
        total_wrong += rs.wrong + rbase.wrong;
        if (rank == 0) {
            double gb = (double)s.bytes / 1e9;
            double a1 = gb / (rs.us / 1e6), a2 = single ? 0 : gb / (rbase.us / 1e6);
            if (single)
                printf("  %10zu %11zu %7s %5s %11.2f %11.3f %11.3f %7ld\n", s.bytes, s.bytes / es,
                       types[type].name, reduction ? ops[opi].name : "none", rs.us, a1, a1 * s.bus, rs.wrong);
            else
                printf("  %10zu %11zu %7s %5s | %9.2f %10.3f %10.3f %8ld | %9.2f %10.3f %10.3f %8ld | %6.2f\n",
                       s.bytes, s.bytes / es, types[type].name, reduction ? ops[opi].name : "none",
                       rs.us, a1, a1 * s.bus, rs.wrong, rbase.us, a2, a2 * s.bus, rbase.wrong,
                       rbase.us / rs.us);
            fflush(stdout);
        }
        bench_free(sb); bench_free(rb);
    }
    if (rank == 0) printf("# out of bounds values: %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    free(rcounts);
    MPI_Comm_free(&cs);
    if (cb != MPI_COMM_NULL) MPI_Comm_free(&cb);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
