// src/mem/cuda_kernels.cu - device reductions: one kernel template over (type, op).
//
// The element arithmetic is ops.h, the same functors the host domain runs. To keep
// the instantiation matrix (and the nvcc time) small, pairs whose bits do not depend
// on signedness are reduced as the unsigned type of the same size (sum, prod and the
// bitwise and logical ops), and MPI_BYTE as uint8_t. long double types have no device
// kernel: the caller falls back to the host.
#include <cuda_runtime.h>

#include <type_traits>

#include "strata.h"
#include "mem/ops.h"
#include "mem/cuda_kernels.h"

namespace strata {
namespace {

constexpr int kMaxSrcs = 8;   // sources per launch; more are folded in by further launches
constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;

template <class T>
struct Srcs {
    const T *p[kMaxSrcs];
};

// Grid-stride: each element is read from every source, then written once, so dst
// may alias a source.
template <class T, class Op>
__global__ void __launch_bounds__(kThreads) reduce_kernel(T *dst, Srcs<T> s, int nsrc, size_t count) {
    const Op op{};
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        T acc = s.p[0][i];
        for (int k = 1; k < nsrc; ++k) acc = op(acc, s.p[k][i]);
        dst[i] = acc;
    }
}

template <class T, class Op>
int launch(void *dst_v, const void *const *srcs, int nsrc, size_t count, cudaStream_t stream) {
    T *dst = static_cast<T *>(dst_v);
    size_t blocks = (count + kThreads - 1) / kThreads;
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    // First launch: srcs[0..k); each further launch folds up to kMaxSrcs - 1 more
    // sources into dst, keeping MPI's left-to-right order.
    int done = 0;
    while (done < nsrc) {
        Srcs<T> s{};
        int n = 0;
        if (done > 0) s.p[n++] = dst;
        while (n < kMaxSrcs && done < nsrc) s.p[n++] = static_cast<const T *>(srcs[done++]);
        reduce_kernel<T, Op><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(dst, s, n, count);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return static_cast<int>(e);
    }
    return 0;
}

using Launcher = int (*)(void *, const void *const *, int, size_t, cudaStream_t);

// The type the kernel runs on for (T, Op), or void for no kernel.
template <class T, class Op>
struct device_type {
    using type = std::conditional_t<
        ops::applies<T, Op>::value,
        std::conditional_t<std::is_integral<T>::value && std::is_signed<T>::value &&
                               !std::is_same<Op, ops::Max>::value && !std::is_same<Op, ops::Min>::value,
                           std::make_unsigned_t<std::conditional_t<std::is_integral<T>::value, T, int>>, T>,
        void>;
};
template <class Op>
struct device_type<ops::Byte, Op> {
    using type = std::conditional_t<std::is_same<Op, ops::Band>::value || std::is_same<Op, ops::Bor>::value ||
                                        std::is_same<Op, ops::Bxor>::value,
                                    uint8_t, void>;
};
template <class Op>
struct device_type<long double, Op> { using type = void; };
template <class Op>
struct device_type<ops::Complex<long double>, Op> { using type = void; };

Launcher pick(strata_dtype_t dtype, strata_op_t op) {
    return dispatch_type(dtype, [op](auto *tp) -> Launcher {
        using T = std::remove_pointer_t<decltype(tp)>;
        if constexpr (std::is_void<T>::value) {
            return nullptr;
        } else {
            return dispatch_op(op, [](auto opv) -> Launcher {
                using Op = decltype(opv);
                if constexpr (std::is_same<Op, std::nullptr_t>::value) {
                    return nullptr;
                } else {
                    using D = typename device_type<T, Op>::type;
                    if constexpr (std::is_void<D>::value) {
                        return nullptr;
                    } else {
                        return &launch<D, Op>;
                    }
                }
            });
        }
    });
}

}  // namespace
}  // namespace strata

extern "C" int strata_cuda_reduce_supported(int dtype, int op) {
    return strata::pick(static_cast<strata_dtype_t>(dtype), static_cast<strata_op_t>(op)) != nullptr;
}

extern "C" int strata_cuda_reduce(void *dst, const void *const *srcs, int nsrc, size_t count, int dtype, int op,
                                  void *stream) {
    const strata::Launcher fn = strata::pick(static_cast<strata_dtype_t>(dtype), static_cast<strata_op_t>(op));
    if (fn == nullptr) return STRATA_CUDA_UNSUPPORTED;
    if (count == 0 || nsrc < 1) return 0;
    return fn(dst, srcs, nsrc, count, static_cast<cudaStream_t>(stream));
}

extern "C" const char *strata_cuda_error_string(int err) {
    if (err == STRATA_CUDA_UNSUPPORTED) return "no device kernel for this type/op";
    return cudaGetErrorString(static_cast<cudaError_t>(err));
}
