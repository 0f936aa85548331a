/* SPDX-License-Identifier: BSD-3-Clause */
// src/mem/cuda_kernels.h - the device reduction kernels: their names, their parameters,
// and which (type, op) pairs have one.
//
// cuda_kernels.cu is compiled by nvcc into a fatbin that the build embeds in the library
// (strata_cuda_fatbin); the CUDA domain loads it with cuModuleLoadData and launches the
// kernels with cuLaunchKernel, so the library needs no CUDA runtime. The kernel list
// below is the one table all three users read: the .cu defines one extern "C" kernel
// per entry, the domain looks them up by name, and the fake driver (test/fakecuda)
// emulates them by name with the host functors of ops.h.
//
// Every kernel is named strata_reduce_<type>_<op> with strata_dtype_name() and
// strata_op_name() spellings, e.g. strata_reduce_uint32_sum, and takes
//   (Dsts d, int ndst, Srcs s, int nsrc, unsigned long long count)
// computing r[i] = op(...op(op(s.p[0][i], s.p[1][i]), s.p[2][i])..., s.p[nsrc-1][i])
// for i < count, 1 <= nsrc <= kMaxSrcs, and storing it into every d.p[0 .. ndst-1],
// 1 <= ndst <= kMaxDsts (a node's reduced slice written once into every peer's output,
// read once from every peer's input: the fused node kernel). Each element is read from
// every source before it is written, so a destination may be one of s.p[]. Any grid
// and block shape is correct (a grid-stride loop); kThreads is what the kernels are
// tuned for.
//
// Header-only apart from the fatbin, and needs no CUDA headers: builds without CUDA and
// the fake driver include it too.
#ifndef STRATA_MEM_CUDA_KERNELS_H
#define STRATA_MEM_CUDA_KERNELS_H

#include <stddef.h>

#include "strata.h"

namespace strata {
namespace kern {

constexpr int kMaxSrcs = 8;    // sources per launch; the domain folds more in with further launches
constexpr int kMaxDsts = 8;    // destinations per launch; the domain copies to more
constexpr int kThreads = 256;  // threads per block (the kernels' __launch_bounds__)

// The first and third kernel parameters, passed by value.
struct Dsts {
    void *p[kMaxDsts];
};
struct Srcs {
    const void *p[kMaxSrcs];
};

// Pairs whose bits do not depend on signedness (integer sum, prod and the bitwise and
// logical ops) run as the unsigned type of the same size, MPI_BYTE as uint8, so that
// the list (and the nvcc time) stays small. long double has no kernel: strata falls
// back to the host for it.
#define STRATA_KERN_UNSIGNED(X, t) \
    X(t, sum) X(t, prod) X(t, max) X(t, min) X(t, land) X(t, lor) X(t, lxor) X(t, band) X(t, bor) X(t, bxor)
#define STRATA_CUDA_REDUCE_KERNELS(X)                                                                    \
    STRATA_KERN_UNSIGNED(X, uint8) STRATA_KERN_UNSIGNED(X, uint16) STRATA_KERN_UNSIGNED(X, uint32)      \
    STRATA_KERN_UNSIGNED(X, uint64)                                                                      \
    X(int8, max) X(int8, min) X(int16, max) X(int16, min) X(int32, max) X(int32, min) X(int64, max)     \
    X(int64, min)                                                                                        \
    X(float, sum) X(float, prod) X(float, max) X(float, min)                                             \
    X(double, sum) X(double, prod) X(double, max) X(double, min)                                         \
    X(float_complex, sum) X(float_complex, prod) X(double_complex, sum) X(double_complex, prod)          \
    X(bool, land) X(bool, lor) X(bool, lxor) X(logical4, land) X(logical4, lor) X(logical4, lxor)        \
    X(float_int, maxloc) X(float_int, minloc) X(2int, maxloc) X(2int, minloc)

// The list's spellings as enum values (dt_2int: a name may not start with a digit).
namespace names {
constexpr strata_dtype_t dt_int8 = STRATA_INT8, dt_uint8 = STRATA_UINT8, dt_int16 = STRATA_INT16,
                         dt_uint16 = STRATA_UINT16, dt_int32 = STRATA_INT32, dt_uint32 = STRATA_UINT32,
                         dt_int64 = STRATA_INT64, dt_uint64 = STRATA_UINT64, dt_float = STRATA_FLOAT,
                         dt_double = STRATA_DOUBLE, dt_float_complex = STRATA_C_FLOAT_COMPLEX,
                         dt_double_complex = STRATA_C_DOUBLE_COMPLEX, dt_bool = STRATA_BOOL,
                         dt_logical4 = STRATA_LOGICAL4, dt_float_int = STRATA_FLOAT_INT, dt_2int = STRATA_2INT;
constexpr strata_op_t op_sum = STRATA_OP_SUM, op_prod = STRATA_OP_PROD, op_max = STRATA_OP_MAX,
                      op_min = STRATA_OP_MIN, op_land = STRATA_OP_LAND, op_lor = STRATA_OP_LOR,
                      op_lxor = STRATA_OP_LXOR, op_band = STRATA_OP_BAND, op_bor = STRATA_OP_BOR,
                      op_bxor = STRATA_OP_BXOR, op_maxloc = STRATA_OP_MAXLOC, op_minloc = STRATA_OP_MINLOC;
}  // namespace names

struct Kernel {
    strata_dtype_t dtype;  // the type the kernel runs on
    strata_op_t op;
    const char *name;      // its symbol in the fatbin
};

constexpr Kernel kKernels[] = {
#define STRATA_KERN_ENTRY(t, o) {names::dt_##t, names::op_##o, "strata_reduce_" #t "_" #o},
    STRATA_CUDA_REDUCE_KERNELS(STRATA_KERN_ENTRY)
#undef STRATA_KERN_ENTRY
};
constexpr int kNumKernels = static_cast<int>(sizeof kKernels / sizeof kKernels[0]);

// The type (dtype, op) runs as on the device (see above); dtype itself when no other.
constexpr strata_dtype_t device_dtype(strata_dtype_t dtype, strata_op_t op) {
    const bool order = op == STRATA_OP_MAX || op == STRATA_OP_MIN;  // the only ops where sign matters
    switch (dtype) {
        case STRATA_INT8: return order ? dtype : STRATA_UINT8;
        case STRATA_INT16: return order ? dtype : STRATA_UINT16;
        case STRATA_INT32: return order ? dtype : STRATA_UINT32;
        case STRATA_INT64: return order ? dtype : STRATA_UINT64;
        case STRATA_BYTE: return STRATA_UINT8;
        default: return dtype;
    }
}

// The index in kKernels of the kernel that reduces (dtype, op), or -1 when there is
// none (MPI defines no such reduction, or long double).
constexpr int kernel_index(strata_dtype_t dtype, strata_op_t op) {
    if (dtype == STRATA_BYTE && op != STRATA_OP_BAND && op != STRATA_OP_BOR && op != STRATA_OP_BXOR) return -1;
    const strata_dtype_t d = device_dtype(dtype, op);
    for (int k = 0; k < kNumKernels; ++k)
        if (kKernels[k].dtype == d && kKernels[k].op == op) return k;
    return -1;
}

// The index of the kernel called name, or -1.
inline int kernel_by_name(const char *name) {
    for (int k = 0; k < kNumKernels; ++k) {
        const char *a = kKernels[k].name, *b = name;
        while (*a != '\0' && *a == *b) ++a, ++b;
        if (*a == '\0' && *b == '\0') return k;
    }
    return -1;
}

static_assert(kernel_index(STRATA_INT32, STRATA_OP_SUM) >= 0 && kernel_index(STRATA_INT32, STRATA_OP_MAX) >= 0 &&
                  kernel_index(STRATA_BYTE, STRATA_OP_BXOR) >= 0 && kernel_index(STRATA_BYTE, STRATA_OP_SUM) < 0 &&
                  kernel_index(STRATA_LONG_DOUBLE, STRATA_OP_SUM) < 0 && kernel_index(STRATA_FLOAT, STRATA_OP_BAND) < 0,
              "kernel table");

}  // namespace kern
}  // namespace strata

#ifdef STRATA_HAVE_CUDA
// The fatbin of cuda_kernels.cu (sm_80 and sm_90 code, compute_75 PTX), generated into
// src/mem/cuda_kernels_fatbin.cc by the build. The image cuModuleLoadData takes.
extern "C" const unsigned char strata_cuda_fatbin[];
extern "C" const size_t strata_cuda_fatbin_size;
// The ISA (major, minor) of the PTX in it, as its .version line says.
extern "C" const int strata_cuda_ptx_isa[2];
#endif

#endif
