/* SPDX-License-Identifier: BSD-3-Clause */
/* strata_device.h - C view of the core's device support, for the Open MPI glue.
 *
 * Kept out of strata.h (the core's C API) so that the glue can ask about a buffer
 * without a team. Implemented in src/mem/classify.cc.
 */
#ifndef STRATA_DEVICE_H
#define STRATA_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* strata_buffer_kind's values (the same order as strata::MemKind). */
typedef enum strata_mem_kind {
    STRATA_MEM_HOST = 0,        /* pageable host memory, or unknown to the driver */
    STRATA_MEM_DEVICE = 1,      /* cuMemAlloc / cudaMalloc */
    STRATA_MEM_MANAGED = 2,     /* cuMemAllocManaged / cudaMallocManaged */
    STRATA_MEM_PINNED_HOST = 3  /* cuMemHostAlloc / cudaHostAlloc / registered host memory */
} strata_mem_kind_t;

/* The kind of memory ptr points to (a strata_mem_kind_t). Cheap (one driver call);
 * STRATA_MEM_HOST on nodes without a CUDA driver or GPU and in builds without CUDA.
 * Thread-safe. */
int strata_buffer_kind(const void *ptr);

/* 1 when this process can have no GPU at all (no CUDA driver, or one without the
 * symbols strata needs), with why in why (len bytes); 0 when a GPU may be there, or
 * come (the driver is not initialised for this question). Loads the driver once. */
int strata_device_absent(char *why, size_t len);

/* Copies bytes between host and device memory (either side may be either kind) on
 * the CUDA stream of the GPU that owns the device side, and waits for the copy.
 * 0 on success; -1 after logging why. For staging device buffers through host
 * memory where strata hands a call to the previous component. */
int strata_device_copy(void *dst, const void *src, size_t bytes);

/* Page-locked host memory of at least bytes to stage device_buf (device memory)
 * through, reused between calls (the glue's fallback staging); NULL when device_buf is
 * not device memory or none could be had: then stage through malloc. Give it back with
 * strata_host_copy_put. Thread-safe. */
void *strata_host_copy_get(const void *device_buf, size_t bytes);
void strata_host_copy_put(void *p);
/* With STRATA_CUDA_REPORT=1 set and a GPU domain made: prints strata's own GPU memory
 * ("strata cuda usage: ..."), once per process (else at exit). */
void strata_cuda_report(void);

/* Frees every staging buffer not in use (the component's close, at MPI_Finalize). */
void strata_host_copy_release(void);

#ifdef __cplusplus
}
#endif

#endif
