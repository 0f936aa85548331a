// SPDX-License-Identifier: BSD-3-Clause
// src/mem/cuda_kernels.cu - device reductions: one extern "C" kernel per entry of
// STRATA_CUDA_REDUCE_KERNELS (cuda_kernels.h), all one template over (type, op).
//
// Compiled to a fatbin only (nvcc --fatbin): no host code, no CUDA runtime. The element
// arithmetic is ops.h, the same functors the host domain and the fake driver run.
#include <cstdint>

#include "strata.h"
#include "mem/ops.h"
#include "mem/cuda_kernels.h"

namespace strata {
namespace kern {
namespace {

// The element type and functor of each spelling in the kernel list.
template <strata_dtype_t> struct ctype;
template <> struct ctype<STRATA_INT8> { using type = int8_t; };
template <> struct ctype<STRATA_UINT8> { using type = uint8_t; };
template <> struct ctype<STRATA_INT16> { using type = int16_t; };
template <> struct ctype<STRATA_UINT16> { using type = uint16_t; };
template <> struct ctype<STRATA_INT32> { using type = int32_t; };
template <> struct ctype<STRATA_UINT32> { using type = uint32_t; };
template <> struct ctype<STRATA_INT64> { using type = int64_t; };
template <> struct ctype<STRATA_UINT64> { using type = uint64_t; };
template <> struct ctype<STRATA_FLOAT> { using type = float; };
template <> struct ctype<STRATA_DOUBLE> { using type = double; };
template <> struct ctype<STRATA_C_FLOAT_COMPLEX> { using type = ops::Complex<float>; };
template <> struct ctype<STRATA_C_DOUBLE_COMPLEX> { using type = ops::Complex<double>; };
template <> struct ctype<STRATA_BOOL> { using type = ops::Bool8; };
template <> struct ctype<STRATA_LOGICAL4> { using type = ops::Logical4; };
template <> struct ctype<STRATA_FLOAT_INT> { using type = ops::ValueIndex<float>; };
template <> struct ctype<STRATA_2INT> { using type = ops::ValueIndex<int>; };

template <strata_op_t> struct functor;
template <> struct functor<STRATA_OP_SUM> { using type = ops::Sum; };
template <> struct functor<STRATA_OP_PROD> { using type = ops::Prod; };
template <> struct functor<STRATA_OP_MAX> { using type = ops::Max; };
template <> struct functor<STRATA_OP_MIN> { using type = ops::Min; };
template <> struct functor<STRATA_OP_LAND> { using type = ops::Land; };
template <> struct functor<STRATA_OP_LOR> { using type = ops::Lor; };
template <> struct functor<STRATA_OP_LXOR> { using type = ops::Lxor; };
template <> struct functor<STRATA_OP_BAND> { using type = ops::Band; };
template <> struct functor<STRATA_OP_BOR> { using type = ops::Bor; };
template <> struct functor<STRATA_OP_BXOR> { using type = ops::Bxor; };
template <> struct functor<STRATA_OP_MAXLOC> { using type = ops::Maxloc; };
template <> struct functor<STRATA_OP_MINLOC> { using type = ops::Minloc; };

// 16 bytes of T: what one thread loads at once where every operand is 16-byte aligned.
template <class T>
struct alignas(16) Vec16 {
    T v[16 / sizeof(T)];
};

// Grid-stride: each element is read from every source, then written once, so dst may
// alias a source. Left to right, as MPI folds. Where dst and every source are 16-byte
// aligned (the same for every thread of the launch), each thread moves 16 bytes per
// operand at a time (one 128-bit load: 16 bool or int8 elements, 2 doubles), the
// width that keeps HBM and NVLink busy; the rest (or every element, when an operand
// is only aligned for T, as the domain guarantees) goes one element at a time.
template <strata_dtype_t D, strata_op_t O>
__device__ __forceinline__ void reduce(void *dst_v, const Srcs &s, int nsrc, unsigned long long count) {
    using T = typename ctype<D>::type;
    using Op = typename functor<O>::type;
    const Op op{};
    T *dst = static_cast<T *>(dst_v);
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    const unsigned long long first = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    unsigned long long done = 0;
    if constexpr (sizeof(T) <= 16 && 16 % sizeof(T) == 0) {
        uintptr_t bits = reinterpret_cast<uintptr_t>(dst_v);
        for (int k = 0; k < nsrc; ++k) bits |= reinterpret_cast<uintptr_t>(s.p[k]);
        if (bits % 16 == 0) {
            using V = Vec16<T>;
            constexpr int kPer = 16 / sizeof(T);
            const unsigned long long nvec = count / kPer;
            V *vdst = static_cast<V *>(dst_v);
            for (unsigned long long i = first; i < nvec; i += stride) {
                V acc = static_cast<const V *>(s.p[0])[i];
                for (int k = 1; k < nsrc; ++k) {
                    const V b = static_cast<const V *>(s.p[k])[i];
#pragma unroll
                    for (int e = 0; e < kPer; ++e) acc.v[e] = op(acc.v[e], b.v[e]);
                }
                vdst[i] = acc;
            }
            done = nvec * kPer;
        }
    }
    for (unsigned long long i = done + first; i < count; i += stride) {
        T acc = static_cast<const T *>(s.p[0])[i];
        for (int k = 1; k < nsrc; ++k) acc = op(acc, static_cast<const T *>(s.p[k])[i]);
        dst[i] = acc;
    }
}

// Checked (on the host side) for every entry of the list.
template <strata_dtype_t D, strata_op_t O>
constexpr bool listed_right() {
    return ops::applies<typename ctype<D>::type, typename functor<O>::type>::value && device_dtype(D, O) == D;
}

}  // namespace
}  // namespace kern
}  // namespace strata

// A pair MPI does not define, or a type its pair does not run as (int32 sum: uint32), is
// a mistake in the list.
#define STRATA_KERN_DEFINE(t, o)                                                                              \
    static_assert(strata::kern::listed_right<strata::kern::names::dt_##t, strata::kern::names::op_##o>(),     \
                  "kernel list: " #t " " #o);                                                                 \
    extern "C" __global__ void __launch_bounds__(strata::kern::kThreads)                                      \
        strata_reduce_##t##_##o(void *dst, strata::kern::Srcs s, int nsrc, unsigned long long count) {        \
        strata::kern::reduce<strata::kern::names::dt_##t, strata::kern::names::op_##o>(dst, s, nsrc, count);  \
    }
STRATA_CUDA_REDUCE_KERNELS(STRATA_KERN_DEFINE)
