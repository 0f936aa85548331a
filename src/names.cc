// SPDX-License-Identifier: BSD-3-Clause
// src/names.cc - what the C API's enums are called and how big a datatype's element
// is: platform facts every layer may ask (the glue, a builder, a channel), so they
// live at the bottom, beside strata.h, and no lower layer calls up into src/api.cc.
#include <complex>
#include <cstdint>

#include "strata.h"

namespace {

// One element of each strata_dtype_t, in the enum's order. Pairs and logicals have
// the layout MPI gives them (MPI_FLOAT_INT: a float, then an int); a test checks
// this table against the types the reductions run on (src/mem/ops.h).
struct FloatInt {
    float v;
    int i;
};
struct TwoInt {
    int v, i;
};
constexpr size_t kDtypeSize[STRATA_DTYPE_COUNT] = {
    sizeof(int8_t),  sizeof(uint8_t),  sizeof(int16_t), sizeof(uint16_t),
    sizeof(int32_t), sizeof(uint32_t), sizeof(int64_t), sizeof(uint64_t),
    sizeof(float),   sizeof(double),   sizeof(long double),
    sizeof(std::complex<float>), sizeof(std::complex<double>), sizeof(std::complex<long double>),
    1 /* bool: C's _Bool */, 4 /* Fortran LOGICAL*4 */, 1 /* byte */,
    sizeof(FloatInt), sizeof(TwoInt)};

}  // namespace

extern "C" {

const char *strata_coll_name(strata_coll_t coll) {
    static const char *const names[STRATA_COLL_COUNT] = {
        "allreduce", "allgather", "reduce_scatter", "bcast", "alltoall", "reduce", "gather", "scatter"};
    return coll >= 0 && coll < STRATA_COLL_COUNT ? names[coll] : "unknown";
}

size_t strata_dtype_size(strata_dtype_t dtype) {
    return dtype >= 0 && dtype < STRATA_DTYPE_COUNT ? kDtypeSize[dtype] : 0;
}

const char *strata_dtype_name(strata_dtype_t dtype) {
    static const char *const names[STRATA_DTYPE_COUNT] = {
        "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
        "float", "double", "long_double", "float_complex", "double_complex",
        "long_double_complex", "bool", "logical4", "byte", "float_int", "2int"};
    return dtype >= 0 && dtype < STRATA_DTYPE_COUNT ? names[dtype] : "unknown";
}

const char *strata_op_name(strata_op_t op) {
    static const char *const names[STRATA_OP_COUNT] = {"sum",  "prod", "max", "min",
                                                       "land", "lor",  "lxor", "band",
                                                       "bor",  "bxor", "maxloc", "minloc"};
    return op >= 0 && op < STRATA_OP_COUNT ? names[op] : "unknown";
}

}  // extern "C"
