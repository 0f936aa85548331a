/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakecuda.h - the accounting interface of the fake CUDA driver (test/fakecuda/
 * libcuda.so.1). C-compatible. Leak tests dlsym "fakecuda_stats" from the
 * libcuda.so.1 they loaded; the real driver lacks it, so its absence means "not
 * the fake". See fake_cuda.cc for what the fake does and the FAKECUDA_* variables.
 */
#ifndef STRATA_FAKECUDA_H
#define STRATA_FAKECUDA_H

#ifdef __cplusplus
extern "C" {
#endif

struct fakecuda_stats {
    unsigned long long dev_allocs;       /* live cuMemAlloc, cuMemAllocManaged, cuMemAllocAsync, cuMemCreate allocations */
    unsigned long long dev_bytes;        /* their bytes (as requested) */
    unsigned long long ipc_open;         /* live cuIpcOpenMemHandle mappings (one per handle, not per ref) */
    unsigned long long host_allocs;      /* live cuMemHostAlloc / cuMemAllocHost allocations */
    unsigned long long registered;       /* live cuMemHostRegister ranges */
    unsigned long long events;           /* live events (created or IPC-opened) */
    unsigned long long streams;          /* live streams */
    unsigned long long total_dev_allocs; /* device allocations ever made in this process */
    unsigned long long modules;          /* loaded modules (cuModuleLoadData, not yet unloaded) */
    unsigned long long inited;           /* 1 once cuInit succeeded in this process */
};

/* Fills *out with this process's counts. 0, or -1 when out is NULL. Thread-safe. */
int fakecuda_stats(struct fakecuda_stats *out);

#ifdef __cplusplus
}
#endif

#endif
