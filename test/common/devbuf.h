/* SPDX-License-Identifier: BSD-3-Clause */
/* test/common/devbuf.h - GPU buffers for the MPI tests and the benchmark.
 *
 * Plain C over the CUDA driver, loaded at run time (dlopen "libcuda.so.1"), so the
 * test programs build and run without the CUDA toolkit and say why when there is no
 * GPU. On CI machines test/fakecuda/libcuda.so.1 stands in for the driver (device
 * memory there is not host-accessible either, so a host read of it crashes as on a
 * real GPU). Not thread-safe; one context per process: the device's primary one, or
 * with DEVBUF_CONTEXT=own one of the program's own (cuCtxCreate).
 */
#ifndef STRATA_TEST_DEVBUF_H
#define STRATA_TEST_DEVBUF_H

#include <stddef.h>

/* Loads the driver and makes GPU (local_rank % number of GPUs) current. 0 on
 * success; otherwise -1 with a one-line reason in why. */
int devbuf_init(int local_rank, char *why, size_t why_size);

/* The GPU's ordinal and name (after devbuf_init). */
int devbuf_device(void);
const char *devbuf_name(void);

/* Device memory (NULL on failure, with a message on stderr). */
void *devbuf_alloc(size_t bytes);
/* Memory the GPU uses but legacy CUDA IPC cannot share: managed (unified) memory, or
 * with DEVBUF_UNSHAREABLE=pool stream-ordered (cuMemAllocAsync) or =vmm virtual-memory
 * (cuMemCreate + cuMemMap) allocations, so that a test of this kind covers all three. */
void *devbuf_alloc_managed(size_t bytes);
/* The other two by name (NULL, with a message, where the driver lacks them). */
void *devbuf_alloc_pool(size_t bytes);
void *devbuf_alloc_vmm(size_t bytes);
/* Frees device, managed, pool or VMM memory. */
void devbuf_free(void *p);
/* Pinned host memory (cuMemHostAlloc). */
void *devbuf_alloc_pinned(size_t bytes);
void devbuf_free_pinned(void *p);

/* Synchronous copies; 0 on success. */
int devbuf_to_dev(void *dst, const void *src, size_t bytes);
int devbuf_to_host(void *dst, const void *src, size_t bytes);
/* A copy queued on the legacy default stream, not waited for: as an application that
 * queued work on its buffers just before an MPI call (src must stay as it is until the
 * copy has run: the next synchronous copy waits for it). */
int devbuf_to_dev_queued(void *dst, const void *src, size_t bytes);
/* Queues ms milliseconds of nothing on the legacy default stream (a host function that
 * sleeps), as a long kernel of the application's would hold up what it queues next. */
int devbuf_queue_pause(unsigned ms);
int devbuf_dev_to_dev(void *dst, const void *src, size_t bytes);
int devbuf_sync(void);

/* Bytes of device memory this process holds, on the fake driver (its own count);
 * on a real one the driver has no per-process figure, so total - free of the GPU (all
 * processes, in 2 MiB pages, memory kept alive by peers' IPC mappings included: a
 * leak check on it fails falsely when ranks share a GPU; strata's own count,
 * STRATA_CUDA_REPORT, is the one to trust). 0 when unknown (also before devbuf_init). */
size_t devbuf_used_bytes(void);

#endif
