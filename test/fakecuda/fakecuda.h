/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakecuda.h - the accounting interface of the fake CUDA driver (test/fakecuda/
 * libcuda.so.1). C-compatible. Leak tests dlsym "fakecuda_stats" from the
 * libcuda.so.1 they loaded; the real driver lacks it, so its absence means "not
 * the fake". See fake_cuda.cc for what the fake does and the FAKECUDA_* variables.
 *
 * FAKECUDA_STATS_FILE=PATH appends one line per process at exit:
 *   fakecuda pid=P dev_allocs= dev_bytes= ipc_open= host_allocs= registered= events=
 *   streams= modules= inited= launches= copies= events_recorded= stream_waits=
 *   stream_writes= host_waits= dev_read= dev_written=
 * the live counts of struct fakecuda_stats, then the cumulative ones of struct
 * fakecuda_counters (new fields are only ever appended).
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

/* What this process asked of the GPU, cumulative since it loaded the driver, counted
 * when the operation is issued (queued on its stream, or run at once on a default
 * stream), not when it runs, so the counts of a call are complete when it returns.
 * Calls the driver refuses count nothing, except launches (below). */
struct fakecuda_counters {
    unsigned long long launches;        /* cuLaunchKernel calls (every call, refused ones too) */
    unsigned long long copies;          /* cuMemcpy*, cuMemcpy*Async and cuMemsetD* issued (0 bytes: none) */
    unsigned long long events_recorded; /* cuEventRecord */
    unsigned long long stream_waits;    /* cuStreamWaitEvent, cuStreamWaitValue32/64 */
    unsigned long long stream_writes;   /* cuStreamWriteValue32/64 */
    /* Times the host waited for the GPU: each cuStreamSynchronize, cuEventSynchronize and
     * cuCtxSynchronize, plus each event record the host polled with cuEventQuery, counted
     * once at its first query however many polls it took (a poll loop on one event is
     * one wait; an event queried before it was ever recorded counts nothing). */
    unsigned long long host_waits;
    /* Bytes of device memory (cuMemAlloc, managed, pool, VMM, and peers' memory mapped
     * through IPC; not pinned or registered host memory) read and written: a copy of n
     * bytes reads n where its source is device memory and writes n where its destination
     * is; a memset writes its bytes; a kernel reads each of its nsrc operands and writes
     * its destination (a reduction of nsrc operands of n bytes: nsrc*n read, n written). */
    unsigned long long dev_read, dev_written;
};

/* Fills *out with this process's counters. 0, or -1 when out is NULL. Thread-safe. */
int fakecuda_counters(struct fakecuda_counters *out);

#ifdef __cplusplus
}
#endif

#endif
