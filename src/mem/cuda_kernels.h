/* src/mem/cuda_kernels.h - the C-callable launcher of the device reduction kernels.
 *
 * Implemented in cuda_kernels.cu (nvcc, linked with the static CUDA runtime, which
 * loads libcuda only when a kernel is first launched), so the library still loads on
 * nodes without a driver. Only the CUDA domain (cuda_domain.cc) calls this; it makes
 * the stream's context current first.
 */
#ifndef STRATA_MEM_CUDA_KERNELS_H
#define STRATA_MEM_CUDA_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* strata_cuda_reduce's return value when (dtype, op) has no device kernel. */
#define STRATA_CUDA_UNSUPPORTED (-1)

/* 1 when (dtype, op) has a device kernel (strata_dtype_t, strata_op_t values). */
int strata_cuda_reduce_supported(int dtype, int op);

/* Queues dst[i] = op(srcs[0][i], ..., srcs[nsrc-1][i]) for i < count on stream (a
 * CUstream / cudaStream_t). srcs is a host array of nsrc >= 1 device-accessible
 * pointers, read at call time; dst may equal a source. Returns 0 when queued,
 * STRATA_CUDA_UNSUPPORTED, or a cudaError_t from the launch. */
int strata_cuda_reduce(void *dst, const void *const *srcs, int nsrc, size_t count, int dtype, int op,
                       void *stream);

/* The runtime's text for an error strata_cuda_reduce returned. */
const char *strata_cuda_error_string(int err);

#ifdef __cplusplus
}
#endif

#endif
