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
#include "mem/kernel_body.h"

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

// One launch: every thread of the grid does its share (kernel_body.h, where the split
// and the 16-byte vectors are explained and tested on the host).
template <strata_dtype_t D, strata_op_t O>
__device__ __forceinline__ void reduce(const Dsts &d, int ndst, const Srcs &s, int nsrc, unsigned long long count) {
    using T = typename ctype<D>::type;
    T *dst[kMaxDsts];
    const T *src[kMaxSrcs];
#pragma unroll
    for (int k = 0; k < kMaxDsts; ++k) dst[k] = static_cast<T *>(d.p[k]);
#pragma unroll
    for (int k = 0; k < kMaxSrcs; ++k) src[k] = static_cast<const T *>(s.p[k]);
    const unsigned long long t = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const unsigned long long n = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    reduce_part_multi<T, typename functor<O>::type>(dst, ndst, src, nsrc, count, t, n);
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
        strata_reduce_##t##_##o(strata::kern::Dsts d, int ndst, strata::kern::Srcs s, int nsrc,               \
                                unsigned long long count) {                                                   \
        strata::kern::reduce<strata::kern::names::dt_##t, strata::kern::names::op_##o>(d, ndst, s, nsrc, count); \
    }
STRATA_CUDA_REDUCE_KERNELS(STRATA_KERN_DEFINE)
