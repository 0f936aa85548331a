/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault_check - the fault cases of issue 10, one sub-command each, for any MPI.
 *
 *   fault_check CASE [-n N] [-c COUNT] [-s SEED] [-T SECONDS] [-S SECONDS] [-t THREADS]
 *                    [-x] [-A] [-N] [-P] [-U] [-R] [-Z] [-L contig|same|mixed] [-v]
 *
 * Correctness cases (every result compared bit for bit with a locally computed
 * reference; inputs are small integers so every reduction order is exact; the
 * first wrong element of a failing call is printed as a "MISMATCH" line):
 *   basic      every served collective x {int,double} x {sum,max} x in place or not
 *   zero       zero-length derived types on some ranks (contiguous(0,int) x 5) and
 *              count 0 of MPI_INT on the others, in place too, for every collective;
 *              then validated calls on the same communicator must be exact
 *   negdisp    allgatherv/alltoallv with negative displacements on one rank only;
 *              reduce_scatter recvcounts with zeros on some ranks / all on one rank
 *   layouts    one signature, a different layout per rank (contiguous, vector,
 *              indexed, resized, struct of one type, subarray, contiguous(k)), every
 *              collective, reductions included (doubles and ints, MPI_SUM)
 *   -R         zero and layouts: the reductions only (allreduce, reduce,
 *              reduce_scatter(_block) with MPI_SUM on derived types of one predefined
 *              type); random: derived layouts in reductions too. Open MPI 4.1's
 *              binding answers MPI_ERR_OP to a predefined op on a derived type while
 *              mpi_param_check is on: run -R with --mca mpi_param_check 0.
 *              Without -R, reductions use count x MPI type only.
 *   threads    MPI_THREAD_MULTIPLE, -t threads each on its own communicator (-n rounds)
 *   random     -n randomised calls (default 10000; seed -s, printed): collective,
 *              size (0 and odd sizes too), type, op, root, in place, layout (-L;
 *              -Z: count-0 calls may use a zero-length derived type on some ranks,
 *              which plain Open MPI 4.1 itself cannot do: its binding returns early
 *              on count 0 only)
 * Error cases (each rank prints one "fault_check: CASE rank R: ..." line, OK or BAD):
 *   null-allreduce-recv, null-allreduce-send, null-bcast-root, null-bcast-nonroot,
 *   null-allgather, null-alltoall
 *              NULL buffer (count > 0) on one rank under MPI_ERRORS_RETURN: that rank
 *              must get MPI_ERR_BUFFER, the others any error, all within -T seconds
 *   mismatch   allreduce of 100000 doubles on rank 0 and 200000 on the others; -x:
 *              coll_strata_check_args is on, so every rank must get MPI_ERR_TRUNCATE.
 *              Then a correct call on the same communicator must be exact (or be
 *              refused on every rank), and one on a communicator dup'ed before must be
 *              exact
 *   straddle   check_args with the host rules on: a count small on rank 0 only fails everywhere
 *   straddle-lazy  the same as a fresh communicator's first call (lazy calls: run it with
 *              coll_strata_setup_at_creation false)
 *   kinds      one mismatched call of each kind (count, datatype, op, root, alltoallv
 *              pairs, allgatherv counts), each on a communicator of its own; -A: every
 *              rank must get an error from it. Then a correct call on that
 *              communicator must be exact. -N: the nonblocking forms; -P: persistent
 *              requests, each started twice (a correct one: exact both times; the
 *              mismatched one: every start must fail with -A, and Open MPI frees a
 *              request that ended with an error, so it starts once there); -U: the
 *              mismatched call must leave every rank's buffers untouched (nothing
 *              moves: coll_strata_check_args)
 *   deadline   the last rank sleeps -S seconds (default 10) before an allreduce under
 *              MPI_ERRORS_RETURN; the others must get an error after about -T seconds.
 *              Then communicators made from the failed one (dup, split, split_type,
 *              create_group) must be exact and the failed one freed
 *   optout     the info key strata=off on the last rank's communicator only: every
 *              collective on it must be exact
 *   kill       every rank runs large allreduces; rank 1 is killed by SIGKILL from a
 *              timer after 1.5 s, inside a call (the job must end; the runner checks)
 *
 * FAULT_CHECK_CORRUPT=1 flips one byte of one element of the last rank's result in
 * the first validated call, to prove that the checks can fail.
 * Exit status: 0 when this rank saw nothing wrong.
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- types and ops */

enum { T_INT, T_DOUBLE, T_FLOAT, T_CHAR, T_LONG, T_UNSIGNED, T_FLOAT_INT, T_DOUBLE_INT, T_2INT, NT };
static const char *tnames[NT] = { "int", "double", "float", "char", "long", "unsigned",
                                  "float_int", "double_int", "2int" };
typedef struct { float v; int i; } fi_t;
typedef struct { double v; int i; } di_t;
typedef struct { int v; int i; } ii_t;

enum { O_NONE, O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR,
       O_MINLOC, O_MAXLOC, NO };
static const char *onames[NO] = { "none", "sum", "prod", "max", "min", "land", "lor", "lxor",
                                  "band", "bor", "bxor", "minloc", "maxloc" };

static MPI_Datatype mpi_type(int t, int op)
{
    switch (t) {
    case T_INT: return MPI_INT;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_FLOAT: return MPI_FLOAT;
    case T_CHAR: return op == O_NONE ? MPI_CHAR : MPI_SIGNED_CHAR;   /* MPI_CHAR: no reductions */
    case T_LONG: return MPI_LONG;
    case T_UNSIGNED: return MPI_UNSIGNED;
    case T_FLOAT_INT: return MPI_FLOAT_INT;
    case T_DOUBLE_INT: return MPI_DOUBLE_INT;
    default: return MPI_2INT;
    }
}
static MPI_Op mpi_op(int op)
{
    MPI_Op o[NO] = { MPI_OP_NULL, MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR,
                     MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC };
    return o[op];
}
static size_t tsize(int t)   /* bytes of one element in memory (its extent) */
{
    static const size_t s[NT] = { sizeof(int), sizeof(double), sizeof(float), 1, sizeof(long),
                                  sizeof(unsigned), sizeof(fi_t), sizeof(di_t), sizeof(ii_t) };
    return s[t];
}
static int is_pair(int t) { return t >= T_FLOAT_INT; }
static int is_float(int t) { return t == T_DOUBLE || t == T_FLOAT; }
static int op_legal(int t, int op)
{
    if (op == O_NONE) return 1;
    if (is_pair(t)) return op == O_MINLOC || op == O_MAXLOC;
    if (op == O_MINLOC || op == O_MAXLOC) return 0;
    if (is_float(t)) return op <= O_MIN;
    return 1;
}

/* A value: v (the number) and i (the index of a pair type). */
typedef struct { int64_t v, i; } val_t;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static uint64_t h3(uint64_t a, uint64_t b, uint64_t c) { return mix(mix(mix(a) ^ b) ^ c); }

/* Input of rank r at element e: small enough that any order of the op is exact. */
static val_t gen(int t, int op, uint64_t seed, int r, int64_t e)
{
    uint64_t h = h3(seed, (uint64_t)r, (uint64_t)e);
    int uns = t == T_UNSIGNED;
    val_t x = { 0, 0 };
    switch (op) {
    case O_SUM: x.v = uns ? (int64_t)(h % 8) : (int64_t)(h % 7) - 3; break;
    case O_PROD: x.v = (h % 8 == 0 && r < 3) ? 2 : (uns || h % 2) ? 1 : -1; break;
    case O_LAND: case O_LOR: case O_LXOR: x.v = (int64_t)(h % 3); break;   /* 0, 1, 2 */
    case O_BAND: case O_BOR: case O_BXOR: x.v = (int64_t)(h % 128); break;
    case O_MINLOC: case O_MAXLOC: x.v = (int64_t)(h % 5) - 2; x.i = (int64_t)((h >> 20) % 1000); break;
    default: x.v = uns ? (int64_t)(h % 200) : (int64_t)(h % 201) - 100;
             if (is_pair(t)) x.i = (int64_t)((h >> 20) % 1000);
             break;
    }
    return x;
}

static void store(int t, char *p, val_t x)
{
    switch (t) {
    case T_INT: { int y = (int)x.v; memcpy(p, &y, sizeof y); break; }
    case T_DOUBLE: { double y = (double)x.v; memcpy(p, &y, sizeof y); break; }
    case T_FLOAT: { float y = (float)x.v; memcpy(p, &y, sizeof y); break; }
    case T_CHAR: { signed char y = (signed char)x.v; memcpy(p, &y, 1); break; }
    case T_LONG: { long y = (long)x.v; memcpy(p, &y, sizeof y); break; }
    case T_UNSIGNED: { unsigned y = (unsigned)x.v; memcpy(p, &y, sizeof y); break; }
    case T_FLOAT_INT: { float y = (float)x.v; int i = (int)x.i; memcpy(p + offsetof(fi_t, v), &y, 4);
                        memcpy(p + offsetof(fi_t, i), &i, 4); break; }
    case T_DOUBLE_INT: { double y = (double)x.v; int i = (int)x.i; memcpy(p + offsetof(di_t, v), &y, 8);
                         memcpy(p + offsetof(di_t, i), &i, 4); break; }
    default: { int y = (int)x.v, i = (int)x.i; memcpy(p, &y, 4); memcpy(p + 4, &i, 4); break; }
    }
}
/* The value bytes of one element (never padding): up to 2 (offset, length) pieces. */
static int pieces(int t, int seg[2][2])
{
    seg[0][0] = 0;
    switch (t) {
    case T_FLOAT_INT: seg[0][1] = 4; seg[1][0] = offsetof(fi_t, i); seg[1][1] = 4; return 2;
    case T_DOUBLE_INT: seg[0][1] = 8; seg[1][0] = offsetof(di_t, i); seg[1][1] = 4; return 2;
    case T_2INT: seg[0][1] = 8; return 1;
    default: seg[0][1] = (int)tsize(t); return 1;
    }
}
static int same_value(int t, const char *a, const char *b)
{
    int seg[2][2], n = pieces(t, seg);
    for (int k = 0; k < n; k++) if (memcmp(a + seg[k][0], b + seg[k][0], seg[k][1])) return 0;
    return 1;
}

static val_t apply(int t, int op, val_t a, val_t b)
{
    val_t r = a;
    switch (op) {
    case O_SUM: r.v = a.v + b.v; break;
    case O_PROD: r.v = a.v * b.v; break;
    case O_MAX: r.v = a.v > b.v ? a.v : b.v; break;
    case O_MIN: r.v = a.v < b.v ? a.v : b.v; break;
    case O_LAND: r.v = (a.v && b.v); break;
    case O_LOR: r.v = (a.v || b.v); break;
    case O_LXOR: r.v = (!a.v != !b.v); break;
    case O_BAND: r.v = a.v & b.v; break;
    case O_BOR: r.v = a.v | b.v; break;
    case O_BXOR: r.v = a.v ^ b.v; break;
    case O_MINLOC: if (b.v < a.v || (b.v == a.v && b.i < a.i)) r = b; break;
    case O_MAXLOC: if (b.v > a.v || (b.v == a.v && b.i < a.i)) r = b; break;
    }
    (void)t;
    return r;
}

/* ---------------------------------------------------------------- layouts
 * A layout describes where the elements of one block live: the MPI type of one
 * unit, k elements per unit at byte offsets off[0..k), unit extent ext. Element e
 * of a block that starts at unit u0 lies at (u0 + e / k) * ext + off[e % k]. */
enum { L_CONTIG, L_RESIZED, L_STRUCT1, L_HVEC1, L_VECTOR, L_INDEXED, L_SUBARRAY, L_CONTIGK, L_ZERO, NL };
static const char *lnames[NL] = { "contig", "resized", "struct1", "hvector1", "vector", "indexed",
                                  "subarray", "contigk", "zero" };
typedef struct {
    int id, k;          /* elements per unit (0: zero-length type) */
    MPI_Aint ext;
    MPI_Aint *off;
    MPI_Datatype dt;
    int owned;          /* dt must be freed */
} layout_t;

/* Whole-block layouts (k == count) serve only collectives with one count per block. */
static int layout_whole(int id) { return id >= L_VECTOR && id <= L_SUBARRAY; }

/* Builds layout id for blocks of c elements of type t; kk is the unit length for
 * L_CONTIGK. Returns 0 on success, -1 if the layout does not fit. */
static int make_layout(layout_t *L, int id, int t, int op, int c, int kk)
{
    MPI_Datatype b = mpi_type(t, op);
    MPI_Aint s = (MPI_Aint)tsize(t);
    memset(L, 0, sizeof *L);
    L->id = id;
    if (layout_whole(id) && c <= 0) return -1;
    if (id == L_CONTIGK && (kk <= 0 || c % kk)) return -1;
    int k = id == L_ZERO ? 0 : layout_whole(id) ? c : id == L_CONTIGK ? kk : 1;
    L->k = k;
    L->off = malloc(sizeof(MPI_Aint) * (size_t)(k ? k : 1));
    L->owned = 1;
    switch (id) {
    case L_CONTIG:
        L->dt = b; L->owned = 0; L->ext = s; L->off[0] = 0; break;
    case L_RESIZED:   /* one element, then a hole of one element */
        MPI_Type_create_resized(b, 0, 2 * s, &L->dt); L->ext = 2 * s; L->off[0] = 0; break;
    case L_STRUCT1: { /* struct of one type: the element at s, extent 2s */
        int bl = 1; MPI_Aint d = s; MPI_Datatype tmp;
        MPI_Type_create_struct(1, &bl, &d, &b, &tmp);
        MPI_Type_create_resized(tmp, 0, 3 * s, &L->dt); MPI_Type_free(&tmp);
        L->ext = 3 * s; L->off[0] = s; break;
    }
    case L_HVEC1: {   /* hvector of one element, resized with a hole */
        MPI_Datatype tmp;
        MPI_Type_create_hvector(1, 1, 4 * s, b, &tmp);
        MPI_Type_create_resized(tmp, 0, 4 * s, &L->dt); MPI_Type_free(&tmp);
        L->ext = 4 * s; L->off[0] = 0; break;
    }
    case L_VECTOR:    /* c elements, stride 2 */
        MPI_Type_vector(c, 1, 2, b, &L->dt); L->ext = (2 * (MPI_Aint)c - 1) * s;
        for (int e = 0; e < c; e++) L->off[e] = 2 * e * s;
        break;
    case L_INDEXED: { /* c elements in reverse order */
        int *bl = malloc(sizeof(int) * (size_t)c), *d = malloc(sizeof(int) * (size_t)c);
        for (int e = 0; e < c; e++) { bl[e] = 1; d[e] = c - 1 - e; L->off[e] = (MPI_Aint)(c - 1 - e) * s; }
        MPI_Type_indexed(c, bl, d, b, &L->dt); L->ext = (MPI_Aint)c * s;
        free(bl); free(d); break;
    }
    case L_SUBARRAY: { /* row 1 of a 2 x c array */
        int sizes[2] = { 2, c }, sub[2] = { 1, c }, st[2] = { 1, 0 };
        MPI_Type_create_subarray(2, sizes, sub, st, MPI_ORDER_C, b, &L->dt);
        L->ext = 2 * (MPI_Aint)c * s;
        for (int e = 0; e < c; e++) L->off[e] = ((MPI_Aint)c + e) * s;
        break;
    }
    case L_CONTIGK:
        MPI_Type_contiguous(kk, b, &L->dt); L->ext = kk * s;
        for (int e = 0; e < kk; e++) L->off[e] = e * s;
        break;
    case L_ZERO:
        MPI_Type_contiguous(0, b, &L->dt); L->ext = 0; break;
    }
    if (L->owned) MPI_Type_commit(&L->dt);
    return 0;
}
static void free_layout(layout_t *L)
{
    if (L->owned) MPI_Type_free(&L->dt);
    free(L->off);
}
/* units for c elements */
static int units(const layout_t *L, int c) { return L->k ? c / L->k : 0; }
static MPI_Aint pos(const layout_t *L, int64_t u0, int64_t e)
{
    return (u0 + e / L->k) * L->ext + L->off[e % L->k];
}

/* ---------------------------------------------------------------- one validated call */

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV,
       C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK, NC };
static const char *cnames[NC] = { "allreduce", "reduce", "bcast", "allgather", "allgatherv",
                                  "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block" };
static int is_reduction(int c) { return c == C_ALLREDUCE || c == C_REDUCE || c >= C_REDUCE_SCATTER; }
static int is_v(int c) { return c == C_ALLGATHERV || c == C_ALLTOALLV || c == C_REDUCE_SCATTER; }

enum { V_RANDOM, V_ZEROS_EVEN, V_ALL_ON_ROOT, V_ALL_ZERO, NV };
static const char *vnames[NV] = { "random", "zeros-on-even", "all-on-one", "all-zero" };

typedef struct {
    const char *tag;    /* the case, for messages */
    MPI_Comm comm;
    int coll, t, op, root, inplace;
    int count;          /* elements per block (non-v); largest count (v) */
    int lay, kk;        /* this rank's layout (and its unit length for L_CONTIGK) */
    int zunits;         /* L_ZERO: how many units of the zero-length type */
    int vpat;           /* v collectives: how counts are chosen */
    int negdisp;        /* this rank: blocks in reverse order at negative displacements */
    int recv_null;      /* reduce: non-root passes recvbuf NULL (legal) */
    uint64_t seed;
} spec_t;

static int g_world_rank, g_verbose;
static int corrupt_pending;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

/* v counts: cnt(b) for allgatherv/reduce_scatter, cnt2(i, j) for alltoallv (i -> j) */
static int vcount(const spec_t *s, int size, int a, int b)
{
    int m = s->count, sym = s->inplace && s->coll == C_ALLTOALLV;   /* in place: counts symmetric */
    switch (s->vpat) {
    case V_ZEROS_EVEN: if (a % 2 == 0 || (sym && b % 2 == 0)) return 0; break;
    case V_ALL_ON_ROOT: return a == s->root % size || (sym && b == s->root % size) ? m : 0;
    case V_ALL_ZERO: return 0;
    }
    uint64_t h = h3(s->seed ^ 0x55, (uint64_t)(sym ? (a < b ? a : b) : a), (uint64_t)(sym ? (a < b ? b : a) : b));
    return m ? (int)(h % (uint64_t)(m + 1)) : 0;
}

static void mismatch(const spec_t *s, int rank, int size, int64_t idx, long nbad, const char *got,
                     const char *exp, const char *what)
{
    char g[64] = "", e[64] = "";
    int seg[2][2], n = pieces(s->t, seg), gl = 0, el = 0;
    for (int k = 0; k < n; k++)
        for (int b = seg[k][1] - 1; b >= 0; b--) {
            if (got) gl += snprintf(g + gl, sizeof g - gl, "%02x", (unsigned char)got[seg[k][0] + b]);
            el += snprintf(e + el, sizeof e - el, "%02x", (unsigned char)exp[seg[k][0] + b]);
        }
    pthread_mutex_lock(&print_lock);
    printf("MISMATCH case=%s coll=%s rank=%d/%d type=%s op=%s count=%d layout=%s inplace=%d root=%d "
           "vpat=%s negdisp=%d seed=%#llx first-index=%lld wrong=%ld %s got=0x%s expected=0x%s\n",
           s->tag, cnames[s->coll], rank, size, tnames[s->t], onames[s->op], s->count, lnames[s->lay],
           s->inplace, s->root, is_v(s->coll) ? vnames[s->vpat] : "-", s->negdisp,
           (unsigned long long)s->seed, (long long)idx, nbad, what, g, e);
    fflush(stdout);
    pthread_mutex_unlock(&print_lock);
}

#define POISON 0xA5

/* Runs one call as described, checks every element of the result and the holes of
 * the receive buffer. Returns the MPI return code; *bad is set when this rank's
 * result is wrong. */
static int run_one(const spec_t *s, int *bad)
{
    int rank, size;
    MPI_Comm_rank(s->comm, &rank);
    MPI_Comm_size(s->comm, &size);
    int t = s->t, op = is_reduction(s->coll) ? s->op : O_NONE, c = s->count;
    int root = s->root % size;
    size_t es = tsize(t);
    layout_t L;
    *bad = 0;
    if (make_layout(&L, s->lay, t, op, c, s->kk)) make_layout(&L, L_CONTIG, t, op, c, 0);
    int u = L.id == L_ZERO ? s->zunits : units(&L, c);   /* units per block */
    int ce = L.id == L_ZERO ? 0 : c;                    /* elements per block as this rank sees it */

    /* block geometry of send (sb: blocks, su0: first unit of block) and receive */
    int nsb = 1, nrb = 1;
    int *scnt = calloc((size_t)size, sizeof(int)), *rcnt = calloc((size_t)size, sizeof(int));
    int *sdis = calloc((size_t)size, sizeof(int)), *rdis = calloc((size_t)size, sizeof(int));
    int64_t sunits = 0, runits = 0;
    MPI_Aint rorigin = 0;
    switch (s->coll) {
    case C_ALLREDUCE: case C_REDUCE: case C_BCAST:
        sunits = runits = u; scnt[0] = rcnt[0] = u; break;
    case C_ALLGATHER:
        nrb = size; sunits = u; runits = (int64_t)u * size;
        for (int b = 0; b < size; b++) { rcnt[b] = u; rdis[b] = b * u; }
        scnt[0] = u; break;
    case C_ALLTOALL: case C_REDUCE_SCATTER_BLOCK:
        nsb = size; nrb = s->coll == C_ALLTOALL ? size : 1;
        sunits = (int64_t)u * size; runits = (int64_t)u * nrb;
        for (int b = 0; b < size; b++) { scnt[b] = rcnt[b] = u; sdis[b] = rdis[b] = b * u; }
        break;
    case C_ALLGATHERV: case C_ALLTOALLV: case C_REDUCE_SCATTER: {
        /* v collectives use element layouts (k == 1): units == elements */
        int gap = 1;   /* one unit of hole between blocks */
        if (s->coll == C_ALLGATHERV) {
            for (int b = 0; b < size; b++) rcnt[b] = vcount(s, size, b, 0);
            scnt[0] = rcnt[rank]; sunits = scnt[0]; nrb = size;
        } else if (s->coll == C_ALLTOALLV) {
            for (int b = 0; b < size; b++) { scnt[b] = vcount(s, size, rank, b); rcnt[b] = vcount(s, size, b, rank); }
            nsb = nrb = size;
            for (int b = 0; b < size; b++) { sdis[b] = (int)sunits; sunits += scnt[b] + gap; }
        } else {
            for (int b = 0; b < size; b++) { rcnt[b] = scnt[b] = vcount(s, size, b, 0); sdis[b] = (int)sunits; sunits += rcnt[b]; }
            nsb = size; runits = rcnt[rank];
        }
        if (L.id == L_ZERO) {   /* zero-length type: any counts, 0 bytes */
            for (int b = 0; b < size; b++) { scnt[b] = rcnt[b] = s->zunits; sdis[b] = rdis[b] = 0; }
            sunits = runits = 0;
        } else if (s->coll != C_REDUCE_SCATTER) {
            /* receive blocks in rank order, or reversed at negative displacements */
            int64_t at = 0;
            for (int k = 0; k < size; k++) {
                int b = s->negdisp ? size - 1 - k : k;
                rdis[b] = (int)at; at += rcnt[b] + gap;
            }
            runits = at;
            if (s->negdisp) {
                for (int b = 0; b < size; b++) rdis[b] -= (int)runits;
                rorigin = (MPI_Aint)runits * L.ext;
            }
        }
        break;
    }
    }
    /* element e of send block b of rank r has the value gen(r, key) */
#define SKEY(b, e) ((int64_t)(b) * 1000003 + (e))
    size_t sbytes = (size_t)(sunits * L.ext) + 64, rbytes = (size_t)(runits * L.ext) + 64;
    if (s->inplace && (s->coll == C_REDUCE_SCATTER || s->coll == C_REDUCE_SCATTER_BLOCK))
        rbytes = sbytes;   /* in place: recvbuf holds the whole input */
    int empty = L.id == L_ZERO;   /* nothing to fill or check */
    char *sbuf = malloc(sbytes), *rbuf = malloc(rbytes);
    memset(sbuf, POISON, sbytes); memset(rbuf, POISON, rbytes);
    char *rb = rbuf + rorigin;
    int inplace = s->inplace && s->coll != C_BCAST;

    /* fill: elements of send blocks (in the receive buffer when in place) */
    for (int b = 0; !empty && b < nsb; b++) {
        int n; int64_t u0;
        if (is_v(s->coll)) {
            n = s->coll == C_ALLGATHERV ? scnt[0] : scnt[b];
            u0 = s->coll == C_ALLGATHERV ? 0 : sdis[b];
        } else { n = ce; u0 = (int64_t)b * u; }
        for (int64_t e = 0; e < n; e++) {
            val_t x = gen(t, op, s->seed, rank, s->coll == C_BCAST ? e : SKEY(b, e));
            if (s->coll == C_BCAST && rank != root) continue;
            char *dst;
            if (inplace && s->coll == C_ALLGATHER) dst = rb + pos(&L, (int64_t)rank * u, e);
            else if (inplace && s->coll == C_ALLGATHERV) dst = rb + pos(&L, rdis[rank], e);
            else if (inplace && s->coll == C_ALLTOALLV) dst = rb + pos(&L, rdis[b], e);
            else if (inplace && (s->coll != C_REDUCE || rank == root)) {
                if (s->coll == C_REDUCE_SCATTER) {
                    /* in place: the whole input lies in recvbuf */
                    dst = rb + pos(&L, sdis[b], e);
                } else dst = rb + pos(&L, u0, e);
            } else dst = (s->coll == C_BCAST ? rb : sbuf) + pos(&L, u0, e);
            store(t, dst, x);
        }
    }

    /* the call */
    void *sp = inplace ? MPI_IN_PLACE : sbuf;
    MPI_Datatype dt = L.dt;
    MPI_Op mop = op == O_NONE ? MPI_OP_NULL : mpi_op(op);
    int rc;
    switch (s->coll) {
    case C_ALLREDUCE: rc = MPI_Allreduce(sp, rb, u, dt, mop, s->comm); break;
    case C_REDUCE: {
        void *rp = rb;
        if (rank != root && s->recv_null) rp = NULL;
        if (rank != root) sp = sbuf;   /* MPI_IN_PLACE only at the root */
        rc = MPI_Reduce(sp, rp, u, dt, mop, root, s->comm);
        break;
    }
    case C_BCAST: rc = MPI_Bcast(rb, u, dt, root, s->comm); break;
    case C_ALLGATHER: rc = MPI_Allgather(sp, u, dt, rb, u, dt, s->comm); break;
    case C_ALLGATHERV: rc = MPI_Allgatherv(sp, scnt[0], dt, rb, rcnt, rdis, dt, s->comm); break;
    case C_ALLTOALL: rc = MPI_Alltoall(sp, u, dt, rb, u, dt, s->comm); break;
    case C_ALLTOALLV: rc = MPI_Alltoallv(sp, scnt, sdis, dt, rb, rcnt, rdis, dt, s->comm); break;
    case C_REDUCE_SCATTER: rc = MPI_Reduce_scatter(sp, rb, rcnt, dt, mop, s->comm); break;
    default: rc = MPI_Reduce_scatter_block(sp, rb, u, dt, mop, s->comm); break;
    }
    if (rc != MPI_SUCCESS) goto out;

    /* expected: a private copy of the receive buffer, element by element */
    if (corrupt_pending && rank == size - 1) {
        /* flip one value byte of the first checked element */
        int64_t e0 = -1; MPI_Aint p0 = 0;
        if (s->coll == C_REDUCE && rank != root) e0 = -1;
        else if (empty) e0 = -1;
        else if (nrb && ce > 0 && !is_v(s->coll)) { e0 = 0; p0 = pos(&L, 0, 0); }
        else if (is_v(s->coll) && rcnt[s->coll == C_REDUCE_SCATTER ? rank : 0] > 0) {
            e0 = 0; p0 = pos(&L, s->coll == C_REDUCE_SCATTER ? 0 : rdis[0], 0);
        }
        if (e0 == 0) { rb[p0] ^= 0x01; corrupt_pending = 0; }
    }
    {
        char want[32], poison[32];
        memset(poison, POISON, sizeof poison);
        int64_t first = -1; long nbad = 0; MPI_Aint fpos = 0; char fwant[32];
        char *seen = calloc(rbytes, 1);   /* bytes that hold results */
        int checks = !(s->coll == C_REDUCE && rank != root) && !empty;
        int nblk = s->coll == C_REDUCE_SCATTER || s->coll == C_REDUCE_SCATTER_BLOCK ? 1 : nrb;
        for (int b = 0; checks && b < nblk; b++) {
            int n; int64_t u0;
            if (s->coll == C_REDUCE_SCATTER) { n = rcnt[rank]; u0 = 0; }
            else if (is_v(s->coll)) { n = rcnt[b]; u0 = rdis[b]; }
            else { n = ce; u0 = (int64_t)b * u; }
            for (int64_t e = 0; e < n; e++) {
                val_t x;
                if (is_reduction(s->coll)) {
                    int64_t key;
                    if (s->coll == C_REDUCE_SCATTER) key = SKEY(rank, e);
                    else if (s->coll == C_REDUCE_SCATTER_BLOCK) key = SKEY(rank, e);
                    else key = SKEY(0, e);
                    x = gen(t, op, s->seed, 0, key);
                    for (int r = 1; r < size; r++) x = apply(t, op, x, gen(t, op, s->seed, r, key));
                } else if (s->coll == C_BCAST) x = gen(t, op, s->seed, root, e);
                else if (s->coll == C_ALLGATHER || s->coll == C_ALLGATHERV) x = gen(t, op, s->seed, b, SKEY(0, e));
                else x = gen(t, op, s->seed, b, SKEY(rank, e));
                if ((op == O_LAND || op == O_LOR || op == O_LXOR) && size > 1) x.v = x.v != 0;
                memset(want, 0, sizeof want);
                store(t, want, x);
                MPI_Aint p = rorigin + pos(&L, u0, e);
                if ((s->coll == C_REDUCE_SCATTER && inplace)) p = pos(&L, 0, e);
                memset(seen + p, 1, es);
                if (!same_value(t, rbuf + p, want)) {
                    if (first < 0) { first = e + (int64_t)b * 1000000; fpos = p; memcpy(fwant, want, es); }
                    nbad++;
                }
            }
        }
        if (first >= 0) mismatch(s, rank, size, first, nbad, rbuf + fpos, fwant, "value");
        /* holes of the receive buffer must be untouched (not for in-place inputs) */
        if (checks && !inplace && L.id != L_ZERO) {
            for (size_t p = 0; p < rbytes; p++)
                if (!seen[p] && (unsigned char)rbuf[p] != POISON) {
                    memset(poison, POISON, sizeof poison);
                    char got[32]; memcpy(got, rbuf + p, es < 32 ? es : 32);
                    mismatch(s, rank, size, (int64_t)p, 1, got, poison, "hole-written(byte-offset)");
                    nbad++;
                    break;
                }
        }
        free(seen);
        *bad = nbad > 0;
    }
out:
    free(sbuf); free(rbuf); free(scnt); free(rcnt); free(sdis); free(rdis);
    free_layout(&L);
    return rc;
}

/* ---------------------------------------------------------------- reporting */

static const char *errname(int rc, char *buf)
{
    int cls = rc, len = 0;
    if (rc == MPI_SUCCESS) return "MPI_SUCCESS";
    MPI_Error_class(rc, &cls);
    char s[MPI_MAX_ERROR_STRING];
    MPI_Error_string(cls, s, &len);
    static const struct { int c; const char *n; } tab[] = {
        { MPI_ERR_BUFFER, "MPI_ERR_BUFFER" }, { MPI_ERR_COUNT, "MPI_ERR_COUNT" },
        { MPI_ERR_TYPE, "MPI_ERR_TYPE" }, { MPI_ERR_ARG, "MPI_ERR_ARG" },
        { MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE" }, { MPI_ERR_OTHER, "MPI_ERR_OTHER" },
        { MPI_ERR_INTERN, "MPI_ERR_INTERN" }, { MPI_ERR_COMM, "MPI_ERR_COMM" },
        { MPI_ERR_ROOT, "MPI_ERR_ROOT" }, { MPI_ERR_OP, "MPI_ERR_OP" },
        { MPI_ERR_PENDING, "MPI_ERR_PENDING" }, { MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN" },
    };
    const char *n = "class";
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++) if (tab[k].c == cls) n = tab[k].n;
    sprintf(buf, "%s(%d: %s)", n, cls, s);
    return buf;
}
static int err_class(int rc) { int c = rc; if (rc) MPI_Error_class(rc, &c); return c; }

/* Counts this rank's failures over world with point-to-point only (the collectives
 * are under test); rank 0 prints "fault_check: CASE PASS|FAIL ...". */
static int finish(const char *name, long calls, long nbad, double secs, const char *extra)
{
    int rank, size; long tot = nbad, x;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        for (int r = 1; r < size; r++) { MPI_Recv(&x, 1, MPI_LONG, r, 9901, MPI_COMM_WORLD, MPI_STATUS_IGNORE); tot += x; }
        printf("fault_check: %s %s np=%d calls=%ld wrong=%ld (rank-calls) %.1fs%s%s\n", name,
               tot ? "FAIL" : "PASS", size, calls, tot, secs, extra ? " " : "", extra ? extra : "");
        fflush(stdout);
        for (int r = 1; r < size; r++) MPI_Send(&tot, 1, MPI_LONG, r, 9902, MPI_COMM_WORLD);
    } else {
        MPI_Send(&nbad, 1, MPI_LONG, 0, 9901, MPI_COMM_WORLD);
        MPI_Recv(&tot, 1, MPI_LONG, 0, 9902, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return tot ? 1 : 0;
}

/* Runs a spec and counts a wrong value or a non-success rc as one failure. */
static long check(const spec_t *s)
{
    int bad = 0, rc = run_one(s, &bad);
    if (rc != MPI_SUCCESS) {
        char b[256];
        int rank; MPI_Comm_rank(s->comm, &rank);
        pthread_mutex_lock(&print_lock);
        printf("ERROR case=%s coll=%s rank=%d type=%s op=%s count=%d layout=%s inplace=%d rc=%s\n",
               s->tag, cnames[s->coll], rank, tnames[s->t], onames[s->op], s->count, lnames[s->lay],
               s->inplace, errname(rc, b));
        fflush(stdout);
        pthread_mutex_unlock(&print_lock);
        return 1;
    }
    if (g_verbose > 1) {
        printf("ok %s %s %s %s n=%d lay=%s ip=%d\n", s->tag, cnames[s->coll], tnames[s->t],
               onames[s->op], s->count, lnames[s->lay], s->inplace);
    }
    return bad;
}

/* ---------------------------------------------------------------- correctness cases */

static uint64_t g_seed = 0x5eed;
/* -R: derived datatypes in reductions (predefined op on a derived type of one
 * predefined type). Open MPI 4.1's binding refuses them with MPI_ERR_OP while
 * mpi_param_check is on, so they are a case of their own, run without it. */
static int g_red_derived;
static long g_n = -1;
static int g_count = 1000;

static spec_t base_spec(const char *tag, MPI_Comm comm)
{
    spec_t s; memset(&s, 0, sizeof s);
    s.tag = tag; s.comm = comm; s.t = T_INT; s.op = O_SUM; s.count = g_count; s.seed = g_seed;
    return s;
}

/* every served collective x {int,double} x {sum,max} x in place; counts 0,1,7,count */
static long basic_round(const char *tag, MPI_Comm comm, long *calls, uint64_t seed)
{
    long bad = 0;
    int counts[4] = { 0, 1, 7, g_count };
    for (int c = 0; c < NC; c++)
        for (int ti = 0; ti < 2; ti++)
            for (int oi = 0; oi < 2; oi++)
                for (int ip = 0; ip < 2; ip++)
                    for (int ni = 0; ni < 4; ni++) {
                        if (!is_reduction(c) && oi) continue;
                        spec_t s = base_spec(tag, comm);
                        s.coll = c; s.t = ti ? T_DOUBLE : T_INT; s.op = oi ? O_MAX : O_SUM;
                        s.inplace = ip; s.count = counts[ni]; s.root = ni + ip;
                        s.seed = seed ^ h3(c, ti * 4 + oi * 2 + ip, ni);
                        bad += check(&s); (*calls)++;
                    }
    return bad;
}

static int case_basic(void)
{
    long calls = 0, bad; double t0 = MPI_Wtime();
    bad = basic_round("basic", MPI_COMM_WORLD, &calls, g_seed);
    return finish("basic", calls, bad, MPI_Wtime() - t0, NULL);
}

static int case_zero(void)
{
    long calls = 0, bad = 0; double t0 = MPI_Wtime();
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* pattern 0: even ranks zero-length type x 5, odd ranks 0 x MPI_INT; 1: the reverse;
     * 2: every rank the zero-length type (0 bytes in total, counts > 0) */
    for (int pat = 0; pat < 3; pat++)
        for (int c = 0; c < NC; c++)
            for (int ip = 0; ip < 2; ip++) {
                if (is_reduction(c) != g_red_derived) continue;
                spec_t s = base_spec("zero", MPI_COMM_WORLD);
                s.coll = c; s.count = 0; s.inplace = ip; s.root = 1;
                int zl = pat == 2 || (rank % 2) == pat;
                s.lay = zl ? L_ZERO : L_CONTIG; s.zunits = 5;
                if (c == C_REDUCE_SCATTER) { s.lay = L_CONTIG; s.vpat = V_ZEROS_EVEN; s.count = 3; }
                else if (is_v(c)) s.vpat = V_ALL_ZERO;   /* counts 0, or zero-length type x 5 */
                s.seed = g_seed ^ h3(pat, c, ip);
                bad += check(&s); calls++;
                /* a validated call right after: any stray message from the empty one
                 * would be matched here */
                spec_t n = base_spec("zero-next", MPI_COMM_WORLD);
                n.coll = c; n.count = 257 + c; n.inplace = ip; n.root = 0; n.t = T_DOUBLE;
                n.seed = s.seed ^ 1;
                bad += check(&n); calls++;
                n.coll = C_ALLREDUCE; n.count = 1000; n.seed ^= 2;
                bad += check(&n); calls++;
            }
    return finish(g_red_derived ? "zero-reduce" : "zero", calls, bad, MPI_Wtime() - t0, NULL);
}

static int case_negdisp(void)
{
    long calls = 0, bad = 0; double t0 = MPI_Wtime();
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    int counts[3] = { 1, 100, g_count };
    for (int c = 0; c < NC; c++) {
        if (!is_v(c)) continue;
        for (int ni = 0; ni < 3; ni++)
            for (int vp = 0; vp < NV; vp++)
                for (int ip = 0; ip < 2; ip++)
                    for (int ti = 0; ti < 2; ti++) {
                        spec_t s = base_spec("negdisp", MPI_COMM_WORLD);
                        s.coll = c; s.count = counts[ni]; s.vpat = vp; s.inplace = ip;
                        s.t = ti ? T_DOUBLE : T_INT; s.root = size - 1;
                        /* one rank only: rank 1 (rank 0 at np 1) */
                        s.negdisp = c != C_REDUCE_SCATTER && rank == (size > 1 ? 1 : 0);
                        s.seed = g_seed ^ h3(c, ni * 16 + vp, ip * 2 + ti);
                        if (c == C_REDUCE_SCATTER && vp == V_ALL_ZERO) continue;  /* binding returns early */
                        bad += check(&s); calls++;
                    }
    }
    return finish("negdisp", calls, bad, MPI_Wtime() - t0, NULL);
}

static int case_layouts(void)
{
    long calls = 0, bad = 0; double t0 = MPI_Wtime();
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    int counts[3] = { 1, 6, 6 * ((g_count + 5) / 6) };
    /* rank 0 contiguous; rank r > 0 a different layout per (r, round) */
    static const int whole[] = { L_VECTOR, L_INDEXED, L_RESIZED, L_STRUCT1, L_SUBARRAY, L_CONTIGK, L_HVEC1 };
    static const int elem[] = { L_RESIZED, L_STRUCT1, L_HVEC1 };
    int nround = 7;
    for (int round = 0; round < nround; round++)
        for (int c = 0; c < NC; c++)
            for (int ni = 0; ni < 3; ni++)
                for (int ti = 0; ti < 2; ti++) {
                    if (is_reduction(c) != g_red_derived) continue;
                    spec_t s = base_spec("layouts", MPI_COMM_WORLD);
                    s.coll = c; s.count = counts[ni]; s.t = ti ? T_DOUBLE : T_INT; s.op = O_SUM;
                    s.root = round; s.inplace = round % 3 == 2;
                    s.kk = counts[ni] % 3 == 0 ? 3 : 1;
                    if (rank == 0) s.lay = L_CONTIG;
                    else if (is_v(c)) s.lay = elem[(rank + round) % 3];
                    else s.lay = whole[(rank + round) % 7];
                    s.seed = g_seed ^ h3(round, c, ni * 2 + ti);
                    bad += check(&s); calls++;
                }
    return finish(g_red_derived ? "layouts-reduce" : "layouts", calls, bad, MPI_Wtime() - t0, NULL);
}

/* random: the description of call i is drawn from (seed, i) alone, the same on every
 * rank; only the layout may differ per rank (-L mixed). */
static int g_lmode = 2;
static int g_zero;        /* -Z: zero-length derived types too (count 0 calls) */   /* 0 contig, 1 same layout on all ranks, 2 per rank */
static int case_random(void)
{
    long n = g_n < 0 ? 10000 : g_n, calls = 0, bad = 0;
    double t0 = MPI_Wtime(), last = t0;
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) { printf("fault_check: random seed=%#llx calls=%ld layouts=%s\n", (unsigned long long)g_seed, n,
                            g_lmode == 0 ? "contig" : g_lmode == 1 ? "same" : "mixed"); fflush(stdout); }
    static const int sizes[] = { 0, 1, 2, 3, 5, 7, 13, 31, 64, 100, 127, 255, 1000, 1023, 4099, 20011 };
    const int nsizes = sizeof sizes / sizeof sizes[0];
    for (long i = 0; i < n; i++) {
        uint64_t h = h3(g_seed, (uint64_t)i, 77);
        spec_t s = base_spec("random", MPI_COMM_WORLD);
        s.seed = h;
        s.coll = (int)(mix(h ^ 1) % NC);
        s.t = (int)(mix(h ^ 2) % NT);
        /* big sizes rarely (they cost most) */
        int si = (int)(mix(h ^ 3) % (uint64_t)nsizes);
        if (sizes[si] >= 1000 && mix(h ^ 4) % 8) si = (int)(mix(h ^ 5) % 12);   /* large: 1 in 64 */
        s.count = sizes[si];
        if (is_reduction(s.coll)) {
            int legal[NO], nl = 0;
            for (int o = 1; o < NO; o++) if (op_legal(s.t, o)) legal[nl++] = o;
            s.op = legal[mix(h ^ 6) % (uint64_t)nl];
        } else s.op = O_NONE;
        s.root = (int)(mix(h ^ 7) % (uint64_t)size);
        s.inplace = mix(h ^ 8) % 3 == 0;
        s.vpat = (int)(mix(h ^ 9) % 8); if (s.vpat >= NV) s.vpat = V_RANDOM;
        if (s.coll == C_REDUCE_SCATTER && s.vpat == V_ALL_ZERO) s.vpat = V_RANDOM;
        s.recv_null = mix(h ^ 10) % 4 == 0;
        s.negdisp = mix(h ^ 11 ^ (uint64_t)rank << 16) % 4 == 0 && g_lmode == 2;
        /* layout: contig half the time; same for all ranks (mode 1) or per rank (mode 2) */
        uint64_t lh = g_lmode == 2 ? h3(h, (uint64_t)rank, 12) : mix(h ^ 12);
        s.lay = L_CONTIG;
        if (g_lmode && lh % 2 && (g_red_derived || !is_reduction(s.coll))) {
            static const int any[] = { L_RESIZED, L_STRUCT1, L_HVEC1, L_VECTOR, L_INDEXED, L_SUBARRAY, L_CONTIGK };
            s.lay = any[(lh >> 8) % 7];
            if (is_v(s.coll) && layout_whole(s.lay)) s.lay = L_RESIZED;
            if (s.lay == L_CONTIGK) s.kk = is_v(s.coll) ? 1 : s.count % 3 == 0 ? 3 : s.count % 2 == 0 ? 2 : 1;
        }
        if (s.count == 0 && g_zero && !is_v(s.coll) && g_lmode && (lh >> 16) % 2 && (g_red_derived || !is_reduction(s.coll))) { s.lay = L_ZERO; s.zunits = 1 + (int)((lh >> 20) % 5); }
        if (s.count == 0 && s.lay != L_ZERO) s.lay = L_CONTIG;
        long b = check(&s);
        bad += b; calls++;
        if (b && bad >= 20) { if (rank == 0) printf("fault_check: random: stopping after 20 failures on rank 0\n"); break; }
        if (g_verbose && rank == 0 && MPI_Wtime() - last > 10) {
            last = MPI_Wtime(); printf("fault_check: random: %ld calls, %.0fs\n", i + 1, last - t0); fflush(stdout);
        }
    }
    char extra[64]; snprintf(extra, sizeof extra, "seed=%#llx", (unsigned long long)g_seed);
    return finish("random", calls, bad, MPI_Wtime() - t0, extra);
}

/* threads: one communicator per thread, each running validated rounds */
typedef struct { MPI_Comm comm; int id; long calls, bad; } thr_t;
static void *thread_main(void *arg)
{
    thr_t *th = arg;
    for (long r = 0; r < (g_n < 0 ? 3 : g_n); r++)
        th->bad += basic_round("threads", th->comm, &th->calls, g_seed ^ h3(th->id, r, 99));
    return NULL;
}
static int g_threads = 2;
static int case_threads(int provided)
{
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("fault_check: threads SKIP MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        return 77;
    }
    double t0 = MPI_Wtime();
    thr_t th[16]; pthread_t tid[16];
    int nt = g_threads > 16 ? 16 : g_threads;
    for (int k = 0; k < nt; k++) { memset(&th[k], 0, sizeof th[k]); th[k].id = k; MPI_Comm_dup(MPI_COMM_WORLD, &th[k].comm); }
    for (int k = 0; k < nt; k++) pthread_create(&tid[k], NULL, thread_main, &th[k]);
    long calls = 0, bad = 0;
    for (int k = 0; k < nt; k++) { pthread_join(tid[k], NULL); calls += th[k].calls; bad += th[k].bad; }
    for (int k = 0; k < nt; k++) MPI_Comm_free(&th[k].comm);
    char extra[32]; snprintf(extra, sizeof extra, "threads=%d", nt);
    return finish("threads", calls, bad, MPI_Wtime() - t0, extra);
}

/* ---------------------------------------------------------------- error cases */

static double g_limit = 20;   /* -T: seconds within which every rank must return */

static int say(const char *name, int rank, int ok, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int say(const char *name, int rank, int ok, const char *fmt, ...)
{
    char msg[512]; va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
    printf("fault_check: %s rank %d: %s %s\n", name, rank, ok ? "OK" : "BAD", msg);
    fflush(stdout);
    return ok ? 0 : 1;
}

static int case_null(const char *name)
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int n = 4096;   /* 32 KiB: above small_msg_size, so strata serves it (see coll_strata_host_handback) */
    int who = size > 1 ? 1 : 0, root = 0;
    if (!strcmp(name, "null-bcast-root")) who = root;
    double *a = malloc(sizeof(double) * (size_t)n * size), *b = malloc(sizeof(double) * (size_t)n * size);
    for (int k = 0; k < n * size; k++) { a[k] = rank + 1; b[k] = rank == root && !strncmp(name, "null-bcast", 10) ? 7 : -1; }
    double *sa = rank == who && !strcmp(name, "null-allreduce-send") ? NULL : a;
    double *rb = rank == who && strcmp(name, "null-allreduce-send") ? NULL : b;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int rc;
    if (!strncmp(name, "null-allreduce", 14)) rc = MPI_Allreduce(sa, rb, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (!strncmp(name, "null-bcast", 10)) rc = MPI_Bcast(rank == who ? NULL : b, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    else if (!strcmp(name, "null-allgather")) rc = MPI_Allgather(a, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, MPI_COMM_WORLD);
    else rc = MPI_Alltoall(a, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0;
    char eb[300]; int bad;
    if (rank == who) {
        bad = say(name, rank, err_class(rc) == MPI_ERR_BUFFER && dt < g_limit,
                  "(the rank with the NULL buffer) rc=%s after %.2fs; want MPI_ERR_BUFFER within %.0fs%s",
                  errname(rc, eb), dt, g_limit,
                  rc == MPI_SUCCESS && sa == NULL ? ": a NULL send buffer was taken as MPI_IN_PLACE" : "");
    } else {
        int wrong = 0;
        if (rc == MPI_SUCCESS && !strncmp(name, "null-allreduce", 14)) {
            double want = size * (size + 1) / 2.0;
            for (int k = 0; k < n; k++) if (b[k] != want) { wrong++; }
        }
        /* A bcast peer that never waits for the NULL rank (the root, or a rank the data
         * does not reach through it) may finish: with the root's data, exactly. */
        int bcast_done = 0;
        if (rc == MPI_SUCCESS && !strncmp(name, "null-bcast", 10)) {
            bcast_done = 1;
            for (int k = 0; k < n; k++) if (b[k] != 7) { bcast_done = 0; wrong++; }
        }
        bad = say(name, rank, (rc != MPI_SUCCESS || bcast_done) && dt < g_limit,
                  "(peer of rank %d) rc=%s after %.2fs; want an error within %.0fs%s%s", who, errname(rc, eb), dt,
                  g_limit, wrong ? " (and the result is wrong)" : "",
                  bcast_done ? " (or, as here, the root's data: this rank never waited for it)" : "");
    }
    free(a); free(b);
    return bad;
}

static int case_mismatch(int expect_check)
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *name = expect_check ? "mismatch-check" : "mismatch";
    MPI_Comm dup, comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);   /* the one the wrong call spoils */
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    /* a correct call first, so that the team is set up */
    spec_t s = base_spec(name, comm);
    s.coll = C_ALLREDUCE; s.t = T_DOUBLE; s.count = 1000; s.seed = g_seed ^ 3;
    int bad = 0, wrong, rc, nbad = 0;
    char eb[300];
    rc = run_one(&s, &wrong);
    if (rc || wrong) nbad += say(name, rank, 0, "the correct call before the wrong one failed: rc=%s wrong=%d", errname(rc, eb), wrong);
    int n = rank == 0 ? 100000 : 200000;
    double *a = malloc(sizeof(double) * 200000), *b = malloc(sizeof(double) * 200000);
    for (int k = 0; k < 200000; k++) a[k] = 1;
    double t0 = MPI_Wtime();
    rc = MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, comm);
    double dt = MPI_Wtime() - t0;
    if (expect_check)
        nbad += say(name, rank, err_class(rc) == MPI_ERR_TRUNCATE,
                    "mismatched call (count %d here) rc=%s after %.2fs; want MPI_ERR_TRUNCATE on every rank", n,
                    errname(rc, eb), dt);
    else
        say(name, rank, 1, "mismatched call (count %d here) rc=%s after %.2fs (any rc)", n, errname(rc, eb), dt);
    free(a); free(b);
    /* the next correct call on the same communicator: exact, or refused */
    s.seed ^= 5;
    rc = run_one(&s, &wrong);
    if (rc == MPI_SUCCESS) bad = wrong;
    nbad += say(name, rank, rc == MPI_SUCCESS ? !wrong : 1, "next correct call on the same communicator: rc=%s%s",
                errname(rc, eb), rc ? " (refused: must be so on every rank)" : wrong ? ", WRONG values" : ", exact");
    /* and on a communicator dup'ed before the wrong call: exact */
    s.comm = dup; s.seed ^= 7;
    rc = run_one(&s, &wrong);
    nbad += say(name, rank, rc == MPI_SUCCESS && !wrong, "next correct call on a communicator dup'ed before: rc=%s%s",
                errname(rc, eb), wrong ? ", WRONG values" : rc ? "" : ", exact");
    (void)bad;
    MPI_Comm_free(&dup);
    MPI_Comm_free(&comm);
    return nbad ? 1 : 0;
}

/* later-a2av / later-bcast: one mismatched call (alltoallv: rank 0 sends rank 1 fewer
 * elements than rank 1 expects; bcast: rank 1 passes a smaller count than the root),
 * made once strata serves the communicator, then 1100 correct calls of the same
 * collective on it (more than the 1023 calls after which strata's call tags repeat).
 * Each later call must be exact or refused; none may return success with wrong data.
 * Before a rank that saw no error learned of its peer's failure before its next call,
 * every later call was wrong on some rank (the ranks ran them one call apart). */
static int case_mismatch_later(const char *name)
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int a2av = !strcmp(name, "later-a2av"), n = 16384, calls = 1100;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int *a = malloc(sizeof(int) * (size_t)n * size), *b = malloc(sizeof(int) * (size_t)n * size);
    int *sc = malloc(sizeof(int) * size), *rcn = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size),
        *rd = malloc(sizeof(int) * size);
    for (int i = 0; i < size; ++i) { sc[i] = rcn[i] = n; sd[i] = rd[i] = i * n; }
    char eb[300];
    int rc, nbad = 0, wrong = 0, refused = 0, first_wrong = -1;
    /* served calls first (past coll_strata_lazy_calls), so that strata serves the wrong one */
    for (int w = 0; w < 8; ++w) {
        if (a2av) rc = MPI_Alltoallv(a, sc, sd, MPI_INT, b, rcn, rd, MPI_INT, comm);
        else rc = MPI_Bcast(a, n, MPI_INT, 0, comm);
        if (rc) nbad += say(name, rank, 0, "a correct call before the wrong one failed: rc=%s", errname(rc, eb));
    }
    if (a2av) {
        if (rank == 0) sc[1] = n - 64;
        rc = MPI_Alltoallv(a, sc, sd, MPI_INT, b, rcn, rd, MPI_INT, comm);
        sc[1] = n;
    } else {
        rc = MPI_Bcast(a, rank == 1 ? n - 1024 : n, MPI_INT, 0, comm);
    }
    say(name, rank, 1, "mismatched call rc=%s (any rc)", errname(rc, eb));
    for (int it = 0; it < calls; ++it) {
        for (int i = 0; i < n * size; ++i) { a[i] = rank * 1000003 + it * 7 + i; b[i] = -1; }
        int bad = 0;
        if (a2av) {
            rc = MPI_Alltoallv(a, sc, sd, MPI_INT, b, rcn, rd, MPI_INT, comm);
            for (int p = 0; p < size && rc == MPI_SUCCESS && !bad; ++p)
                for (int i = 0; i < n; ++i)
                    if (b[p * n + i] != p * 1000003 + it * 7 + rank * n + i) { bad = 1; break; }
        } else {
            rc = MPI_Bcast(a, n, MPI_INT, 0, comm);
            for (int i = 0; i < n && rc == MPI_SUCCESS; ++i)
                if (a[i] != it * 7 + i) { bad = 1; break; }
        }
        if (rc != MPI_SUCCESS) ++refused;
        if (bad) { ++wrong; if (first_wrong < 0) first_wrong = it; }
    }
    nbad += say(name, rank, wrong == 0, "%d later calls: %d exact, %d refused, %d returned success with WRONG values%s",
                calls, calls - refused - wrong, refused, wrong, first_wrong >= 0 ? " (from the first after it on)" : "");
    free(a); free(b); free(sc); free(rcn); free(sd); free(rd);
    MPI_Comm_free(&comm);
    return nbad ? 1 : 0;
}

/* kinds: one mismatched call of each kind, each on a communicator of its own, made
 * once strata serves it (after 8 correct calls): count (allreduce, the last rank passes
 * half), datatype (allreduce, MPI_FLOAT on the last rank, MPI_INT elsewhere: the same
 * size), op (allreduce, MPI_MAX on the last rank), root (bcast, root 1 on the last
 * rank, 0 elsewhere), pairs (alltoallv: rank 0 sends the last rank 64 ints fewer than
 * it receives from rank 0) and counts (allgatherv: the last rank's recvcounts[0] is 64
 * ints short); the last rank enters it 0.3 s late. -A: every rank must return an error from it (the docs promise it with
 * coll_strata_check_args and on one node), and the next correct call of the same kind
 * on that communicator must be exact on every rank. Else any rc, and after a barrier
 * the next call goes to a communicator dup'ed before (across nodes a rank that returned
 * success may run the next call a call apart from a peer that failed: docs/users.md). */
static int g_all_err = 0, g_nb = 0, g_untouched = 0;   /* g_nb: 1 nonblocking, 2 persistent */
static int g_start_rc[2];   /* persistent: each start's rc */
enum { K_COUNT, K_DTYPE, K_OP, K_ROOT, K_PAIRS, K_COUNTS, NK };
static const char *knames[NK] = { "count", "datatype", "op", "root", "pairs", "counts" };

/* Persistent collectives: MPI 4's MPI_<Coll>_init (Open MPI 5.0 has them, though it
 * reports MPI 3.1), else Open MPI 4.1's MPIX_<Coll>_init (<mpi-ext.h>, pcollreq). */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define KIND_PINIT(Up, ...) MPI_##Up##_init(__VA_ARGS__, MPI_INFO_NULL, &rq)
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define KIND_PINIT(Up, ...) MPIX_##Up##_init(__VA_ARGS__, MPI_INFO_NULL, &rq)
#else
#define KIND_PINIT(Up, ...) MPI_ERR_UNSUPPORTED_OPERATION
#endif
/* The call in the form nb says: blocking, MPI_I<coll> or the persistent init. */
#define KIND_ISSUE(Up, low, ...) \
    (nb == 2 ? KIND_PINIT(Up, __VA_ARGS__) : nb ? MPI_I##low(__VA_ARGS__, &rq) : MPI_##Up(__VA_ARGS__))

static void kind_fill(int rank, int size, int n, int *a, int *b)
{
    for (int i = 0; i < size * n; ++i) { a[i] = rank * 1000 + i % 1000; b[i] = -1; }
}

/* Whether the result of a correct call of kind k is exact. */
static int kind_exact(int k, int rank, int size, int n, const int *a, const int *b)
{
    switch (k) {
    case K_COUNT: case K_DTYPE: case K_OP:
        for (int i = 0; i < n; ++i) if (b[i] != 1000 * size * (size - 1) / 2 + size * (i % 1000)) return 0;
        return 1;
    case K_ROOT:
        for (int i = 0; i < n; ++i) if (a[i] != i % 1000) return 0;
        return 1;
    case K_PAIRS:
        for (int i = 0; i < size * n; ++i) if (b[i] != (i / n) * 1000 + (rank * n + i % n) % 1000) return 0;
        return 1;
    default:
        for (int i = 0; i < size * n; ++i) if (b[i] != (i / n) * 1000 + (i % n) % 1000) return 0;
        return 1;
    }
}

/* Whether a and b are as kind_fill left them: the call moved nothing here. */
static int kind_untouched(int rank, int size, int n, const int *a, const int *b)
{
    for (int i = 0; i < size * n; ++i) if (a[i] != rank * 1000 + i % 1000 || b[i] != -1) return 0;
    return 1;
}

/* One call of kind k (nb: its nonblocking form, waited for; 2: a persistent request,
 * started twice, fresh inputs each time); bad: the mismatched one. Returns rc (of a
 * persistent request: MPI_SUCCESS if any start succeeded, so that a start that returns
 * success from a mismatched call is seen); *wrong: a correct call's result is not
 * exact; *moved (bad only): the call wrote a buffer of this rank. */
static int kind_call(int k, int bad, int nb, MPI_Comm comm, int n, int *a, int *b, int *wrong, int *moved)
{
    int rank, size; MPI_Comm_rank(comm, &rank); MPI_Comm_size(comm, &size);
    const int last = rank == size - 1 && bad;
    int rc, cnt[64], dsp[64], scnt[64];
    MPI_Request rq = MPI_REQUEST_NULL;
    kind_fill(rank, size, n, a, b);
    for (int r = 0; r < size; ++r) { cnt[r] = scnt[r] = n; dsp[r] = r * n; }
    *wrong = *moved = 0;
    switch (k) {
    case K_COUNT: case K_DTYPE: case K_OP: {
        const int c = last && k == K_COUNT ? n / 2 : n;
        const MPI_Datatype t = last && k == K_DTYPE ? MPI_FLOAT : MPI_INT;
        const MPI_Op op = last && k == K_OP ? MPI_MAX : MPI_SUM;
        rc = KIND_ISSUE(Allreduce, allreduce, a, b, c, t, op, comm);
        break;
    }
    case K_ROOT:
        rc = KIND_ISSUE(Bcast, bcast, a, n, MPI_INT, last ? 1 : 0, comm);
        break;
    case K_PAIRS:
        if (bad && rank == 0) scnt[size - 1] = n - 64;
        rc = KIND_ISSUE(Alltoallv, alltoallv, a, scnt, dsp, MPI_INT, b, cnt, dsp, MPI_INT, comm);
        break;
    default:
        if (last) cnt[0] = n - 64;
        rc = KIND_ISSUE(Allgatherv, allgatherv, a, n, MPI_INT, b, cnt, dsp, MPI_INT, comm);
        break;
    }
    if (nb == 1 && rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    if (nb == 2 && rc == MPI_SUCCESS) {
        int any_ok = 0, last_err = MPI_SUCCESS;
        g_start_rc[1] = -1;
        /* Open MPI's MPI_Wait frees a request that ended with an error, persistent too */
        for (int start = 0; start < 2 && rq != MPI_REQUEST_NULL; ++start) {
            if (start > 0) kind_fill(rank, size, n, a, b);
            int src = MPI_Start(&rq);
            if (src == MPI_SUCCESS) src = MPI_Wait(&rq, MPI_STATUS_IGNORE);
            g_start_rc[start] = src;
            if (src == MPI_SUCCESS) any_ok = 1; else last_err = src;
            if (bad) *moved |= !kind_untouched(rank, size, n, a, b);
            else if (src == MPI_SUCCESS) *wrong |= !kind_exact(k, rank, size, n, a, b);
        }
        if (rq != MPI_REQUEST_NULL) MPI_Request_free(&rq);
        return any_ok && (bad || last_err == MPI_SUCCESS) ? MPI_SUCCESS : last_err;
    }
    if (bad) *moved = !kind_untouched(rank, size, n, a, b);
    else if (rc == MPI_SUCCESS) *wrong = !kind_exact(k, rank, size, n, a, b);
    return rc;
}

static int case_kinds(void)
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 16384;
    int *a = malloc(sizeof(int) * (size_t)n * size), *b = malloc(sizeof(int) * (size_t)n * size);
    int nbad = 0, wrong, moved, rc;
    char eb[300], name[32];
    /* Open MPI 4.1's MPI_Wait reports a collective request's error to MPI_COMM_WORLD's
     * handler, not to the request's communicator's */
    if (g_nb) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int k = 0; k < NK && size <= 64; ++k) {
        snprintf(name, sizeof name, "kinds-%s", knames[k]);
        MPI_Comm comm, spare;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_dup(MPI_COMM_WORLD, &spare);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        /* served calls first (past coll_strata_lazy_calls), so that strata serves the wrong one */
        for (int w = 0; w < 8; ++w) {
            rc = kind_call(k, 0, w >= 5 ? g_nb : 0, comm, n, a, b, &wrong, &moved);  /* blocking ones set up (lazy_calls) */
            if (rc || wrong) nbad += say(name, rank, 0, "a correct call before the wrong one: rc=%s%s", errname(rc, eb),
                                         wrong ? ", WRONG values" : "");
        }
        /* the last rank comes late: a rank that needs nothing from it (a bcast root) must
         * not end the mismatched call before it has compared what the last rank passed */
        if (rank == size - 1) usleep(300000);
        double t0 = MPI_Wtime();
        rc = kind_call(k, 1, g_nb, comm, n, a, b, &wrong, &moved);
        double dt = MPI_Wtime() - t0;
        char starts[700] = "", eb2[300];
        if (g_nb == 2) snprintf(starts, sizeof starts, " (start 1: %s; start 2: %s)", errname(g_start_rc[0], eb),
                                g_start_rc[1] == -1 ? "none, the request was freed with its error" :
                                errname(g_start_rc[1], eb2));
        nbad += say(name, rank, (!g_all_err || rc != MPI_SUCCESS) && !(g_untouched && moved),
                    "mismatched call rc=%s after %.2fs%s%s%s", errname(rc, eb), dt, starts, g_all_err ? "; want an error on every rank" : " (any rc)",
                    !g_untouched ? "" : moved ? "; it MOVED data into this rank's buffers" : ", buffers untouched");
        if (!g_all_err) MPI_Barrier(MPI_COMM_WORLD);
        rc = kind_call(k, 0, g_nb, g_all_err ? comm : spare, n, a, b, &wrong, &moved);
        nbad += say(name, rank, rc == MPI_SUCCESS && !wrong, "next correct call on %s: rc=%s%s",
                    g_all_err ? "the same communicator" : "a communicator dup'ed before", errname(rc, eb),
                    wrong ? ", WRONG values" : rc ? "" : ", exact");
        MPI_Comm_free(&spare);
        MPI_Comm_free(&comm);
    }
    free(a); free(b);
    return nbad ? 1 : 0;
}

static double g_sleep = 10;
/* straddle: under coll_strata_check_args with the built-in host rules on (host_handback,
 * the default), an allreduce whose count is small on rank 0 and large elsewhere: the
 * rules would hand rank 0's call back and serve the others', so the agreement must come
 * first. Every rank must get an error, and none may hang in the replaced component.
 * With -N the mismatched call is an MPI_Iallreduce (agreed at the head of the queue,
 * before the rules look at its size), with -P a persistent one started once.
 * straddle-lazy: the same call first on a fresh communicator, where rank 0's count is
 * within coll_strata_lazy_calls' small calls and the others' is not (a communicator
 * not set up at its creation: coll_strata_setup_at_creation false). */
static int case_straddle(int fresh)
{
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (g_nb) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  /* as in kinds: a request's error */
    enum { kBig = 100000 };
    double *a = calloc(kBig, sizeof *a), *b = calloc(kBig, sizeof *b);
    /* first, matched calls past coll_strata_lazy_calls: the team is set up */
    int rc = MPI_SUCCESS;
    for (int i = 0; i < 6 && !fresh && rc == MPI_SUCCESS; ++i) rc = MPI_Allreduce(a, b, 4, MPI_DOUBLE, MPI_SUM, comm);
    char eb[300];
    if (rc != MPI_SUCCESS) return say("straddle", rank, 0, "a matched call failed: rc=%s", errname(rc, eb));
    const int n = rank == 0 ? 2 : kBig;
    double t0 = MPI_Wtime();
    if (g_nb) {
        MPI_Request rq = MPI_REQUEST_NULL;
        rc = g_nb == 2 ? KIND_PINIT(Allreduce, a, b, n, MPI_DOUBLE, MPI_SUM, comm)
                       : MPI_Iallreduce(a, b, n, MPI_DOUBLE, MPI_SUM, comm, &rq);
        if (rc == MPI_SUCCESS && g_nb == 2) rc = MPI_Start(&rq);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
        if (g_nb == 2 && rq != MPI_REQUEST_NULL) MPI_Request_free(&rq);
    } else {
        rc = MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, comm);
    }
    int bad = say("straddle", rank, rc != MPI_SUCCESS, "count %d: rc=%s after %.2fs (want an error)", n,
                  errname(rc, eb), MPI_Wtime() - t0);
    free(a);
    free(b);
    MPI_Comm_free(&comm);
    return bad;
}

static int case_deadline(void)
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    spec_t s = base_spec("deadline", comm);
    /* 32 KiB: above small_msg_size, so strata serves it (small calls go to the replaced
     * component by the built-in host rules, and no deadline of strata's bounds its waits) */
    s.coll = C_ALLREDUCE; s.t = T_DOUBLE; s.count = 4096;
    int wrong, rc = run_one(&s, &wrong);   /* set up, all present */
    char eb[300];
    if (rc || wrong) return say("deadline", rank, 0, "the first call failed: rc=%s wrong=%d", errname(rc, eb), wrong);
    int sleeper = size - 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == sleeper) { printf("fault_check: deadline rank %d: sleeping %.0fs\n", rank, g_sleep); fflush(stdout); usleep((useconds_t)(g_sleep * 1e6)); }
    double t0 = MPI_Wtime();
    s.seed ^= 9;
    rc = run_one(&s, &wrong);
    double dt = MPI_Wtime() - t0;
    int bad;
    if (rank == sleeper)
        bad = say("deadline", rank, 1, "(the late rank) rc=%s after %.2fs (any rc, no hang)", errname(rc, eb), dt);
    else
        bad = say("deadline", rank, rc != MPI_SUCCESS && dt >= g_limit * 0.8 && dt < g_limit + 5,
                  "(waits for rank %d) rc=%s after %.2fs; want an error after about %.0fs", sleeper, errname(rc, eb), dt,
                  g_limit);
    /* Recovery: communicators made from the failed one (Open MPI makes them with the
     * parent's own collectives) work and are exact, the failed one can be freed, and
     * MPI_Finalize is clean (the runner checks the exit). */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm made[4] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
    const char *how[4] = {"dup", "split", "split_type", "create_group"};
    MPI_Group group;
    int rcs[4];
    rcs[0] = MPI_Comm_dup(comm, &made[0]);
    rcs[1] = MPI_Comm_split(comm, 0, size - rank, &made[1]);
    rcs[2] = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &made[2]);
    MPI_Comm_group(comm, &group);
    rcs[3] = MPI_Comm_create_group(comm, group, 5, &made[3]);
    MPI_Group_free(&group);
    for (int k = 0; k < 4; k++) {
        if (rcs[k] != MPI_SUCCESS || made[k] == MPI_COMM_NULL) {
            bad |= say("deadline", rank, 0, "MPI_Comm_%s of the failed communicator: rc=%s", how[k], errname(rcs[k], eb));
            continue;
        }
        MPI_Comm_set_errhandler(made[k], MPI_ERRORS_RETURN);
        spec_t r = base_spec("deadline", made[k]);
        r.coll = C_ALLREDUCE; r.t = T_DOUBLE; r.count = 4096;
        rc = run_one(&r, &wrong);
        if (rc || wrong)
            bad |= say("deadline", rank, 0, "allreduce on the %s of the failed communicator: rc=%s wrong=%d", how[k],
                       errname(rc, eb), wrong);
        MPI_Comm_free(&made[k]);
    }
    rc = MPI_Comm_free(&comm);
    if (!bad) bad = say("deadline", rank, rc == MPI_SUCCESS, "recovered: dup, split, split_type and create_group "
                        "of the failed communicator exact, the failed one freed (rc=%s)", errname(rc, eb));
    return bad;
}

/* The info key strata=off on one rank only (the last): every collective on that
 * communicator must still be exact on every rank (strata agrees on the opt-out at
 * setup; a rank that declined alone would run another component than its peers). */
static int case_optout(void)
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Info info;
    MPI_Comm comm;
    MPI_Info_create(&info);
    if (rank == size - 1) MPI_Info_set(info, "strata", "off");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
    MPI_Info_free(&info);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int bad = 0;
    for (int c = 0; c < NC && !bad; c++) {
        spec_t s = base_spec("optout", comm);
        s.coll = c; s.t = T_DOUBLE; s.count = 4096;
        int wrong, rc = run_one(&s, &wrong);
        char eb[300];
        if (rc || wrong) bad = say("optout", rank, 0, "%s: rc=%s wrong=%d", cnames[c], errname(rc, eb), wrong);
    }
    MPI_Comm_free(&comm);
    if (!bad) bad = say("optout", rank, 1, "strata=off on rank %d only: every collective exact", size - 1);
    return bad;
}

static void die(int sig) { (void)sig; raise(SIGKILL); }
/* MPI's progress rule across components: ranks 0..n-2 block in a strata allreduce
 * while a libnbc Iallreduce (user op) of theirs is outstanding; rank n-1 waits for that
 * Iallreduce before it joins the allreduce. It completes only if a rank blocked in
 * strata still runs Open MPI's progress loop (else: a hang, or the deadline). */
static void progress_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    for (int i = 0; i < *len; i++) ((int *) inout)[i] += ((int *) in)[i];
}

static int case_progress(void)
{
    int rank, size, n = 1 << 16;
    long bad = 0;
    double t0 = MPI_Wtime();
    MPI_Op op;
    MPI_Request req;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op_create(progress_sum, 1, &op);
    int *a = malloc((size_t) n * sizeof(int)), *b = malloc((size_t) n * sizeof(int)), *x = malloc((size_t) n * sizeof(int));
    for (int i = 0; i < n; i++) { a[i] = rank + i % 7; x[i] = 1; }
    MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);   /* strata sets up */
    for (int i = 0; i < n; i++) x[i] = rank;
    MPI_Iallreduce(a, b, n, MPI_INT, op, MPI_COMM_WORLD, &req);            /* user op: the previous component */
    if (rank != size - 1) {
        MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    for (int i = 0; i < n; i++) {
        long sum = 0;
        for (int r = 0; r < size; r++) sum += r + i % 7;
        bad += b[i] != sum || x[i] != size - 1;
    }
    free(a); free(b); free(x);
    MPI_Op_free(&op);
    return finish("progress", 2, bad, MPI_Wtime() - t0, NULL);
}

/* coll_strata_progress_thread: nonblocking allreduces started, then 0.3 s of compute
 * without any MPI call, then one MPI_Testall must find them all complete (the thread
 * progressed them). Without the thread a single test cannot finish a schedule of
 * many steps: that run must report "not complete" (the control). Prints
 * "overlap: complete" or "overlap: not complete" and checks the values either way. */
static int case_overlap(int provided)
{
    int rank, size, n = 1 << 17, flag = 0, all = 0;
    long bad = 0;
    double t0 = MPI_Wtime();
    MPI_Request req[3];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *a = malloc((size_t) n * sizeof(double)), *b = malloc(3 * (size_t) n * sizeof(double));
    for (int i = 0; i < n; i++) a[i] = rank + i % 5;
    MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);   /* strata sets up (not a small call) */
    for (int i = 0; i < n; i++) a[i] = rank + i % 5;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 3; k++) MPI_Iallreduce(a, b + (size_t) k * n, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[k]);
    volatile double x = 0;
    while (MPI_Wtime() - t0 < 0.3 + 0.05 * size) x += 1e-9;   /* compute, no MPI call (MPI_Wtime is local) */
    MPI_Testall(3, req, &flag, MPI_STATUSES_IGNORE);
    MPI_Allreduce(&flag, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!flag) MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n; i++) bad += b[(size_t) k * n + i] != size * (size - 1) / 2.0 + size * (double) (i % 5);
    free(a);
    free(b);
    char extra[80];
    snprintf(extra, sizeof extra, "overlap: %s (thread level %d)", all ? "complete" : "not complete", provided);
    return finish("overlap", 3, bad, MPI_Wtime() - t0, extra);
}

static int case_kill(void)
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 1 << 20;
    double *a = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * n);
    for (int k = 0; k < n; k++) a[k] = k % 7;
    if (rank == (size > 1 ? 1 : 0)) {
        struct itimerval it = { { 0, 0 }, { 1, 500000 } };
        signal(SIGALRM, die);
        setitimer(ITIMER_REAL, &it, NULL);
        printf("fault_check: kill rank %d: SIGKILL in 1.5 s, inside an allreduce of %d doubles\n", rank, n);
        fflush(stdout);
    }
    double t0 = MPI_Wtime();
    long it = 0;
    while (MPI_Wtime() - t0 < 30) { MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); it++; }
    say("kill", rank, 0, "still running after %ld calls and 30 s: the killed rank did not end the job", it);
    return 1;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    int provided = 0, want = !strcmp(name, "threads") || !strcmp(name, "overlap") ? MPI_THREAD_MULTIPLE
                                                                                 : MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
    for (int a = 2; a < argc; a++) {
        const char *s = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(s, "-n") && v) { g_n = atol(v); a++; }
        else if (!strcmp(s, "-c") && v) { g_count = atoi(v); a++; }
        else if (!strcmp(s, "-s") && v) { g_seed = strtoull(v, NULL, 0); a++; }
        else if (!strcmp(s, "-T") && v) { g_limit = atof(v); a++; }
        else if (!strcmp(s, "-S") && v) { g_sleep = atof(v); a++; }
        else if (!strcmp(s, "-t") && v) { g_threads = atoi(v); a++; }
        else if (!strcmp(s, "-L") && v) { g_lmode = !strcmp(v, "contig") ? 0 : !strcmp(v, "same") ? 1 : 2; a++; }
        else if (!strcmp(s, "-x")) { /* check_args expected */ }
        else if (!strcmp(s, "-A")) g_all_err = 1;
        else if (!strcmp(s, "-N")) g_nb = 1;
        else if (!strcmp(s, "-P")) g_nb = 2;
        else if (!strcmp(s, "-U")) g_untouched = 1;
        else if (!strcmp(s, "-R")) g_red_derived = 1;
        else if (!strcmp(s, "-Z")) g_zero = 1;
        else if (!strcmp(s, "-v")) g_verbose++;
        else { if (!g_world_rank) fprintf(stderr, "fault_check: unknown argument %s\n", s); MPI_Finalize(); return 2; }
    }
    int xflag = 0;
    for (int a = 2; a < argc; a++) if (!strcmp(argv[a], "-x")) xflag = 1;
    const char *ce = getenv("FAULT_CHECK_CORRUPT");
    corrupt_pending = ce && *ce && strcmp(ce, "0");
    int rc;
    if (!strcmp(name, "basic")) rc = case_basic();
    else if (!strcmp(name, "zero")) rc = case_zero();
    else if (!strcmp(name, "negdisp")) rc = case_negdisp();
    else if (!strcmp(name, "layouts")) rc = case_layouts();
    else if (!strcmp(name, "random")) rc = case_random();
    else if (!strcmp(name, "threads")) rc = case_threads(provided);
    else if (!strncmp(name, "null-", 5)) rc = case_null(name);
    else if (!strcmp(name, "mismatch")) rc = case_mismatch(xflag);
    else if (!strncmp(name, "later-", 6)) rc = case_mismatch_later(name);
    else if (!strcmp(name, "kinds")) rc = case_kinds();
    else if (!strcmp(name, "straddle")) rc = case_straddle(0);
    else if (!strcmp(name, "straddle-lazy")) rc = case_straddle(1);
    else if (!strcmp(name, "deadline")) rc = case_deadline();
    else if (!strcmp(name, "optout")) rc = case_optout();
    else if (!strcmp(name, "kill")) rc = case_kill();
    else if (!strcmp(name, "progress")) rc = case_progress();
    else if (!strcmp(name, "overlap")) rc = case_overlap(provided);
    else {
        if (!g_world_rank)
            fprintf(stderr, "usage: fault_check basic|zero|negdisp|layouts|random|threads|null-allreduce-recv|"
                            "null-allreduce-send|null-bcast-root|null-bcast-nonroot|null-allgather|null-alltoall|"
                            "mismatch|kinds|straddle[-lazy]|deadline|kill|progress|overlap [-n N] [-c COUNT] [-s SEED] [-T S] [-S S] [-t T] [-x] [-A] [-N] [-P] [-U] [-L contig|same|mixed] [-v]\n");
        rc = 2;
    }
    MPI_Finalize();
    return rc;
}
