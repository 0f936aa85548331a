/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf/bench_common.h - what perf/strata_bench.c and perf/strata_overlap.c share: the
 * element types and ops they take, the buffers (host, or GPU memory through
 * test/common/devbuf with --device), and the values they fill and check, small
 * integers so that every reduction order gives the same exact answer.
 *
 * Included once by each program, after <mpi.h>; the program sets the globals below
 * from its options.
 */
#ifndef STRATA_PERF_BENCH_COMMON_H
#define STRATA_PERF_BENCH_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test/common/devbuf.h"
/* STRATA_GIT_COMMIT (made by make, Makefile.am); STRATA_VERSION_STRING from the command line. */
#include "strata_commit.h"

/* --version anywhere on the command line: prints "NAME (strata) VERSION, commit C" and
 * returns 1. Called before MPI_Init, so it needs no job (and no mpirun). */
static int bench_print_version(int argc, char **argv, const char *name)
{
    for (int a = 1; a < argc; a++)
        if (!strcmp(argv[a], "--version")) {
            printf("%s (strata) %s, commit %s\n", name, STRATA_VERSION_STRING, STRATA_GIT_COMMIT);
            return 1;
        }
    return 0;
}

typedef enum { T_INT8, T_UINT8, T_INT32, T_UINT32, T_INT64, T_UINT64, T_FLOAT, T_DOUBLE } type_t;
static const struct { const char *name; MPI_Datatype dt; int size; } types[] = {
    { "int8", MPI_INT8_T, 1 }, { "uint8", MPI_UINT8_T, 1 }, { "int32", MPI_INT32_T, 4 },
    { "uint32", MPI_UINT32_T, 4 }, { "int64", MPI_INT64_T, 8 }, { "uint64", MPI_UINT64_T, 8 },
    { "float", MPI_FLOAT, 4 }, { "double", MPI_DOUBLE, 8 },
};
static const struct { const char *name; MPI_Op op; } ops[] = {
    { "sum", MPI_SUM }, { "prod", MPI_PROD }, { "max", MPI_MAX }, { "min", MPI_MIN },
};

/* The collectives of the benchmarks (strata_overlap has no reduce_scatter). */
typedef enum { C_ALLREDUCE, C_ALLGATHER, C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK, C_BCAST,
               C_ALLTOALL, C_REDUCE } coll_t;
static coll_t coll = C_ALLREDUCE;

static int rank, nranks;
static int type = T_FLOAT, opi = 0;
static int on_device = 0;
/* --host-buffers (with --device): every rank has a GPU (its communicators run in GPU
 * memory) but the buffers the collectives see are host memory. */
static int host_buffers = 0;

/* ------------------------------------------------------------ memory hook
 * Host buffers, or with --device GPU memory from devbuf. Fill and check always go
 * through host scratch and these copies, so no host code touches device memory.
 * A failed copy is counted (devbuf says why on stderr) and fails the run. */
static long live_bufs;        /* device and pinned buffers not yet freed */
static long copy_failures;

static void *bench_alloc(size_t bytes)
{
    if (!on_device || host_buffers) return malloc(bytes ? bytes : 1);
    void *p = devbuf_alloc(bytes);
    live_bufs += NULL != p;
    return p;
}
static void bench_free(void *p)
{
    if (!on_device || host_buffers) { free(p); return; }
    if (p) { devbuf_free(p); live_bufs--; }
}
static void bench_to_dev(void *dst, const void *src, size_t n)
{
    if (!on_device || host_buffers) memcpy(dst, src, n);
    else copy_failures += 0 != devbuf_to_dev(dst, src, n);
}
static void bench_to_host(void *dst, const void *src, size_t n)
{
    if (!on_device || host_buffers) memcpy(dst, src, n);
    else copy_failures += 0 != devbuf_to_host(dst, src, n);
}

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

/* What element i of this rank's result must be after the checked call (count: the
 * elements per rank's block); NAN where the rank gets no result (reduce off the root). */
static double expected(size_t i, size_t count)
{
    switch (coll) {
    case C_ALLREDUCE: return reduced(i);
    case C_REDUCE: return rank == 0 ? reduced(i) : NAN;
    case C_BCAST: return in_val(0, i);
    case C_ALLGATHER: return in_val((int)(i / count), i % count);
    case C_REDUCE_SCATTER: case C_REDUCE_SCATTER_BLOCK: return reduced(rank * count + i);
    default: /* alltoall: block j came from rank j, its indices rank*count.. */
        return in_val((int)(i / count), rank * count + i % count);
    }
}

/* One checked call: fills this rank's input (sb, nsend elements), runs the call
 * (run(ctx)), and counts the wrong elements of this rank's result (nrecv elements,
 * in blocks of count). */
static long check_call(size_t nsend, size_t nrecv, size_t count, void *sb, void *rb, void (*run)(void *), void *ctx)
{
    size_t es = (size_t)types[type].size;
    char *hs = malloc(nsend * es + 1), *hr = malloc(nrecv * es + 1);
    long wrong = 0;
    for (size_t i = 0; i < nsend; i++) put(hs, i, coll == C_BCAST && rank != 0 ? 0 : in_val(rank, i));
    bench_to_dev(sb, hs, nsend * es);
    if (coll != C_BCAST) memset(hr, 0, nrecv * es), bench_to_dev(rb, hr, nrecv * es);
    run(ctx);
    bench_to_host(hr, coll == C_BCAST ? sb : rb, nrecv * es);
    for (size_t i = 0; i < nrecv; i++) {
        const double e = expected(i, count);
        if (!isnan(e) && get(hr, i) != e) wrong++;
    }
    free(hs); free(hr);
    return wrong;
}

/* A size with an optional K, M or G (powers of 1024); 0 when it is not one. */
static size_t parse_size(const char *s)
{
    char *end; double v = strtod(s, &end);
    switch (*end) { case 'k': case 'K': v *= 1024; break; case 'm': case 'M': v *= 1048576; break;
                    case 'g': case 'G': v *= 1073741824.0; break; default: break; }
    return v > 0 ? (size_t)v : 0;
}

/* Where the options both benchmarks take land (their defaults differ). */
typedef struct {
    size_t *min_bytes, *max_bytes;
    double *factor;
    int *warmup, *iters, *check;
} bench_opts_t;

/* The options both benchmarks take: -t TYPE, -o OP, -b/-e SIZE, -f FACTOR, -w N, -n N,
 * --no-check (and --device: on_device). s is argv[*a], v the next argument or NULL;
 * *a is moved past a value taken. Returns 0 when s is none of them; *bad is set for an
 * unknown type or op. */
static int bench_common_option(const char *s, const char *v, int *a, const bench_opts_t *o, int *bad)
{
    int found = 0;
    if (!strcmp(s, "--no-check")) { *o->check = 0; return 1; }
    if (!strcmp(s, "--device")) { on_device = 1; return 1; }
    if (v == NULL) return 0;
    if (!strcmp(s, "-t")) {
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
            if (!strcmp(v, types[k].name)) { type = (int)k; found = 1; }
        *bad |= !found;
    } else if (!strcmp(s, "-o")) {
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
            if (!strcmp(v, ops[k].name)) { opi = (int)k; found = 1; }
        *bad |= !found;
    } else if (!strcmp(s, "-b")) *o->min_bytes = parse_size(v);
    else if (!strcmp(s, "-e")) *o->max_bytes = parse_size(v);
    else if (!strcmp(s, "-f")) *o->factor = atof(v);
    else if (!strcmp(s, "-w")) *o->warmup = atoi(v);
    else if (!strcmp(s, "-n")) *o->iters = atoi(v);
    else return 0;
    ++*a;
    return 1;
}

#endif
