/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_check_values.h - the types, the exact input values and the reference
 * reduction of coll_check (included once, by coll_check.c only).
 *
 * Inputs are small integers chosen per op so that combining all ranks in any
 * order is exact in every type the op applies to; the reference is computed in
 * int64 (uint32 for the matrix op) in rank order and then stored in the type.
 */
#ifndef COLL_CHECK_VALUES_H
#define COLL_CHECK_VALUES_H

#include <mpi.h>
#include <float.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ types */

enum kind { K_SINT, K_UINT, K_FLT, K_CPLX, K_BOOL, K_BYTE, K_FLOAT_INT, K_2INT,
            K_VECD, K_STRUCT2, K_MAT };

enum op { O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR,
          O_MINLOC, O_MAXLOC, O_USUM, O_UMAT, O_NOPS, O_COPY = O_NOPS };
static const char *op_names[] = { "sum", "prod", "max", "min", "land", "lor", "lxor",
                                  "band", "bor", "bxor", "minloc", "maxloc",
                                  "user_sum", "user_matmul", "copy" };
#define B(o) (1u << (o))
#define OPS_INT (B(O_SUM) | B(O_PROD) | B(O_MAX) | B(O_MIN) | B(O_LAND) | B(O_LOR) | \
                 B(O_LXOR) | B(O_BAND) | B(O_BOR) | B(O_BXOR))
#define OPS_FLT (B(O_SUM) | B(O_PROD) | B(O_MAX) | B(O_MIN))
#define OPS_CPLX (B(O_SUM) | B(O_PROD))
#define OPS_LOG (B(O_LAND) | B(O_LOR) | B(O_LXOR))
#define OPS_BIT (B(O_BAND) | B(O_BOR) | B(O_BXOR))
#define OPS_LOC (B(O_MINLOC) | B(O_MAXLOC))

typedef struct { float v; int l; } float_int_t;
typedef struct { int v; int l; } two_int_t;
typedef struct { int32_t i; double d; } s_id_t;        /* padded: 4 bytes after i */

typedef struct tinfo {
    const char *name;
    MPI_Datatype dt;      /* set in init_types() for the derived ones */
    enum kind kind;
    int size;             /* bytes of the C scalar (per part for complex) */
    unsigned ops;         /* applicable reduction ops */
    int copy;             /* used by the data-movement collectives by default */
    MPI_Aint extent;
} tinfo;

/* Bytes of a long double that hold its value (x87: 10 of 16). */
#if LDBL_MANT_DIG == 64
#define LDBL_VALBYTES 10
#else
#define LDBL_VALBYTES ((int)sizeof(long double))
#endif

static tinfo types[] = {
    { "signed_char", MPI_SIGNED_CHAR, K_SINT, sizeof(signed char), OPS_INT, 0, 0 },
    { "unsigned_char", MPI_UNSIGNED_CHAR, K_UINT, sizeof(unsigned char), OPS_INT, 0, 0 },
    { "short", MPI_SHORT, K_SINT, sizeof(short), OPS_INT, 0, 0 },
    { "unsigned_short", MPI_UNSIGNED_SHORT, K_UINT, sizeof(unsigned short), OPS_INT, 0, 0 },
    { "int", MPI_INT, K_SINT, sizeof(int), OPS_INT | B(O_USUM), 1, 0 },
    { "unsigned", MPI_UNSIGNED, K_UINT, sizeof(unsigned), OPS_INT, 0, 0 },
    { "long", MPI_LONG, K_SINT, sizeof(long), OPS_INT, 0, 0 },
    { "unsigned_long", MPI_UNSIGNED_LONG, K_UINT, sizeof(unsigned long), OPS_INT, 0, 0 },
    { "long_long", MPI_LONG_LONG, K_SINT, sizeof(long long), OPS_INT, 0, 0 },
    { "unsigned_long_long", MPI_UNSIGNED_LONG_LONG, K_UINT, sizeof(unsigned long long), OPS_INT, 0, 0 },
    { "int8", MPI_INT8_T, K_SINT, 1, OPS_INT, 1, 0 },
    { "uint8", MPI_UINT8_T, K_UINT, 1, OPS_INT, 0, 0 },
    { "int16", MPI_INT16_T, K_SINT, 2, OPS_INT, 1, 0 },
    { "uint16", MPI_UINT16_T, K_UINT, 2, OPS_INT, 0, 0 },
    { "int32", MPI_INT32_T, K_SINT, 4, OPS_INT, 0, 0 },
    { "uint32", MPI_UINT32_T, K_UINT, 4, OPS_INT, 0, 0 },
    { "int64", MPI_INT64_T, K_SINT, 8, OPS_INT, 1, 0 },
    { "uint64", MPI_UINT64_T, K_UINT, 8, OPS_INT, 0, 0 },
    { "float", MPI_FLOAT, K_FLT, sizeof(float), OPS_FLT, 1, 0 },
    { "double", MPI_DOUBLE, K_FLT, sizeof(double), OPS_FLT, 1, 0 },
    { "long_double", MPI_LONG_DOUBLE, K_FLT, sizeof(long double), OPS_FLT, 1, 0 },
    { "c_float_complex", MPI_C_FLOAT_COMPLEX, K_CPLX, sizeof(float), OPS_CPLX, 0, 0 },
    { "c_double_complex", MPI_C_DOUBLE_COMPLEX, K_CPLX, sizeof(double), OPS_CPLX, 1, 0 },
    { "c_bool", MPI_C_BOOL, K_BOOL, sizeof(_Bool), OPS_LOG, 1, 0 },
    { "byte", MPI_BYTE, K_BYTE, 1, OPS_BIT, 1, 0 },
    { "float_int", MPI_FLOAT_INT, K_FLOAT_INT, sizeof(float_int_t), OPS_LOC, 1, 0 },
    { "2int", MPI_2INT, K_2INT, sizeof(two_int_t), OPS_LOC, 0, 0 },
    /* derived: strata must fall back on these */
    { "vector_double", MPI_DATATYPE_NULL, K_VECD, 8, B(O_USUM), 1, 0 },
    { "contig2_struct_int_double", MPI_DATATYPE_NULL, K_STRUCT2, sizeof(s_id_t), B(O_USUM), 1, 0 },
    { "contig4_uint32_matrix", MPI_DATATYPE_NULL, K_MAT, 16, B(O_UMAT), 0, 0 },
};
#define NTYPES ((int)(sizeof(types) / sizeof(types[0])))

/* A value in the exact domain: ints, or parts of complex/pairs/derived types. */
typedef struct { int64_t v[4]; } val;

static void store(const tinfo *t, void *p, const val *x)
{
    switch (t->kind) {
    case K_SINT: case K_UINT: case K_BYTE:
        switch (t->size) {
        case 1: { uint8_t y = (uint8_t)x->v[0]; memcpy(p, &y, 1); break; }
        case 2: { uint16_t y = (uint16_t)x->v[0]; memcpy(p, &y, 2); break; }
        case 4: { uint32_t y = (uint32_t)x->v[0]; memcpy(p, &y, 4); break; }
        default: { uint64_t y = (uint64_t)x->v[0]; memcpy(p, &y, 8); break; }
        }
        break;
    case K_BOOL: { _Bool y = x->v[0] != 0; memcpy(p, &y, sizeof y); break; }
    case K_FLT:
        if (t->size == sizeof(float)) { float y = (float)x->v[0]; memcpy(p, &y, sizeof y); }
        else if (t->size == sizeof(double)) { double y = (double)x->v[0]; memcpy(p, &y, sizeof y); }
        else { long double y = (long double)x->v[0]; memcpy(p, &y, sizeof y); }
        break;
    case K_CPLX:
        if (t->size == sizeof(float)) { float y[2] = { (float)x->v[0], (float)x->v[1] }; memcpy(p, y, sizeof y); }
        else { double y[2] = { (double)x->v[0], (double)x->v[1] }; memcpy(p, y, sizeof y); }
        break;
    case K_FLOAT_INT: { float_int_t y; memset(&y, 0, sizeof y); y.v = (float)x->v[0]; y.l = (int)x->v[1];
                        memcpy(p, &y, sizeof y); break; }
    case K_2INT: { two_int_t y = { (int)x->v[0], (int)x->v[1] }; memcpy(p, &y, sizeof y); break; }
    case K_VECD: { double a = (double)x->v[0], b = (double)x->v[1];
                   memcpy(p, &a, 8); memcpy((char *)p + 16, &b, 8); break; }
    case K_STRUCT2: { s_id_t s[2]; memset(s, 0, sizeof s);
                      s[0].i = (int32_t)x->v[0]; s[0].d = (double)x->v[1];
                      s[1].i = (int32_t)x->v[2]; s[1].d = (double)x->v[3];
                      memcpy(p, s, sizeof s); break; }
    case K_MAT: { uint32_t m[4]; for (int k = 0; k < 4; k++) m[k] = (uint32_t)x->v[k];
                  memcpy(p, m, sizeof m); break; }
    }
}

/* Value-byte segments of one element: {offset, length}, ended by length 0. */
static int segments(const tinfo *t, int seg[4][2])
{
    int n = 0;
#define SEG(o, l) do { seg[n][0] = (o); seg[n][1] = (l); n++; } while (0)
    switch (t->kind) {
    case K_FLT:
        if (t->size == sizeof(long double) && t->size != sizeof(double)) SEG(0, LDBL_VALBYTES);
        else SEG(0, t->size);
        break;
    case K_CPLX: SEG(0, 2 * t->size); break;
    case K_VECD: SEG(0, 8); SEG(16, 8); break;
    case K_STRUCT2: SEG(offsetof(s_id_t, i), 4); SEG(offsetof(s_id_t, d), 8);
                    SEG(sizeof(s_id_t) + offsetof(s_id_t, i), 4);
                    SEG(sizeof(s_id_t) + offsetof(s_id_t, d), 8); break;
    case K_FLOAT_INT: SEG(offsetof(float_int_t, v), 4); SEG(offsetof(float_int_t, l), sizeof(int)); break;
    case K_MAT: SEG(0, 16); break;
    default: SEG(0, t->size); break;
    }
#undef SEG
    return n;
}

/* ------------------------------------------------------------ input data */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int g_rank, g_size;      /* in the communicator under test */
static MPI_Comm comm;
static uint64_t g_seed = 1;

/* The input of rank r at global index i, in a domain chosen so that combining
 * all ranks in any order is exact in every type that the op applies to. */
static val gen(const tinfo *t, int op, uint64_t seed, int r, int64_t i)
{
    uint64_t h = mix(seed ^ mix((uint64_t)r * 0x100000001b3ull + (uint64_t)i * 0x9e37ull + 7));
    uint64_t h2 = mix(h);
    int sgn = t->kind == K_SINT || t->kind == K_FLT || t->kind == K_CPLX || t->kind == K_VECD;
    val x; memset(&x, 0, sizeof x);
    switch (op) {
    case O_SUM: case O_USUM:
        for (int k = 0; k < 4; k++)
            x.v[k] = (int64_t)((h >> (8 * k)) % 7) - (sgn ? 3 : 0);
        break;
    case O_PROD:
        if (t->kind == K_CPLX) {        /* 1, i, -1, -i, and 1+i on a few ranks */
            static const int64_t re[5] = { 1, 0, -1, 0, 1 }, im[5] = { 0, 1, 0, -1, 1 };
            int c = (int)(h % (r < 6 ? 5 : 4));
            x.v[0] = re[c]; x.v[1] = im[c];
        } else {                        /* at most six factors of 2: fits int8 */
            int c = (int)(h % 3);
            x.v[0] = c == 0 ? 1 : c == 1 ? (r < 6 ? 2 : 1) : (sgn ? -1 : 1);
        }
        break;
    case O_MAX: case O_MIN:
        x.v[0] = (int64_t)(h % 200) - (sgn ? 100 : 0);
        x.v[1] = (int64_t)(h2 % 200) - 100;
        break;
    case O_LAND: x.v[0] = h % (uint64_t)(2 * g_size) != 0; break;
    case O_LOR: x.v[0] = h % (uint64_t)(2 * g_size) == 0; break;
    case O_LXOR: x.v[0] = h & 1; break;
    case O_BAND: x.v[0] = (int64_t)((h | (h >> 7)) & 0x7f); break;
    case O_BOR: x.v[0] = (int64_t)((h & (h >> 7)) & 0x7f); break;
    case O_BXOR: x.v[0] = (int64_t)(h & 0x7f); break;
    case O_MINLOC: case O_MAXLOC:
        x.v[0] = (int64_t)(h % 10) - 5;           /* many ties: exercises the lowest-index rule */
        x.v[1] = (int64_t)(h2 % 1000);
        break;
    case O_UMAT:
        for (int k = 0; k < 4; k++) x.v[k] = (int64_t)((h >> (4 * k)) % 3);
        break;
    default: /* O_COPY: wide values, still exact in every type */
        for (int k = 0; k < 4; k++) {
            uint64_t hk = k ? mix(h + (uint64_t)k) : h;
            switch (t->kind) {
            case K_BOOL: x.v[k] = hk & 1; break;
            case K_SINT: case K_UINT: case K_BYTE:
                x.v[k] = (int64_t)(t->size >= 8 ? hk >> 2 : hk & ((1ull << (8 * t->size)) - 1));
                break;
            case K_FLOAT_INT: x.v[k] = k == 0 ? (int64_t)(hk % (1u << 24)) - (1 << 23) : (int32_t)hk; break;
            case K_2INT: case K_STRUCT2: case K_MAT: x.v[k] = (int32_t)hk; break;
            default: x.v[k] = (int64_t)(hk % (1u << 24)) - (1 << 23); break;   /* exact in float */
            }
        }
        break;
    }
    return x;
}

/* acc = acc (op) x, in rank order: acc holds ranks 0..r-1, x is rank r. */
static void combine(const tinfo *t, int op, val *acc, const val *x)
{
    int64_t *a = acc->v;
    const int64_t *b = x->v;
    switch (op) {
    case O_SUM: case O_USUM: for (int k = 0; k < 4; k++) a[k] += b[k]; break;
    case O_PROD:
        if (t->kind == K_CPLX) {
            int64_t re = a[0] * b[0] - a[1] * b[1], im = a[0] * b[1] + a[1] * b[0];
            a[0] = re; a[1] = im;
        } else a[0] *= b[0];
        break;
    case O_MAX: for (int k = 0; k < 2; k++) if (b[k] > a[k]) a[k] = b[k]; break;
    case O_MIN: for (int k = 0; k < 2; k++) if (b[k] < a[k]) a[k] = b[k]; break;
    case O_LAND: a[0] = a[0] && b[0]; break;
    case O_LOR: a[0] = a[0] || b[0]; break;
    case O_LXOR: a[0] = !a[0] != !b[0]; break;
    case O_BAND: a[0] &= b[0]; break;
    case O_BOR: a[0] |= b[0]; break;
    case O_BXOR: a[0] ^= b[0]; break;
    case O_MINLOC:
        if (b[0] < a[0] || (b[0] == a[0] && b[1] < a[1])) { a[0] = b[0]; a[1] = b[1]; }
        break;
    case O_MAXLOC:
        if (b[0] > a[0] || (b[0] == a[0] && b[1] < a[1])) { a[0] = b[0]; a[1] = b[1]; }
        break;
    case O_UMAT: { /* 2x2 row-major product in uint32 arithmetic: acc * x */
        uint32_t m[4], p[4], q[4];
        for (int k = 0; k < 4; k++) { m[k] = (uint32_t)a[k]; p[k] = (uint32_t)b[k]; }
        q[0] = m[0] * p[0] + m[1] * p[2]; q[1] = m[0] * p[1] + m[1] * p[3];
        q[2] = m[2] * p[0] + m[3] * p[2]; q[3] = m[2] * p[1] + m[3] * p[3];
        for (int k = 0; k < 4; k++) a[k] = q[k];
        break; }
    }
}

static val expect_reduced(const tinfo *t, int op, uint64_t seed, int64_t i)
{
    val acc = gen(t, op, seed, 0, i);
    for (int r = 1; r < g_size; r++) {
        val x = gen(t, op, seed, r, i);
        combine(t, op, &acc, &x);
    }
    return acc;
}

#endif
