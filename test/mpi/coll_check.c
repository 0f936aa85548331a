/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_check - exact correctness check of MPI collectives, for any MPI.
 *
 * Every rank fills its inputs from a hash of (test, rank, index) with small
 * integers chosen per operation so that every reduction order gives the same
 * exact result (no overflow, no rounding), computes the expected result
 * locally, and compares the value bytes (never padding) of every element.
 * The first wrong element of each failing test is reported on stdout as a
 * "MISMATCH coll=... rank=... type=... op=... count=... inplace=... root=..."
 * line; rank 0 prints one summary line per collective and PASS or FAIL; the exit
 * status is 1 on any mismatch. Results are gathered with point-to-point only.
 *
 * It knows nothing about strata: run it with and without the component and it
 * must pass both ways. To prove that it can fail, STRATA_TEST_CORRUPT=1 flips
 * one byte of one element of one rank's result (rank size-1, or
 * STRATA_TEST_CORRUPT_RANK) in the first checked test of every collective.
 *
 * -M blocking|nonblocking|persistent|mixed (a comma list runs each in that order) says how
 * each test's call is made: MPI_<Coll> (the default), MPI_I<coll> with several calls
 * in flight completed in varied orders, persistent MPI_<Coll>_init requests started
 * several times with new inputs, or nonblocking calls left in flight while blocking
 * ones run on a duplicate communicator and on the same one (coll_check_modes.h).
 * Persistent collectives need MPI 4 names (Open MPI 5) or Open MPI's MPIX_ extension
 * (4.x); without either, -M persistent prints SKIP and exits 77. In persistent mode
 * the injected flip lands in the last start; STRATA_TEST_CORRUPT=stale instead keeps
 * the corrupt rank's inputs of the previous start (as an MPI that read persistent
 * inputs once would), which must fail too.
 *
 * -d device|mixed|mixed-odd puts the buffers each collective sees in GPU memory
 * (on every rank, on even ranks only, or on odd ranks only): the test fills and
 * checks host copies exactly as before and mirrors them to and from the GPU around
 * the call (test/common/devbuf.c; the CUDA driver is loaded at run time, and
 * test/fakecuda/libcuda.so.1 stands in for it on machines without a GPU). -L N
 * then also makes N allreduce/allgather/bcast calls on freshly allocated device
 * buffers and fails if device memory in use grew over them.
 *
 *   coll_check [-c COLLS] [-n MAXCOUNT] [-t TYPES] [-o OPS] [-m COMMS] [-M MODES] [-K N] [-R N] [-Z]
 *              [-s SEED] [-d KIND] [-L N] [-v] [-l]
 *
 * Adding a collective: write its fill, check and run_<coll>(), add it to colls[]
 * and its call to issue() in coll_check_modes.h.
 */
#include <mpi.h>
#include <complex.h>
#include <float.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#include "coll_check_values.h"
#include "devbuf.h"

/* ------------------------------------------------------ user-defined ops */

static MPI_Datatype vecd_type;
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt == MPI_INT) {
        int *a = in, *b = inout;
        for (int k = 0; k < *len; k++) b[k] += a[k];
    } else if (*dt == vecd_type) {   /* doubles at 0 and 2 of every 3 */
        double *a = in, *b = inout;
        for (int k = 0; k < *len; k++) { b[3 * k] += a[3 * k]; b[3 * k + 2] += a[3 * k + 2]; }
    } else {   /* the contiguous-of-struct type: 2 structs per element */
        s_id_t *a = in, *b = inout;
        for (int k = 0; k < 2 * *len; k++) { b[k].i += a[k].i; b[k].d += a[k].d; }
    }
}

/* Not commutative: inout = in * inout (MPI: in is the left operand). */
static void user_matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    uint32_t *p = in, *q = inout;
    for (int k = 0; k < *len; k++, p += 4, q += 4) {
        uint32_t r[4] = { p[0] * q[0] + p[1] * q[2], p[0] * q[1] + p[1] * q[3],
                          p[2] * q[0] + p[3] * q[2], p[2] * q[1] + p[3] * q[3] };
        memcpy(q, r, sizeof r);
    }
}

static MPI_Op mpi_ops[O_NOPS];

static void init_types_ops(void)
{
    for (int k = 0; k < NTYPES; k++) {
        tinfo *t = &types[k];
        if (t->kind == K_VECD) {
            MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &t->dt);    /* doubles at 0 and 16, extent 24 */
            vecd_type = t->dt;
        } else if (t->kind == K_STRUCT2) {
            int bl[2] = { 1, 1 };
            MPI_Aint disp[2] = { offsetof(s_id_t, i), offsetof(s_id_t, d) };
            MPI_Datatype tt[2] = { MPI_INT32_T, MPI_DOUBLE }, s, sr;
            MPI_Type_create_struct(2, bl, disp, tt, &s);
            MPI_Type_create_resized(s, 0, sizeof(s_id_t), &sr);
            MPI_Type_contiguous(2, sr, &t->dt);
            MPI_Type_free(&s); MPI_Type_free(&sr);
        } else if (t->kind == K_MAT) {
            MPI_Type_contiguous(4, MPI_UINT32_T, &t->dt);
        }
        if (t->kind >= K_VECD) MPI_Type_commit(&t->dt);
        MPI_Aint lb;
        MPI_Type_get_extent(t->dt, &lb, &t->extent);
    }
    MPI_Op pre[] = { MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR,
                     MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC };
    memcpy(mpi_ops, pre, sizeof pre);
    MPI_Op_create(user_sum, 1, &mpi_ops[O_USUM]);
    MPI_Op_create(user_matmul, 0, &mpi_ops[O_UMAT]);
}

/* ------------------------------------------------------- test harness */

typedef struct {
    const char *coll;
    const tinfo *t;
    int op;
    int count;
    int inplace;
    int root;        /* -1: none */
    const char *variant;
    const char *how;  /* the mode's label in reports (NULL: blocking) */
    int start;        /* persistent: which start of the request (-1: not persistent) */
} tdesc;

enum { CORRUPT_NONE, CORRUPT_FLIP, CORRUPT_STALE };
static int verbose, corrupt_rank = -1, corrupt_pending, corrupt_kind, corrupt_armed = 1;
static long n_tests, n_failed_here;
static int max_count = 4096;
static int a2av_inplace_zeros;   /* -Z */
static int queued_push;          /* -Q */
static unsigned type_mask_set; static int type_sel[64]; static unsigned op_sel = ~0u;
static const char *comm_name = "world";

static void *xalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "coll_check: out of memory (%zu bytes)\n", n); MPI_Abort(MPI_COMM_WORLD, 2); }
    return p;
}

#define POISON 0xA5

/* ------------------------------------------------------ buffer kinds (-d)
 * Each test fills and checks host buffers; around the MPI call, coll_buf() (in
 * coll_check_modes.h) gives the pointer the collective sees: the host buffer itself,
 * or (on ranks whose buffers are on the GPU) a device copy of it. */
enum { KIND_HOST, KIND_DEVICE, KIND_MIXED_EVEN, KIND_MIXED_ODD, KIND_MANAGED_ODD, KIND_COUNT };
static int buf_kind = KIND_HOST;
static const char *kind_names[] = { "host", "device", "mixed", "mixed-odd", "managed-odd" };

static int rank_on_device(int world_rank)
{
    return buf_kind == KIND_DEVICE || buf_kind == KIND_MANAGED_ODD ||
           (buf_kind == KIND_MIXED_EVEN && world_rank % 2 == 0) ||
           (buf_kind == KIND_MIXED_ODD && world_rank % 2 == 1);
}
static int my_world_rank;

static void fill(const tinfo *t, int op, uint64_t seed, int r, char *buf, int64_t first, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        val x = gen(t, op, seed, r, first + k);
        store(t, buf + k * t->extent, &x);
    }
}

static void hexdump(char *out, const tinfo *t, const char *p)
{
    int seg[4][2], ns = segments(t, seg);
    char *o = out;
    for (int s = 0; s < ns; s++) {
        if (s) *o++ = ':';
        for (int b = seg[s][1] - 1; b >= 0; b--)   /* little-endian: print high byte first */
            o += sprintf(o, "%02x", (unsigned char)p[seg[s][0] + b]);
    }
    *o = 0;
}

static void report(const tdesc *d, int64_t idx, const char *what, const char *got, const char *exp)
{
    char gs[128] = "", es[128] = "", start[32] = "";
    if (d->start >= 0) snprintf(start, sizeof start, " start=%d", d->start);
    if (got) hexdump(gs, d->t, got);
    if (exp) hexdump(es, d->t, exp);
    fprintf(stdout, "MISMATCH coll=%s comm=%s rank=%d/%d type=%s op=%s count=%d inplace=%d root=%d%s%s"
            "%s%s%s index=%lld %s got=0x%s expected=0x%s\n",
            d->coll, comm_name, g_rank, g_size, d->t->name, op_names[d->op], d->count, d->inplace,
            d->root, d->variant ? " variant=" : "", d->variant ? d->variant : "",
            d->how ? " mode=" : "", d->how ? d->how : "", start, (long long)idx, what, gs, es);
    fflush(stdout);
}

/* Compare n elements of got against expected values; idx0 is the index that is
 * reported for element 0. Returns 0 on match. Applies the injected fault. */
static int check_elems(const tdesc *d, char *got, const char *exp, int64_t n, int64_t idx0)
{
    const tinfo *t = d->t;
    if (corrupt_pending && corrupt_kind == CORRUPT_FLIP && corrupt_armed && g_rank == corrupt_rank && n > 0) {
        got[(n / 2) * t->extent] ^= 0x01;             /* byte 0 is a value byte in every type */
        corrupt_pending = 0;
        fprintf(stdout, "coll_check: STRATA_TEST_CORRUPT: flipped element %lld of %s on rank %d\n",
                (long long)(idx0 + n / 2), d->coll, g_rank);
        fflush(stdout);
    }
    int seg[4][2], ns = segments(t, seg);
    for (int64_t k = 0; k < n; k++) {
        const char *a = got + k * t->extent, *b = exp + k * t->extent;
        if (t->kind == K_CPLX) {
            /* The sign of a zero part of a complex product depends on the order of
             * evaluation (x*0 + -x*0), so parts compare as values; all else by bits. */
            int eq = 1;
            for (int part = 0; part < 2; part++) {
                if (t->size == sizeof(float)) { float x, y; memcpy(&x, a + 4 * part, 4); memcpy(&y, b + 4 * part, 4); eq &= x == y; }
                else { double x, y; memcpy(&x, a + 8 * part, 8); memcpy(&y, b + 8 * part, 8); eq &= x == y; }
            }
            if (!eq) { report(d, idx0 + k, "wrong", a, b); return 1; }
            continue;
        }
        for (int s = 0; s < ns; s++)
            if (memcmp(a + seg[s][0], b + seg[s][0], seg[s][1])) {
                report(d, idx0 + k, "wrong", a, b);
                return 1;
            }
    }
    return 0;
}

/* Elements that the collective must not write (gaps between displacements). */
static int check_untouched(const tdesc *d, const char *got, int64_t n, int64_t idx0)
{
    int seg[4][2], ns = segments(d->t, seg);
    for (int64_t k = 0; k < n; k++)
        for (int s = 0; s < ns; s++)
            for (int b = 0; b < seg[s][1]; b++)
                if ((unsigned char)got[k * d->t->extent + seg[s][0] + b] != POISON) {
                    report(d, idx0 + k, "gap-clobbered", got + k * d->t->extent, NULL);
                    return 1;
                }
    return 0;
}

static void done(const tdesc *d, int bad)
{
    n_tests++;
    if (bad) n_failed_here++;
    if (verbose > 1 && g_rank == 0)
        printf("  %s %s %s count=%d inplace=%d root=%d %s\n", d->coll, d->t->name, op_names[d->op],
               d->count, d->inplace, d->root, d->variant ? d->variant : "");
}

static uint64_t test_seed(const tdesc *d, int salt)
{
    uint64_t s = g_seed;
    for (const char *c = d->coll; *c; c++) s = mix(s ^ (unsigned char)*c);
    return mix(s ^ ((uint64_t)(d->t - types) << 48) ^ ((uint64_t)d->op << 40) ^
               ((uint64_t)d->count << 8) ^ (uint64_t)(d->inplace * 2 + 1) ^
               ((uint64_t)(d->root + 1) << 20) ^ ((uint64_t)salt << 56));
}

static int type_selected(int k, int for_copy)
{
    if (type_mask_set) return type_sel[k];
    return for_copy ? types[k].copy : 1;
}

/* Counts: 0 (the bindings return early, except reduce_scatter with uneven counts), 1, primes, and the maximum. */
static int counts[32], n_counts;
static void make_counts(void)
{
    static const int base[] = { 0, 1, 2, 7, 61, 1021, 16381, 262139, 1048573 };
    n_counts = 0;
    for (size_t k = 0; k < sizeof base / sizeof base[0]; k++)
        if (base[k] <= max_count) counts[n_counts++] = base[k];
    if (n_counts == 0 || counts[n_counts - 1] != max_count) counts[n_counts++] = max_count;
}

/* ----------------------------------------------------------- collectives
 * Per collective: fill() writes this rank's inputs (from in_seed()), poisons the
 * results and computes what it can expect (from seed); check() compares; run_<coll>()
 * walks the matrix, sets up each test's buffers and arguments and submits it. */

#include "coll_check_modes.h"

static void expect_reduction(test *x, int64_t first, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        val e = expect_reduced(x->d.t, x->d.op, x->seed, first + i);
        store(x->d.t, x->ex + i * x->d.t->extent, &e);
    }
}

static void allreduce_fill(test *x)
{
    const tinfo *t = x->d.t;
    memset(x->rb, POISON, x->n * t->extent);
    fill(t, x->d.op, in_seed(x), g_rank, x->d.inplace ? x->rb : x->sb, 0, x->n);
    expect_reduction(x, 0, x->n);
}
static int allreduce_check(test *x) { return check_elems(&x->d, x->rb, x->ex, x->n, 0); }

static void run_allreduce(void)
{
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 0)) continue;
        const tinfo *t = &types[k];
        for (int op = 0; op < O_NOPS; op++) {
            if (!(t->ops & B(op)) || !(op_sel & B(op))) continue;
            for (int c = 0; c < n_counts; c++)
                for (int ip = 0; ip < 2; ip++) {
                    tdesc d = { "allreduce", t, op, counts[c], ip, -1, NULL, NULL, -1 };
                    test *x = test_new(&d, C_ALLREDUCE, test_seed(&d, 0));
                    size_t b = (size_t)d.count * t->extent;
                    x->n = x->count = d.count;
                    x->sb = xalloc(b); x->rb = xalloc(b); x->ex = xalloc(b);
                    x->sbuf = ip ? MPI_IN_PLACE : coll_buf(x, x->sb, b, 0);
                    x->rbuf = coll_buf(x, x->rb, b, 1);
                    x->fill = allreduce_fill; x->check = allreduce_check;
                    submit(x);
                }
        }
    }
    flush();
}

/* In place only at the root; the other ranks send from sb. */
static void reduce_fill(test *x)
{
    const tinfo *t = x->d.t;
    int me_root = g_rank == x->root;
    memset(x->rb, POISON, x->n * t->extent);
    fill(t, x->d.op, in_seed(x), g_rank, x->d.inplace && me_root ? x->rb : x->sb, 0, x->n);
    if (me_root) expect_reduction(x, 0, x->n);
}
static int reduce_check(test *x)
{
    return g_rank == x->root ? check_elems(&x->d, x->rb, x->ex, x->n, 0) : 0;
}

static void run_reduce(void)
{
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 0)) continue;
        const tinfo *t = &types[k];
        for (int op = 0; op < O_NOPS; op++) {
            if (!(t->ops & B(op)) || !(op_sel & B(op))) continue;
            for (int c = 0; c < n_counts; c++)
                for (int root = 0; root < g_size; root++)
                    for (int ip = 0; ip < 2; ip++) {
                        tdesc d = { "reduce", t, op, counts[c], ip, root, NULL, NULL, -1 };
                        test *x = test_new(&d, C_REDUCE, test_seed(&d, 0));
                        size_t b = (size_t)d.count * t->extent;
                        int me_root = g_rank == root;
                        x->n = x->count = d.count;
                        x->sb = xalloc(b); x->rb = xalloc(b); x->ex = xalloc(b);
                        x->sbuf = ip && me_root ? MPI_IN_PLACE : coll_buf(x, x->sb, b, 0);
                        x->rbuf = me_root ? coll_buf(x, x->rb, b, 1) : NULL;
                        x->fill = reduce_fill; x->check = reduce_check;
                        submit(x);
                    }
        }
    }
    flush();
}

/* recvcounts patterns for reduce_scatter: uneven with zeros, one owner, even. */
static const char *rs_patterns[] = { "uneven_zeros", "one_rank", "even" };
static int rs_count(int pattern, int c, int r)
{
    switch (pattern) {
    case 0: return r % 3 == 1 ? 0 : c + r;
    case 1: return r == g_size - 1 ? c : 0;
    default: return c;
    }
}

/* In place, this rank's block comes back at the start of rb. */
static void reduce_scatter_fill(test *x)
{
    const tinfo *t = x->d.t;
    memset(x->rb, POISON, (x->d.inplace ? x->total : x->mine) * t->extent);
    fill(t, x->d.op, in_seed(x), g_rank, x->d.inplace ? x->rb : x->sb, 0, x->total);
    expect_reduction(x, x->first, x->mine);
}
static int reduce_scatter_check(test *x) { return check_elems(&x->d, x->rb, x->ex, x->mine, x->first); }

static void run_reduce_scatter_common(int block)
{
    int npat = block ? 1 : 3;
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 0)) continue;
        const tinfo *t = &types[k];
        for (int op = 0; op < O_NOPS; op++) {
            if (!(t->ops & B(op)) || !(op_sel & B(op))) continue;
            for (int c = 0; c < n_counts; c++)
                for (int pat = 0; pat < npat; pat++)
                    for (int ip = 0; ip < 2; ip++) {
                        int pattern = block ? 2 : pat;
                        tdesc d = { block ? "reduce_scatter_block" : "reduce_scatter", t, op,
                                    counts[c], ip, -1, block ? NULL : rs_patterns[pattern], NULL, -1 };
                        test *x = test_new(&d, block ? C_REDUCE_SCATTER_BLOCK : C_REDUCE_SCATTER,
                                           test_seed(&d, pattern));
                        x->rc = xalloc(sizeof(int) * g_size);
                        for (int r = 0; r < g_size; r++) {
                            x->rc[r] = rs_count(pattern, d.count, r);
                            if (r < g_rank) x->first += x->rc[r];
                            x->total += x->rc[r];
                        }
                        x->mine = x->rc[g_rank];
                        x->count = d.count;
                        size_t rbytes = (ip ? x->total : x->mine) * t->extent;
                        x->sb = xalloc(x->total * t->extent);
                        x->rb = xalloc(rbytes);
                        x->ex = xalloc(x->mine * t->extent);
                        x->sbuf = ip ? MPI_IN_PLACE : coll_buf(x, x->sb, x->total * t->extent, 0);
                        x->rbuf = coll_buf(x, x->rb, rbytes, 1);
                        x->fill = reduce_scatter_fill; x->check = reduce_scatter_check;
                        submit(x);
                    }
        }
    }
    flush();
}
static void run_reduce_scatter(void) { run_reduce_scatter_common(0); }
static void run_reduce_scatter_block(void) { run_reduce_scatter_common(1); }

/* Data movement: the value at (source rank, index) identifies both. */
static void expect_from(const tinfo *t, uint64_t seed, char *ex, int src, int64_t first, int64_t n)
{
    fill(t, O_COPY, seed, src, ex, first, n);
}

static void bcast_fill(test *x)
{
    memset(x->rb, POISON, x->n * x->d.t->extent);
    if (g_rank == x->root) fill(x->d.t, O_COPY, in_seed(x), x->root, x->rb, 0, x->n);
    expect_from(x->d.t, x->seed, x->ex, x->root, 0, x->n);
}

static void run_bcast(void)
{
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 1)) continue;
        const tinfo *t = &types[k];
        for (int c = 0; c < n_counts; c++)
            for (int root = 0; root < g_size; root++) {
                tdesc d = { "bcast", t, O_COPY, counts[c], 0, root, NULL, NULL, -1 };
                test *x = test_new(&d, C_BCAST, test_seed(&d, 0));
                size_t b = (size_t)d.count * t->extent;
                x->n = x->count = d.count;
                x->rb = xalloc(b); x->ex = xalloc(b);
                x->rbuf = coll_buf(x, x->rb, b, 1);
                x->fill = bcast_fill; x->check = allreduce_check;   /* rb against ex */
                submit(x);
            }
    }
    flush();
}

static void allgather_fill(test *x)
{
    int64_t n = x->n, e = x->d.t->extent;
    memset(x->rb, POISON, g_size * n * e);
    fill(x->d.t, O_COPY, in_seed(x), g_rank, x->d.inplace ? x->rb + g_rank * n * e : x->sb, 0, n);
}
static int allgather_check(test *x)
{
    int64_t n = x->n, e = x->d.t->extent;
    int bad = 0;
    for (int r = 0; r < g_size && !bad; r++) {
        expect_from(x->d.t, x->seed, x->ex, r, 0, n);
        bad = check_elems(&x->d, x->rb + r * n * e, x->ex, n, r * n);
    }
    return bad;
}

static void run_allgather(void)
{
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 1)) continue;
        const tinfo *t = &types[k];
        for (int c = 0; c < n_counts; c++)
            for (int ip = 0; ip < 2; ip++) {
                tdesc d = { "allgather", t, O_COPY, counts[c], ip, -1, NULL, NULL, -1 };
                test *x = test_new(&d, C_ALLGATHER, test_seed(&d, 0));
                int64_t n = d.count, e = t->extent;
                x->n = x->count = x->scount = d.count;
                x->sb = xalloc(n * e); x->rb = xalloc(g_size * n * e); x->ex = xalloc(n * e);
                x->sbuf = ip ? MPI_IN_PLACE : coll_buf(x, x->sb, n * e, 0);
                x->rbuf = coll_buf(x, x->rb, g_size * n * e, 1);
                x->fill = allgather_fill; x->check = allgather_check;
                submit(x);
            }
    }
    flush();
}

static void allgatherv_fill(test *x)
{
    int64_t e = x->d.t->extent;
    memset(x->rb, POISON, x->total * e);
    fill(x->d.t, O_COPY, in_seed(x), g_rank, x->d.inplace ? x->rb + x->rd[g_rank] * e : x->sb, 0,
         x->rc[g_rank]);
}
static int allgatherv_check(test *x)
{
    int64_t e = x->d.t->extent;
    int bad = 0;
    for (int r = 0; r < g_size && !bad; r++) {
        int64_t at = x->rd[r], n = x->rc[r];
        expect_from(x->d.t, x->seed, x->ex, r, 0, n);
        bad = check_elems(&x->d, x->rb + at * e, x->ex, n, at) ||
              check_untouched(&x->d, x->rb + (at + n) * e, 1, at + n);
    }
    return bad;
}

static void run_allgatherv(void)
{
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 1)) continue;
        const tinfo *t = &types[k];
        for (int c = 0; c < n_counts; c++)
            for (int v = 0; v < 2; v++)
            for (int ip = 0; ip < 2; ip++) {
                /* v 1: each rank lays the blocks out its own way (MPI allows it): rotated
                 * by its rank, so no block lies at the same place on every rank */
                tdesc d = { "allgatherv", t, O_COPY, counts[c], ip, -1, v ? "own_layout_per_rank" : "uneven_zeros_gaps",
                            NULL, -1 };
                test *x = test_new(&d, C_ALLGATHERV, test_seed(&d, 0));
                int64_t e = t->extent;
                x->rc = xalloc(sizeof(int) * g_size); x->rd = xalloc(sizeof(int) * g_size);
                for (int r = 0; r < g_size; r++) x->rc[r] = v ? d.count : rs_count(0, d.count, r);
                /* reverse order plus a 1-element gap, or rotated by this rank */
                for (int k = g_size - 1; k >= 0; k--) {
                    int r = v ? (k + g_rank) % g_size : k;
                    x->rd[r] = (int)x->total; x->total += x->rc[r] + 1;
                }
                x->scount = x->rc[g_rank];
                x->sb = xalloc(x->scount * e); x->rb = xalloc(x->total * e);
                x->ex = xalloc((d.count + g_size) * e);
                x->sbuf = ip ? MPI_IN_PLACE : coll_buf(x, x->sb, x->scount * e, 0);
                x->rbuf = coll_buf(x, x->rb, x->total * e, 1);
                x->fill = allgatherv_fill; x->check = allgatherv_check;
                submit(x);
            }
    }
    flush();
}

/* gather: every rank's block (its own stream) to its place at the root; in place, the
 * root's block is there already. Only the root receives. */
static void gather_fill(test *x)
{
    int64_t n = x->n, e = x->d.t->extent;
    int here = x->d.inplace && g_rank == x->root;
    memset(x->rb, POISON, g_size * n * e);
    fill(x->d.t, O_COPY, in_seed(x), g_rank, here ? x->rb + g_rank * n * e : x->sb, 0, n);
}
static int gather_check(test *x)
{
    return g_rank == x->root ? allgather_check(x) : 0;
}

/* scatter: block r of the root's stream to rank r; in place, the root's block stays
 * in its send buffer. */
static void scatter_fill(test *x)
{
    int64_t n = x->n, e = x->d.t->extent;
    memset(x->rb, POISON, n * e);
    if (g_rank == x->root) fill(x->d.t, O_COPY, in_seed(x), g_rank, x->sb, 0, g_size * n);
    expect_from(x->d.t, x->seed, x->ex, x->root, g_rank * n, n);
}
static int scatter_check(test *x)
{
    int64_t n = x->n, e = x->d.t->extent;
    if (x->d.inplace && g_rank == x->root)   /* the result is the root's block of its input */
        return check_elems(&x->d, x->sb + g_rank * n * e, x->ex, n, 0);
    return check_elems(&x->d, x->rb, x->ex, n, 0);
}

static void run_rooted(const char *name, enum coll_id c)
{
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 1)) continue;
        const tinfo *t = &types[k];
        for (int ci = 0; ci < n_counts; ci++)
            for (int root = 0; root < g_size; root++)
                for (int ip = 0; ip < 2; ip++) {
                    tdesc d = { name, t, O_COPY, counts[ci], ip, root, NULL, NULL, -1 };
                    test *x = test_new(&d, c, test_seed(&d, 0));
                    int64_t n = d.count, e = t->extent, p = g_size;
                    int here = ip && g_rank == root;
                    int64_t sn = c == C_GATHER ? n : p * n, rn = c == C_GATHER ? p * n : n;
                    x->n = x->count = x->scount = d.count;
                    x->sb = xalloc(sn * e); x->rb = xalloc(rn * e); x->ex = xalloc(n * e);
                    if (c == C_GATHER) {
                        x->sbuf = here ? MPI_IN_PLACE : coll_buf(x, x->sb, sn * e, 0);
                        x->rbuf = coll_buf(x, x->rb, rn * e, 1);
                        x->fill = gather_fill; x->check = gather_check;
                    } else {
                        x->sbuf = coll_buf(x, x->sb, sn * e, here);
                        x->rbuf = here ? MPI_IN_PLACE : coll_buf(x, x->rb, rn * e, 1);
                        x->fill = scatter_fill; x->check = scatter_check;
                    }
                    submit(x);
                }
    }
    flush();
}
static void run_gather(void) { run_rooted("gather", C_GATHER); }
static void run_scatter(void) { run_rooted("scatter", C_SCATTER); }

/* block j of rank r holds indices j*n.. of source r */
static void alltoall_fill(test *x)
{
    int64_t n = x->n, e = x->d.t->extent;
    memset(x->rb, POISON, g_size * n * e);
    fill(x->d.t, O_COPY, in_seed(x), g_rank, x->d.inplace ? x->rb : x->sb, 0, g_size * n);
}
static int alltoall_check(test *x)
{
    int64_t n = x->n, e = x->d.t->extent;
    int bad = 0;
    for (int r = 0; r < g_size && !bad; r++) {
        expect_from(x->d.t, x->seed, x->ex, r, (int64_t)g_rank * n, n);
        bad = check_elems(&x->d, x->rb + r * n * e, x->ex, n, r * n);
    }
    return bad;
}

static void run_alltoall(void)
{
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 1)) continue;
        const tinfo *t = &types[k];
        for (int c = 0; c < n_counts; c++)
            for (int ip = 0; ip < 2; ip++) {
                tdesc d = { "alltoall", t, O_COPY, counts[c], ip, -1, NULL, NULL, -1 };
                test *x = test_new(&d, C_ALLTOALL, test_seed(&d, 0));
                int64_t n = d.count, e = t->extent, p = g_size;
                x->n = x->count = d.count;
                x->sb = xalloc(p * n * e); x->rb = xalloc(p * n * e); x->ex = xalloc(n * e);
                x->sbuf = ip ? MPI_IN_PLACE : coll_buf(x, x->sb, p * n * e, 0);
                x->rbuf = coll_buf(x, x->rb, p * n * e, 1);
                x->fill = alltoall_fill; x->check = alltoall_check;
                submit(x);
            }
    }
    flush();
}

/* Elements sent from src to dst. Symmetric for the in-place variant.
 * Without zeros for in-place MPI_Ialltoallv and its persistent form unless -Z: Open
 * MPI's libnbc (4.1.4 and 5.0.7 seen here) gets those wrong once a block is past the
 * eager limit. Its in-place schedule leaves out a round's closing barrier when the
 * count for one peer is zero, so its next round refills the temporary buffer while
 * the previous send from it is still being read (seen at np 4 from 1021 ints). */
static int a2av_zeros = 1;
static int a2av_count(int c, int src, int dst, int sym)
{
    int a = sym && src > dst ? dst : src, b = sym && src > dst ? src : dst;
    return (a + 2 * b) % 3 == 0 && a2av_zeros ? 0 : c + (a + b) % 3;
}

/* the block for peer j: indices j*(c+3).. of this rank's stream */
static void alltoallv_fill(test *x)
{
    int64_t e = x->d.t->extent, stride = x->d.count + 3;
    memset(x->rb, POISON, x->rt * e);
    for (int j = 0; j < g_size; j++) {
        if (x->d.inplace) fill(x->d.t, O_COPY, in_seed(x), g_rank, x->rb + x->rd[j] * e, j * stride, x->rc[j]);
        else fill(x->d.t, O_COPY, in_seed(x), g_rank, x->sb + x->sd[j] * e, j * stride, x->sc[j]);
    }
}
static int alltoallv_check(test *x)
{
    int64_t e = x->d.t->extent;
    int bad = 0;
    for (int j = 0; j < g_size && !bad; j++) {
        int64_t at = x->rd[j], n = x->rc[j];
        expect_from(x->d.t, x->seed, x->ex, j, (int64_t)g_rank * (x->d.count + 3), n);
        bad = check_elems(&x->d, x->rb + at * e, x->ex, n, at) ||
              check_untouched(&x->d, x->rb + (at + n) * e, 1, at + n);
    }
    return bad;
}

static void run_alltoallv(void)
{
    for (int k = 0; k < NTYPES; k++) {
        if (!type_selected(k, 1)) continue;
        const tinfo *t = &types[k];
        for (int c = 0; c < n_counts; c++)
            for (int ip = 0; ip < 2; ip++) {
                a2av_zeros = !ip || mode == MODE_BLOCKING || a2av_inplace_zeros;
                tdesc d = { "alltoallv", t, O_COPY, counts[c], ip, -1,
                            a2av_zeros ? "uneven_zeros_gaps" : "uneven_gaps", NULL, -1 };
                test *x = test_new(&d, C_ALLTOALLV, test_seed(&d, 0));
                int64_t e = t->extent, p = g_size;
                x->sc = xalloc(sizeof(int) * p); x->sd = xalloc(sizeof(int) * p);
                x->rc = xalloc(sizeof(int) * p); x->rd = xalloc(sizeof(int) * p);
                for (int j = 0; j < p; j++) {       /* send blocks in order, receive blocks reversed */
                    x->sc[j] = a2av_count(d.count, g_rank, j, ip);
                    x->rc[j] = a2av_count(d.count, j, g_rank, ip);
                    x->sd[j] = (int)x->st; x->st += x->sc[j] + 1;
                }
                for (int j = (int)p - 1; j >= 0; j--) { x->rd[j] = (int)x->rt; x->rt += x->rc[j] + 1; }
                x->sb = xalloc(x->st * e); x->rb = xalloc(x->rt * e); x->ex = xalloc((d.count + 3) * e);
                x->sbuf = ip ? MPI_IN_PLACE : coll_buf(x, x->sb, x->st * e, 0);
                x->rbuf = coll_buf(x, x->rb, x->rt * e, 1);
                x->fill = alltoallv_fill; x->check = alltoallv_check;
                submit(x);
            }
    }
    flush();
}

static const struct { const char *name; void (*run)(void); } colls[] = {
    { "allreduce", run_allreduce },
    { "allgather", run_allgather },
    { "allgatherv", run_allgatherv },
    { "reduce_scatter", run_reduce_scatter },
    { "reduce_scatter_block", run_reduce_scatter_block },
    { "bcast", run_bcast },
    { "alltoall", run_alltoall },
    { "alltoallv", run_alltoallv },
    { "reduce", run_reduce },
    { "gather", run_gather },
    { "scatter", run_scatter },
};
#define NCOLLS ((int)(sizeof(colls) / sizeof(colls[0])))

/* ------------------------------------------------------------------ main */

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p = q ? q + 1 : NULL;
    }
    return 0;
}

static void usage(void)
{
    printf("usage: coll_check [-c COLLS] [-n MAXCOUNT] [-t TYPES] [-o OPS] [-m COMMS] [-M MODES] [-K N] [-R N] [-Z]\n"
           "                  [-Q] [-s SEED] [-d KIND] [-L N] [-T LEVEL] [-v[v]] [-l]\n"
           "  -c  comma list of collectives (default: all)\n"
           "  -n  largest element count (default 4096); counts are 0, 1, primes below it, and it\n"
           "  -t  comma list of types (default: all for reductions, a representative set for data movement)\n"
           "  -o  comma list of reduction ops (default: all applicable)\n"
           "  -m  communicators: world,dup,reversed,split (default: world)\n"
           "  -M  how calls are made, a comma list run in the order given: blocking (default), nonblocking\n"
           "      (MPI_I<coll>, -K calls in flight, completed in varied orders), persistent\n"
           "      (<coll>_init, -R starts with new inputs each; exits 77 where MPI lacks them),\n"
           "      mixed (a nonblocking call in flight while blocking ones run on a dup and on\n"
           "      the communicator itself); -L uses the last\n"
           "  -K  calls in flight at once in nonblocking and persistent mode (1..16, default 4)\n"
           "  -R  starts of each persistent request (default 3)\n"
           "  -Z  zero counts in in-place alltoallv in every mode (default: blocking only;\n"
           "      Open MPI's libnbc gets them wrong past the eager limit)\n"
           "  -d  buffers the collectives see: host (default), device (GPU memory on every rank),\n"
           "      mixed (GPU memory on even ranks, host on odd), mixed-odd (the other way round);\n"
           "      managed-odd (GPU memory on even ranks, managed memory on odd ones);\n"
           "      exits 77 when a GPU is needed and there is none\n"
           "  -Q  with a GPU kind: each call's device buffers get their contents by copies\n"
           "      queued on the legacy default stream just before it, not waited for (the\n"
           "      application's queued work, which the call must wait for)\n"
           "  -L  with a GPU kind: also N calls on freshly allocated device buffers; fails if\n"
           "      device memory in use grows\n"
           "  -T  thread level of MPI_Init_thread: single (default), funneled, serialized, multiple\n"
           "  -l  list collectives, types, ops and modes\n"
           "  exit status: 0 all matched, 1 a mismatch, 2 usage\n");
}

/* -L: calls on device buffers allocated and freed around each call, at sizes that
 * cycle so that a freed address is often handed out again. Device memory in use
 * (cuMemGetInfo) after the first tenth of the calls is the baseline: it must not
 * grow by the end. Returns the number of ranks that saw growth (on rank 0). */
static long leak_calls;
static long leak_check(int world_rank, int world_size)
{
    static const size_t sizes[] = { 1024, 65536, 4096, 1 << 20, 256 };
    size_t base = 0, used;
    long grew = 0, x;
    int sum_ok = 1;
    for (long i = 0; i < leak_calls; i++) {
        size_t n = sizes[i % 5] / sizeof(int);
        int *h = xalloc(n * sizeof(int) * (size_t)world_size);
        /* one call in the last mode of -M: blocking, nonblocking (mixed: too) or a
         * persistent request made, started once and freed */
        test x = { .d.coll = "leak-check", .d.start = -1, .coll = i % 3 == 0 ? C_ALLREDUCE : i % 3 == 1 ? C_ALLGATHER : C_BCAST,
                   .dt = MPI_INT, .op = MPI_SUM, .comm = MPI_COMM_WORLD, .root = (int)(i % world_size),
                   .sbuf = MPI_IN_PLACE, .count = (int)n, .scount = (int)n };
        MPI_Request r;
        for (size_t k = 0; k < n; k++) h[k] = (int)(k % 7) + world_rank;
        x.rbuf = coll_buf(&x, h, n * sizeof(int) * (size_t)world_size, 1);
        push(&x);
        if (mode == MODE_BLOCKING) issue(&x, H_BLOCKING, NULL);
        else {
            issue(&x, mode == MODE_PERSISTENT ? H_INIT : H_NONBLOCKING, &r);
            if (mode == MODE_PERSISTENT) req_ok(MPI_Start(&r), "MPI_Start");
            req_ok(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
            if (mode == MODE_PERSISTENT) req_ok(MPI_Request_free(&r), "MPI_Request_free");
        }
        pull(&x);
        for (int k = 0; k < x.nm; k++) devbuf_free(x.m[k].dev);
        if (i % 3 == 0) {   /* the sum of (k % 7) + r over ranks */
            for (size_t k = 0; k < n && sum_ok; k++)
                sum_ok = h[k] == world_size * (int)(k % 7) + world_size * (world_size - 1) / 2;
        }
        free(h);
        if (i == leak_calls / 10) base = devbuf_used_bytes();
    }
    used = devbuf_used_bytes();
    x = used > base || !sum_ok;
    printf("coll_check: rank %d: %ld calls on fresh device buffers: device memory in use %zu -> %zu bytes%s%s\n",
           world_rank, leak_calls, base, used, used > base ? " GREW" : "", sum_ok ? "" : ", WRONG SUMS");
    fflush(stdout);
    if (world_rank == 0) {
        grew = x;
        for (int r = 1; r < world_size; r++) {
            MPI_Recv(&x, 1, MPI_LONG, r, 995, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            grew += x;
        }
    } else {
        MPI_Send(&x, 1, MPI_LONG, 0, 995, MPI_COMM_WORLD);
    }
    return grew;
}

/* One line naming each rank's processor (host), gathered with point-to-point:
 * how multi-host runs prove that MPI saw several nodes. */
static void print_hosts(int world_rank, int world_size)
{
    char name[MPI_MAX_PROCESSOR_NAME + 1], other[MPI_MAX_PROCESSOR_NAME + 1];
    int len;
    memset(name, 0, sizeof name);
    MPI_Get_processor_name(name, &len);
    if (world_rank != 0) {
        MPI_Send(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, 997, MPI_COMM_WORLD);
        return;
    }
    char *names = xalloc((size_t)world_size * (MPI_MAX_PROCESSOR_NAME + 1));
    int nhosts = 0;
    for (int r = 0; r < world_size; r++) {
        if (r == 0) memcpy(other, name, sizeof other);
        else { memset(other, 0, sizeof other);
               MPI_Recv(other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, r, 997, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
        memcpy(names + (size_t)r * (MPI_MAX_PROCESSOR_NAME + 1), other, sizeof other);
        int seen = 0;
        for (int q = 0; q < r; q++) seen |= !strcmp(names + (size_t)q * (MPI_MAX_PROCESSOR_NAME + 1), other);
        nhosts += !seen;
    }
    printf("coll_check: np=%d hosts=%d:", world_size, nhosts);
    for (int r = 0; r < world_size; r++) printf(" %d@%s", r, names + (size_t)r * (MPI_MAX_PROCESSOR_NAME + 1));
    printf("\n");
    fflush(stdout);
    free(names);
}

int main(int argc, char **argv)
{
    const char *csel = NULL, *tsel = NULL, *osel = NULL, *msel = "world", *Msel = "blocking";
    int list = 0, world_rank, world_size, err = 0, level = MPI_THREAD_SINGLE, provided;
    /* -T before MPI_Init_thread: the thread level every test runs at */
    for (int a = 1; a + 1 < argc; a++) {
        if (strcmp(argv[a], "-T")) continue;
        const char *v = argv[a + 1];
        level = !strcmp(v, "single") ? MPI_THREAD_SINGLE : !strcmp(v, "funneled") ? MPI_THREAD_FUNNELED
              : !strcmp(v, "serialized") ? MPI_THREAD_SERIALIZED : !strcmp(v, "multiple") ? MPI_THREAD_MULTIPLE : -1;
        if (level < 0) { err = 1; level = MPI_THREAD_SINGLE; }
    }
    MPI_Init_thread(&argc, &argv, level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(s, "-c") && v) { csel = v; a++; }
        else if (!strcmp(s, "-n") && v) { max_count = atoi(v); a++; }
        else if (!strcmp(s, "-t") && v) { tsel = v; a++; }
        else if (!strcmp(s, "-o") && v) { osel = v; a++; }
        else if (!strcmp(s, "-m") && v) { msel = v; a++; }
        else if (!strcmp(s, "-M") && v) { Msel = v; a++; }
        else if (!strcmp(s, "-K") && v) { batch_k = atoi(v); a++; }
        else if (!strcmp(s, "-R") && v) { n_starts = atoi(v); a++; }
        else if (!strcmp(s, "-Z")) a2av_inplace_zeros = 1;
        else if (!strcmp(s, "-Q")) queued_push = 1;
        else if (!strcmp(s, "-s") && v) { g_seed = strtoull(v, NULL, 0); a++; }
        else if (!strcmp(s, "-d") && v) {
            int k = 0;
            while (k < KIND_COUNT && strcmp(v, kind_names[k])) k++;
            if (k == KIND_COUNT) err = 1; else buf_kind = k;
            a++;
        }
        else if (!strcmp(s, "-L") && v) { leak_calls = atol(v); a++; }
        else if (!strcmp(s, "-T") && v) a++;   /* read before MPI_Init_thread */
        else if (!strcmp(s, "-v")) verbose++;
        else if (!strcmp(s, "-vv")) verbose += 2;
        else if (!strcmp(s, "-l")) list = 1;
        else err = 1;
    }
    if (max_count < 1 || batch_k < 1 || batch_k > MAXK || n_starts < 1) err = 1;
    /* the modes in the order given (each once); the last one is also -L's */
    int modes_sel[MODE_COUNT] = { 0 }, mode_order[MODE_COUNT], n_modes = 0;
    for (const char *p = Msel; *p;) {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < MODE_COUNT && !(strlen(mode_names[k]) == len && !strncmp(p, mode_names[k], len))) k++;
        if (k == MODE_COUNT) err = 1;
        else if (!modes_sel[k]) { modes_sel[k] = 1; mode_order[n_modes++] = k; }
        p += len + (p[len] == ',');
    }
    if (n_modes == 0) err = 1;
    if (err) { if (world_rank == 0) usage(); MPI_Finalize(); return 2; }
#ifndef PCOLL
    if (modes_sel[MODE_PERSISTENT]) {
        if (world_rank == 0)
            printf("coll_check: SKIP -M persistent: this MPI has no persistent collectives "
                   "(neither MPI 4's MPI_<Coll>_init nor Open MPI's MPIX_<Coll>_init)\n");
        MPI_Finalize();
        return 77;
    }
#endif
    my_world_rank = world_rank;
    if (buf_kind != KIND_HOST) {
        /* Every rank picks its GPU, as the ranks of a GPU job do, even those that pass
         * host buffers; only those whose buffers go on the GPU must succeed (a rank
         * may have none: then strata agrees on its host path). All agree to skip. */
        char why[256] = "";
        MPI_Comm node;
        int local = 0, ok, all_ok = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
        ok = devbuf_init(local, why, sizeof why) == 0 || !rank_on_device(world_rank);
        /* point-to-point only: the collectives are under test */
        if (world_rank == 0) {
            all_ok = ok;
            for (int r = 1; r < world_size; r++) {
                int x;
                MPI_Recv(&x, 1, MPI_INT, r, 996, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                all_ok &= x;
            }
            for (int r = 1; r < world_size; r++) MPI_Send(&all_ok, 1, MPI_INT, r, 996, MPI_COMM_WORLD);
        } else {
            MPI_Send(&ok, 1, MPI_INT, 0, 996, MPI_COMM_WORLD);
            MPI_Recv(&all_ok, 1, MPI_INT, 0, 996, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (!all_ok) {
            if (!ok) printf("coll_check: SKIP -d %s: rank %d: %s\n", kind_names[buf_kind], world_rank, why);
            MPI_Finalize();
            return 77;
        }
        if (rank_on_device(world_rank) && world_rank < 2)
            printf("coll_check: buffers: %s, rank %d on GPU %d (%s)\n", kind_names[buf_kind], world_rank,
                   devbuf_device(), devbuf_name());
    }
    init_types_ops();
    if (list) {
        if (world_rank == 0) {
            printf("collectives:"); for (int k = 0; k < NCOLLS; k++) printf(" %s", colls[k].name);
            printf("\ntypes:"); for (int k = 0; k < NTYPES; k++) printf(" %s", types[k].name);
            printf("\nops:"); for (int k = 0; k < O_NOPS; k++) printf(" %s", op_names[k]);
            printf("\nmodes: blocking nonblocking mixed");
#ifdef PCOLL
            printf(" persistent (%s)", PCOLL_API);
#endif
            printf("\n");
        }
        MPI_Finalize();
        return 0;
    }
    if (tsel) {
        type_mask_set = 1;
        for (int k = 0; k < NTYPES; k++) type_sel[k] = in_list(tsel, types[k].name);
    }
    if (osel) {
        op_sel = 0;
        for (int k = 0; k < O_NOPS; k++) if (in_list(osel, op_names[k])) op_sel |= B(k);
    }
    make_counts();
    print_hosts(world_rank, world_size);
    const char *ce = getenv("STRATA_TEST_CORRUPT");
    corrupt_kind = !ce || !*ce || !strcmp(ce, "0") ? CORRUPT_NONE : !strcmp(ce, "stale") ? CORRUPT_STALE
                                                                                    : CORRUPT_FLIP;
    int corrupt = corrupt_kind == CORRUPT_FLIP;
    if (corrupt_kind == CORRUPT_STALE && !modes_sel[MODE_PERSISTENT] && world_rank == 0)
        printf("coll_check: STRATA_TEST_CORRUPT=stale acts on -M persistent only: nothing injected\n");
    if (getenv("STRATA_TEST_CORRUPT_RANK")) corrupt_rank = atoi(getenv("STRATA_TEST_CORRUPT_RANK"));

    long total_failed = 0;
    static const char *comm_kinds[] = { "world", "dup", "reversed", "split" };
    for (int m = 0; m < 4; m++) {
        if (!in_list(msel, comm_kinds[m])) continue;
        comm_name = comm_kinds[m];
        if (m == 0) comm = MPI_COMM_WORLD;
        else if (m == 1) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        /* reversed rank order: the node layout is no longer blocks of consecutive ranks */
        else if (m == 2) MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &comm);
        /* two halves of different sizes where possible */
        else MPI_Comm_split(MPI_COMM_WORLD, world_rank < (world_size + 1) / 2 ? 0 : 1, world_rank, &comm);
        MPI_Comm_rank(comm, &g_rank);
        MPI_Comm_size(comm, &g_size);
        for (int mi = 0; mi < n_modes; mi++)
        for (int k = 0; k < NCOLLS; k++) {
            int md = mode_order[mi];
            if (csel && !in_list(csel, colls[k].name)) continue;
            mode = md;
            n_tests = n_failed_here = 0;
            corrupt_pending = corrupt;
            if (corrupt_rank < 0 || corrupt_rank >= g_size) corrupt_rank = g_size - 1;
            double t0 = MPI_Wtime();
            colls[k].run();
            double dt = MPI_Wtime() - t0;
            if (comm_side != MPI_COMM_NULL) MPI_Comm_free(&comm_side);
            /* Count failing ranks with point-to-point only: the collectives are under test. */
            long failed = n_failed_here, x;
            if (world_rank == 0) {
                for (int r = 1; r < world_size; r++) {
                    MPI_Recv(&x, 1, MPI_LONG, r, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    failed += x;
                }
                printf("coll_check: %-22s comm=%s%s%s np=%d tests=%ld failed=%ld (rank-tests) %.2fs %s\n",
                       colls[k].name, comm_name, md ? " mode=" : "", md ? mode_names[md] : "", g_size,
                       n_tests, failed, dt, failed ? "FAIL" : "ok");
                fflush(stdout);
            } else {
                MPI_Send(&failed, 1, MPI_LONG, 0, 999, MPI_COMM_WORLD);
            }
            total_failed += failed;
        }
        if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    }
    /* rank 0 knows the total; tell everyone with point-to-point */
    if (world_rank == 0)
        for (int r = 1; r < world_size; r++) MPI_Send(&total_failed, 1, MPI_LONG, r, 998, MPI_COMM_WORLD);
    else
        MPI_Recv(&total_failed, 1, MPI_LONG, 0, 998, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    mode = mode_order[n_modes - 1];
    if (leak_calls > 0 && buf_kind != KIND_HOST) total_failed += leak_check(world_rank, world_size);
    if (world_rank == 0) printf("coll_check: %s\n", total_failed ? "FAIL" : "PASS");
    for (int k = 0; k < NTYPES; k++) if (types[k].kind >= K_VECD) MPI_Type_free(&types[k].dt);
    MPI_Op_free(&mpi_ops[O_USUM]); MPI_Op_free(&mpi_ops[O_UMAT]);
    MPI_Finalize();
    return total_failed ? 1 : 0;
}
