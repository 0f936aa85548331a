/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakecuda_selftest.c - shows that the fake CUDA driver behaves like a GPU where it
 * matters to strata's tests: device memory faults on host access, copies round-trip,
 * stream work is really asynchronous, pointer attributes, IPC across processes (memory
 * and events, a stale overlapping mapping refused with ALREADY_MAPPED), kernel images
 * checked against the driver version, kernel launches (strata's reductions, emulated
 * by name), stream-ordered and virtual-memory allocations that legacy IPC cannot
 * share, device-wide cuMemGetInfo, the leak counters back at zero, and last (it
 * poisons the process) a misaligned kernel operand faulting asynchronously and for
 * good.
 *
 *   LD_LIBRARY_PATH=test/fakecuda test/fakecuda/fakecuda_selftest
 *
 * Loads libcuda.so.1 like strata does (dlopen), so it runs against whatever the
 * library path gives; it refuses to run on a driver without fakecuda_stats. The IPC
 * peer is a helper forked before cuInit (as with a real GPU, a child forked after
 * cuInit cannot use the driver) that serves requests over pipes. Sets
 * FAKECUDA_DELAY_US=20000 so "not complete yet" is deterministic, and FAKECUDA_NODE to a
 * name of its own (removed at the end). Prints one line per
 * check and "N passed, N failed"; exits 0 only when nothing failed. Takes no arguments.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/fakecuda/fakecuda.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUevent, *CUmodule, *CUfunction;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { char reserved[64]; } CUipcEventHandle;

enum { NOT_READY = 600, INVALID_VALUE = 1, NO_DEVICE = 100, INVALID_CONTEXT = 201, INVALID_HANDLE = 400,
       NOT_FOUND = 500, INVALID_IMAGE = 200, ALREADY_MAPPED = 208, UNSUPPORTED_PTX = 222, MISALIGNED = 716 };

/* The parameters of strata's reduction kernels (src/mem/cuda_kernels.h). */
struct srcs { const void *p[8]; };
struct dsts { void *p[8]; };

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGetName)(char *, int, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, int);
    CUresult (*PrimaryCtxRelease)(int);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*LaunchHostFunc)(CUstream, void (*)(void *), void *);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventQuery)(CUevent);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*PointerGetAttributes)(unsigned, int *, void **, CUdeviceptr);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemAllocManaged)(CUdeviceptr *, size_t, unsigned);
    CUresult (*MemHostRegister)(void *, size_t, unsigned);
    CUresult (*MemHostUnregister)(void *);
    CUresult (*IpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*IpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned);
    CUresult (*IpcCloseMemHandle)(CUdeviceptr);
    CUresult (*IpcGetEventHandle)(CUipcEventHandle *, CUevent);
    CUresult (*IpcOpenEventHandle)(CUevent *, CUipcEventHandle);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    int (*Stats)(struct fakecuda_stats *);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*MemCreate)(unsigned long long *, size_t, const void *, unsigned long long);
    CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*MemMap)(CUdeviceptr, size_t, size_t, unsigned long long, unsigned long long);
    CUresult (*MemUnmap)(CUdeviceptr, size_t);
    CUresult (*MemRelease)(unsigned long long);
    CUresult (*MemAddressFree)(CUdeviceptr, size_t);
    CUresult (*PointerSetAttribute)(const void *, int, CUdeviceptr);
} cu;

static const char *const kNames[] = {
    "cuInit", "cuDeviceGetCount", "cuDeviceGetName", "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent", "cuMemAlloc_v2", "cuMemFree_v2",
    "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoHAsync_v2", "cuMemsetD32Async", "cuStreamCreate",
    "cuStreamDestroy_v2", "cuStreamSynchronize", "cuLaunchHostFunc", "cuEventCreate", "cuEventRecord",
    "cuEventQuery", "cuEventSynchronize", "cuEventDestroy_v2", "cuPointerGetAttribute",
    "cuPointerGetAttributes", "cuMemHostAlloc", "cuMemFreeHost", "cuMemAllocManaged",
    "cuMemHostRegister_v2", "cuMemHostUnregister", "cuIpcGetMemHandle", "cuIpcOpenMemHandle_v2",
    "cuIpcCloseMemHandle", "cuIpcGetEventHandle", "cuIpcOpenEventHandle", "cuModuleLoadData",
    "cuModuleGetFunction", "cuModuleUnload", "cuLaunchKernel", "fakecuda_stats", "cuDriverGetVersion",
    "cuMemGetInfo_v2", "cuMemAllocAsync", "cuMemFreeAsync", "cuMemCreate", "cuMemAddressReserve", "cuMemMap",
    "cuMemUnmap", "cuMemRelease", "cuMemAddressFree", "cuPointerSetAttribute", "fakecuda_counters",
    "cuStreamWaitValue32_v2", "cuStreamWaitValue64_v2", "cuStreamWriteValue32_v2", "cuStreamWriteValue64_v2",
};

/* Every entry point a CUDA-aware Open MPI 4.1 looks up (opal/mca/common/cuda, built
 * against CUDA 12/13 headers, which name the _v2 versions): it leaves CUDA support off
 * when one is missing (contrib/cuda-openmpi builds such an Open MPI for the tests). */
static const char *const kOmpi41Names[] = {
    "cuStreamCreate", "cuCtxGetCurrent", "cuEventCreate", "cuEventRecord", "cuMemHostRegister_v2",
    "cuMemHostUnregister", "cuPointerGetAttribute", "cuEventQuery", "cuEventDestroy_v2", "cuStreamWaitEvent",
    "cuMemcpyAsync", "cuMemcpy", "cuMemFree_v2", "cuMemAlloc_v2", "cuMemGetAddressRange_v2",
    "cuIpcGetEventHandle", "cuIpcOpenEventHandle", "cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle",
    "cuIpcGetMemHandle", "cuCtxGetDevice", "cuDeviceCanAccessPeer", "cuDeviceGet", "cuPointerSetAttribute",
    "cuCtxSetCurrent", "cuEventSynchronize", "cuStreamSynchronize", "cuStreamDestroy_v2",
    "cuPointerGetAttributes",
};

static int npass, nfail;

static void check(int ok, const char *name, const char *why) {
    if (ok) {
        printf("ok   %s\n", name);
        npass++;
    } else {
        printf("FAIL %s: %s\n", name, why);
        nfail++;
    }
    fflush(stdout);
}

#define SIZE 8192 /* two pages: copies at an interior offset stay inside */
#define PTR(x) ((CUdeviceptr)(uintptr_t)(x))

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(i * 7 + seed);
}

static int same(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != (unsigned char)(i * 7 + seed)) return 0;
    return 1;
}

/* Runs fn in a forked child; its exit status (or 128 + signal). */
static int in_child(int (*fn)(void *), void *arg) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(fn(arg));
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

static int child_no_device(void *unused) {
    (void)unused;
    setenv("FAKECUDA_DEVICES", "0", 1);
    return cu.Init(0) == NO_DEVICE ? 0 : 1;
}

static int child_touch(void *p) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    return *(volatile unsigned char *)p; /* must fault */
}

static int child_after_init(void *unused) {
    CUdeviceptr p = 0;
    (void)unused;
    return cu.MemAlloc(&p, 16) == 3 && cu.Init(0) == 3 ? 0 : 1;
}

/* Requests to the helper process. */
struct request {
    int op; /* 1: IPC memory, 2: IPC event, 3: a stale memory handle, 4: open and keep, 5: open,
               6: close what 4 kept, 7: allocate 1 MiB and keep, 8: free what 7 kept */
    CUipcMemHandle mem;
    CUipcEventHandle ev;
};

static int peer_ipc(struct request *r) {
    CUdeviceptr a = 0, b = 0;
    unsigned char buf[SIZE];
    if (cu.IpcOpenMemHandle(&a, r->mem, 1) != 0) return 1;
    if (cu.IpcOpenMemHandle(&b, r->mem, 1) != 0 || a != b) return 2; /* ref-counted */
    if (cu.MemcpyDtoH(buf, a, SIZE) != 0 || !same(buf, SIZE, 1)) return 3;
    unsigned memtype = 0;
    if (cu.PointerGetAttribute(&memtype, 2, a) != 0 || memtype != 2) return 4;
    fill(buf, SIZE, 2);
    if (cu.MemcpyHtoD(a, buf, SIZE) != 0) return 5;
    if (cu.IpcCloseMemHandle(a) != 0) return 6;
    if (cu.MemcpyDtoH(buf, a, 16) != 0) return 7; /* one reference left: still mapped */
    if (cu.IpcCloseMemHandle(b) != 0) return 8;
    struct fakecuda_stats s;
    cu.Stats(&s);
    return s.ipc_open == 0 ? 0 : 9;
}

static int peer_ipc_event(struct request *r) {
    CUdeviceptr p = 0;
    CUevent ev = NULL;
    unsigned words[SIZE / 4];
    if (cu.IpcOpenMemHandle(&p, r->mem, 1) != 0 || cu.IpcOpenEventHandle(&ev, r->ev) != 0) return 1;
    if (cu.EventQuery(ev) != NOT_READY) return 2; /* the parent's stream is still busy */
    if (cu.EventSynchronize(ev) != 0) return 3;
    if (cu.MemcpyDtoH(words, p, SIZE) != 0) return 4;
    for (int i = 0; i < SIZE / 4; ++i)
        if (words[i] != 0xC0FFEE01u) return 5;
    cu.EventDestroy(ev);
    cu.IpcCloseMemHandle(p);
    return 0;
}

static int to_peer[2], from_peer[2];

/* The helper: its own cuInit and context, then one request at a time until EOF. */
static void peer_main(void) {
    CUcontext ctx = NULL;
    struct request r;
    close(to_peer[1]);
    close(from_peer[0]);
    int ready = cu.Init(0) == 0 && cu.PrimaryCtxRetain(&ctx, 0) == 0 && cu.CtxSetCurrent(ctx) == 0;
    CUdeviceptr kept = 0;
    while (read(to_peer[0], &r, sizeof r) == (ssize_t)sizeof r) {
        CUdeviceptr p = 0;
        int rc;
        if (!ready) {
            rc = 100;
        } else if (r.op == 4) {
            rc = cu.IpcOpenMemHandle(&kept, r.mem, 1);
        } else if (r.op == 5) { /* the result code itself; closes what it opened */
            rc = cu.IpcOpenMemHandle(&p, r.mem, 1);
            if (rc == 0) cu.IpcCloseMemHandle(p);
        } else if (r.op == 6) {
            rc = cu.IpcCloseMemHandle(kept);
        } else if (r.op == 7) {
            rc = cu.MemAlloc(&kept, 1 << 20);
        } else if (r.op == 8) {
            rc = cu.MemFree(kept);
        } else {
            rc = r.op == 1 ? peer_ipc(&r) : r.op == 2 ? peer_ipc_event(&r)
                 : cu.IpcOpenMemHandle(&p, r.mem, 1) == 205 ? 0 : 1; /* MAP_FAILED */
        }
        if (write(from_peer[1], &rc, sizeof rc) != (ssize_t)sizeof rc) break;
    }
    _exit(0);
}

static int ask_peer(struct request *r) {
    int rc = -1;
    if (write(to_peer[1], r, sizeof *r) != (ssize_t)sizeof *r || read(from_peer[0], &rc, sizeof rc) != (ssize_t)sizeof rc)
        return -1;
    return rc;
}

static void host_fn(void *flag) { *(volatile int *)flag = 1; }

/* Launches f as strata does: one thread per element in blocks of 256. */
static CUresult launch(CUfunction f, void *dst, const void *const *src, int nsrc, unsigned long long n, unsigned block,
                       CUstream s) {
    struct srcs sp;
    struct dsts dp;
    int ndst = 1;
    memset(&sp, 0, sizeof sp);
    memset(&dp, 0, sizeof dp);
    for (int i = 0; i < nsrc && i < 8; ++i) sp.p[i] = src[i];
    dp.p[0] = dst;
    void *params[] = {&dp, &ndst, &sp, &nsrc, &n};
    return cu.LaunchKernel(f, (unsigned)((n + 255) / 256), 1, 1, block, 1, 1, 0, s, params, NULL);
}

int main(int argc, char **argv) {
    char why[256];
    if (argc > 1) {
        fprintf(stderr, "usage: %s (no arguments; run with LD_LIBRARY_PATH=<builddir>/test/fakecuda)\n", argv[0]);
        return 2;
    }
    setenv("FAKECUDA_DELAY_US", "20000", 1);
    /* A "machine" of our own for cuMemGetInfo (fake_devmem.h): other runs do not count. */
    char node[32], node_file[96];
    snprintf(node, sizeof node, "selftest%ld", (long)getpid());
    snprintf(node_file, sizeof node_file, "/dev/shm/fakecuda-%u-%s-dev0", (unsigned)getuid(), node);
    setenv("FAKECUDA_NODE", node, 1);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "fakecuda_selftest: %s (set LD_LIBRARY_PATH to <builddir>/test/fakecuda)\n", dlerror());
        return 1;
    }
    void **slot = (void **)&cu;
    for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; ++i)
        if ((slot[i] = dlsym(lib, kNames[i])) == NULL) {
            fprintf(stderr, "fakecuda_selftest: libcuda.so.1 lacks %s (not the fake driver?)\n", kNames[i]);
            return 1;
        }

    int missing = 0;
    for (size_t i = 0; i < sizeof kOmpi41Names / sizeof kOmpi41Names[0]; ++i)
        if (dlsym(lib, kOmpi41Names[i]) == NULL) {
            printf("     missing %s\n", kOmpi41Names[i]);
            missing++;
        }
    check(missing == 0, "ompi41_entry_points", "an entry point a CUDA-aware Open MPI 4.1 needs is missing");

    /* 0. Devices: FAKECUDA_DEVICES=0 means no GPU (checked before this process inits). */
    check(in_child(child_no_device, NULL) == 0, "no_device", "cuInit with FAKECUDA_DEVICES=0 did not give 100");
    fflush(stdout);
    pid_t peer = -1;
    if (pipe(to_peer) != 0 || pipe(from_peer) != 0 || (peer = fork()) < 0) return 1;
    if (peer == 0) peer_main();
    close(to_peer[0]);
    close(from_peer[1]);
    int n = 0;
    char name[64] = "";
    CUcontext ctx = NULL;
    CUdeviceptr d = 0;
    check(cu.MemAlloc(&d, 16) == 3, "needs_init", "cuMemAlloc before cuInit did not give NOT_INITIALIZED");
    check(cu.Init(0) == 0 && cu.DeviceGetCount(&n) == 0 && n == 1 && cu.DeviceGetName(name, sizeof name, 0) == 0 &&
              strcmp(name, "strata fake GPU") == 0,
          "device", "cuInit/cuDeviceGetCount/cuDeviceGetName");
    check(cu.MemAlloc(&d, 16) == INVALID_CONTEXT, "needs_context", "cuMemAlloc without a context did not give 201");
    if (cu.PrimaryCtxRetain(&ctx, 0) != 0 || cu.CtxSetCurrent(ctx) != 0) return 1;
    check(in_child(child_after_init, NULL) == 0, "fork_after_init_unusable",
          "a child forked after cuInit could still use the driver");

    /* 1. Device memory is not host-accessible. */
    if (cu.MemAlloc(&d, SIZE) != 0) return 1;
    int st = in_child(child_touch, (void *)(uintptr_t)d);
    snprintf(why, sizeof why, "child reading a device pointer ended with %d, not SIGSEGV", st);
    check(st == 128 + SIGSEGV, "device_pointer_faults", why);

    /* 2. H2D/D2H round trip, interior pointers, overrun. */
    static unsigned char src[SIZE], dst[SIZE];
    fill(src, SIZE, 1);
    check(cu.MemcpyHtoD(d, src, SIZE) == 0 && cu.MemcpyDtoH(dst, d, SIZE) == 0 && same(dst, SIZE, 1),
          "roundtrip", "H2D then D2H did not give the data back");
    memset(dst, 0, SIZE);
    check(cu.MemcpyDtoH(dst, d + 100, 200) == 0 && memcmp(dst, src + 100, 200) == 0, "interior_pointer",
          "D2H from base+100 read the wrong bytes");
    check(cu.MemcpyDtoH(dst, d + SIZE - 100, 200) == INVALID_VALUE, "overrun", "a copy past the end was accepted");
    check(cu.MemcpyHtoD(PTR(dst), src, 16) == INVALID_VALUE && cu.MemsetD32Async(PTR(dst), 0, 4, NULL) == INVALID_VALUE,
          "host_pointer_as_device", "plain host memory was accepted where a device address is required");

    /* 3. Streams are asynchronous: not done (and data stale) until the event says so. */
    CUstream s = NULL;
    CUevent ev = NULL;
    volatile int flag = 0;
    memset(dst, 0, SIZE);
    if (cu.StreamCreate(&s, 1) != 0 || cu.EventCreate(&ev, 2) != 0) return 1;
    check(cu.MemcpyDtoHAsync(dst, d, SIZE, s) == 0 && cu.EventRecord(ev, s) == 0 &&
              cu.LaunchHostFunc(s, host_fn, (void *)&flag) == 0,
          "async_enqueue", "queueing failed");
    check(cu.EventQuery(ev) == NOT_READY && dst[1] == 0 && flag == 0, "async_not_done_yet",
          "the copy completed (or the event said so) before the stream ran it");
    int polls = 0;
    while (cu.EventQuery(ev) == NOT_READY) {
        usleep(1000);
        ++polls;
    }
    check(same(dst, SIZE, 1), "async_done_when_event_says", "the event completed before the copy did");
    cu.StreamSynchronize(s);
    check(flag == 1 && polls > 0, "host_func", "cuLaunchHostFunc did not run by cuStreamSynchronize");

    /* 4. Pointer attributes. */
    CUdeviceptr d2 = 0, start = 0;
    unsigned memtype = 9, managed = 9;
    int ordinal = 9;
    unsigned long long id1 = 0, id2 = 0, id3 = 0;
    size_t range = 0;
    int attrs[3] = {2, 8, 9};
    void *vals[3] = {&memtype, &managed, &ordinal};
    cu.PointerGetAttribute(&id1, 7, d);
    check(cu.PointerGetAttributes(3, attrs, vals, d + 5) == 0 && memtype == 2 && managed == 0 && ordinal == 0,
          "attr_device", "device memory is not type 2 / unmanaged / ordinal 0");
    check(cu.PointerGetAttribute(&start, 11, d + 5) == 0 && start == d &&
              cu.PointerGetAttribute(&range, 12, d + 5) == 0 && range == SIZE,
          "attr_range", "RANGE_START_ADDR/RANGE_SIZE of an interior pointer");
    int on_stack = 0;
    memtype = 9;
    check(cu.PointerGetAttributes(3, attrs, vals, PTR(&on_stack)) == 0 && memtype == 0 &&
              cu.PointerGetAttribute(&memtype, 2, PTR(&on_stack)) == INVALID_VALUE,
          "attr_unknown", "plural must succeed with zeros, singular must fail");
    void *pinned = NULL;
    CUdeviceptr um = 0;
    check(cu.MemHostAlloc(&pinned, 100, 2) == 0 && cu.PointerGetAttribute(&memtype, 2, PTR(pinned)) == 0 &&
              memtype == 1 && (((char *)pinned)[99] = 1),
          "attr_pinned", "cuMemHostAlloc memory is not host type 1 and writable");
    check(cu.MemAllocManaged(&um, 100, 1) == 0 && cu.PointerGetAttributes(3, attrs, vals, um) == 0 && managed == 1 &&
              memtype == 2 && (((char *)(uintptr_t)um)[99] = 1),
          "attr_managed", "managed memory is not IS_MANAGED and host-writable");
    static char reg[4096];
    check(cu.MemHostRegister(reg, sizeof reg, 0) == 0 && cu.PointerGetAttribute(&memtype, 2, PTR(reg + 9)) == 0 &&
              memtype == 1 && cu.MemHostRegister(reg + 8, 8, 0) == 712,
          "attr_registered", "registered range is not host type 1, or double registration allowed");
    unsigned one = 1, two = 2, sync = 9;
    check(cu.PointerGetAttribute(&sync, 6, d) == 0 && sync == 0 && cu.PointerSetAttribute(&one, 6, d + 5) == 0 &&
              cu.PointerGetAttribute(&sync, 6, d) == 0 && sync == 1 && cu.PointerSetAttribute(&two, 6, d) == INVALID_VALUE &&
              cu.PointerSetAttribute(&one, 2, d) == INVALID_VALUE &&
              cu.PointerSetAttribute(&one, 6, PTR(reg)) == INVALID_VALUE &&
              cu.PointerSetAttribute(&one, 6, PTR(&on_stack)) == INVALID_VALUE,
          "attr_sync_memops", "SYNC_MEMOPS not settable on device memory only, or not read back");
    CUdeviceptr freed = 0;
    check(cu.MemAlloc(&d2, 64) == 0 && cu.PointerGetAttribute(&id2, 7, d2) == 0 && id2 != id1 && cu.MemFree(d2) == 0 &&
              cu.MemAlloc(&d2, 64) == 0 && cu.PointerGetAttribute(&id3, 7, d2) == 0 && id3 != id2 && id3 != id1,
          "attr_buffer_id", "BUFFER_ID not unique or reused");
    check(cu.MemAlloc(&freed, 64) == 0 && cu.MemFree(freed) == 0 && cu.MemcpyDtoH(dst, freed, 16) == INVALID_VALUE &&
              cu.MemFree(freed) == INVALID_VALUE,
          "use_after_free", "a freed device pointer was accepted by cuMemcpyDtoH or freed twice");
    struct fakecuda_stats mid;
    cu.Stats(&mid);
    check(mid.dev_allocs == 3 && mid.dev_bytes == SIZE + 64 + 100 && mid.host_allocs == 1 && mid.registered == 1 &&
              mid.events == 1 && mid.streams == 1,
          "stats_live", "live counts do not match what is allocated");
    cu.MemFree(d2);
    cu.MemFree(um);
    cu.MemFreeHost(pinned);
    cu.MemHostUnregister(reg);

    /* 5. IPC: the peer process opens the handle, sees our data, and its writes reach us. */
    struct request rq;
    memset(&rq, 0, sizeof rq);
    rq.op = 1;
    check(cu.IpcGetMemHandle(&rq.mem, d) == 0, "ipc_get", "cuIpcGetMemHandle");
    CUdeviceptr self = 0;
    check(cu.IpcOpenMemHandle(&self, rq.mem, 1) == INVALID_CONTEXT, "ipc_not_in_exporter",
          "the exporting process could open its own handle");
    st = ask_peer(&rq);
    snprintf(why, sizeof why, "peer failed at step %d", st);
    check(st == 0, "ipc_peer_reads_exporter", why);
    check(cu.MemcpyDtoH(dst, d, SIZE) == 0 && same(dst, SIZE, 2), "ipc_exporter_sees_peer_write",
          "the peer's write through the IPC mapping did not reach the allocation");

    /* 6. IPC events: the peer waits for work still queued on our stream. */
    CUevent iev = NULL;
    rq.op = 2;
    check(cu.EventCreate(&iev, 6) == 0 && cu.IpcGetEventHandle(&rq.ev, iev) == 0 &&
              cu.MemsetD32Async(d, 0xC0FFEE01u, SIZE / 4, s) == 0 && cu.EventRecord(iev, s) == 0,
          "ipc_event_setup", "interprocess event or memset");
    st = ask_peer(&rq);
    snprintf(why, sizeof why, "peer failed at step %d", st);
    check(st == 0, "ipc_event_wait", why);

    /* 7. A handle to freed memory does not open, even after its fd number is reused. */
    CUdeviceptr gone = 0, reuse = 0;
    rq.op = 3;
    check(cu.MemAlloc(&gone, 64) == 0 && cu.IpcGetMemHandle(&rq.mem, gone) == 0 && cu.MemFree(gone) == 0 &&
              cu.MemAlloc(&reuse, 64) == 0 && ask_peer(&rq) == 0 && cu.MemFree(reuse) == 0,
          "ipc_stale_handle", "the peer opened a handle whose allocation had been freed");

    /* 7b. A stale mapping: the peer keeps X mapped; we free X and an allocation before
     * it, and get Y over both (at another start): the peer's open of Y is refused with
     * ALREADY_MAPPED until it closes X. */
    {
        CUdeviceptr before = 0, x = 0, y = 0;
        struct request keep;
        memset(&keep, 0, sizeof keep);
        keep.op = 4;
        int ok = cu.MemAlloc(&before, 1 << 20) == 0 && cu.MemAlloc(&x, 1 << 20) == 0 && x == before + (1 << 20) &&
                 cu.IpcGetMemHandle(&keep.mem, x) == 0 && ask_peer(&keep) == 0 && cu.MemFree(before) == 0 &&
                 cu.MemFree(x) == 0 && cu.MemAlloc(&y, 2 << 20) == 0 && y == before;
        check(ok, "addresses_reused", "a freed device range was not handed out again (first fit)");
        struct request open_y;
        memset(&open_y, 0, sizeof open_y);
        open_y.op = 5;
        check(cu.IpcGetMemHandle(&open_y.mem, y) == 0 && ask_peer(&open_y) == ALREADY_MAPPED, "ipc_overlap_already_mapped",
              "a handle overlapping a stale mapping of the same exporter opened");
        keep.op = 6;
        check(ask_peer(&keep) == 0 && ask_peer(&open_y) == 0, "ipc_open_after_close",
              "closing the stale mapping did not let the new allocation open");
        cu.MemFree(y);
    }

    /* 7c. Stream-ordered and virtual-memory allocations: device memory, not legacy IPC. */
    {
        CUdeviceptr pool = 0, va = 0;
        unsigned long long h = 0;
        unsigned memtype = 0, capable = 1;
        CUipcMemHandle ih;
        char prop[64] = {0};
        check(cu.MemAllocAsync(&pool, 4096, s) == 0 && cu.PointerGetAttribute(&memtype, 2, pool) == 0 && memtype == 2 &&
                  cu.PointerGetAttribute(&capable, 10, pool) == 0 && capable == 0 &&
                  cu.IpcGetMemHandle(&ih, pool) == INVALID_VALUE && cu.MemcpyHtoD(pool, src, 4096) == 0 &&
                  cu.MemFreeAsync(pool, s) == 0,
              "pool_not_ipc", "cuMemAllocAsync memory: not device memory, or legacy-IPC capable");
        capable = 1;
        check(cu.MemCreate(&h, 2 << 20, prop, 0) == 0 && cu.MemAddressReserve(&va, 2 << 20, 0, 0, 0) == 0 &&
                  cu.MemMap(va, 2 << 20, 0, h, 0) == 0 && cu.MemRelease(h) == 0 &&
                  cu.PointerGetAttribute(&memtype, 2, va + 8) == 0 && memtype == 2 &&
                  cu.PointerGetAttribute(&capable, 10, va) == 0 && capable == 0 &&
                  cu.IpcGetMemHandle(&ih, va) == INVALID_VALUE && cu.MemcpyHtoD(va + 100, src, 4096) == 0 &&
                  cu.MemcpyDtoH(dst, va + 100, 4096) == 0 && same(dst, 4096, 1) && cu.MemUnmap(va, 2 << 20) == 0 &&
                  cu.MemAddressFree(va, 2 << 20) == 0,
              "vmm_not_ipc", "cuMemCreate + cuMemMap memory: not device memory, or legacy-IPC capable");
    }

    /* 7d. cuMemGetInfo counts every process on the (fake) machine, in 2 MiB pages. */
    {
        size_t free0 = 0, free1 = 0, total = 0;
        CUdeviceptr big = 0;
        struct request open_big;
        memset(&open_big, 0, sizeof open_big);
        open_big.op = 7;
        check(cu.MemGetInfo(&free0, &total) == 0 && cu.MemAlloc(&big, 3 << 20) == 0 &&
                  cu.MemGetInfo(&free1, &total) == 0 && free0 - free1 == (4 << 20) && cu.MemFree(big) == 0 &&
                  cu.MemGetInfo(&free1, &total) == 0 && free1 == free0,
              "meminfo_pages", "cuMemGetInfo did not drop by 2 MiB pages");
        check(ask_peer(&open_big) == 0 && cu.MemGetInfo(&free1, &total) == 0 && free0 - free1 == (2 << 20),
              "meminfo_device_wide", "another process's allocation did not show in cuMemGetInfo");
        open_big.op = 8;
        check(ask_peer(&open_big) == 0 && cu.MemGetInfo(&free1, &total) == 0 && free1 == free0,
              "meminfo_freed", "cuMemGetInfo did not come back after the other process freed");
    }

    /* 8. Kernels: looked up by name, checked at launch, run in stream order. */
    {
        enum { N = SIZE / 4 };
        /* PTX as nvcc writes it; CUDA 12.4's ISA, so any driver from 12.4 on runs it. */
        static const char image[] = "//\n.version 8.4\n.target sm_75\n.address_size 64\n";
        static const char newer[] = ".version 9.0\n.target sm_75\n";
        CUmodule mod_check = NULL;
        int v = 0;
        check(cu.ModuleLoadData(&mod_check, "any image") == INVALID_IMAGE, "image_invalid",
              "bytes that are no fatbin, cubin or PTX loaded");
        setenv("FAKECUDA_DRIVER_VERSION", "12040", 1);
        check(cu.DriverGetVersion(&v) == 0 && v == 12040 && cu.ModuleLoadData(&mod_check, newer) == UNSUPPORTED_PTX &&
                  cu.ModuleLoadData(&mod_check, image) == 0 && cu.ModuleUnload(mod_check) == 0,
              "image_needs_driver", "a 12.4 driver loaded PTX ISA 9.0, or refused ISA 8.4");
        unsetenv("FAKECUDA_DRIVER_VERSION");
        check(cu.DriverGetVersion(&v) == 0 && v == 13000 && cu.ModuleLoadData(&mod_check, newer) == 0 &&
                  cu.ModuleUnload(mod_check) == 0,
              "image_current_driver", "the default (13.0) driver refused PTX ISA 9.0");
        static unsigned a_in[N], b_in[N], out[N];
        CUmodule mod = NULL;
        CUfunction sum = NULL, again = NULL, none = NULL;
        CUdeviceptr a = 0, b = 0;
        CUevent kev = NULL;
        int wrong = 0;
        check(cu.ModuleLoadData(&mod, image) == 0 && cu.ModuleGetFunction(&sum, mod, "strata_reduce_uint32_sum") == 0 &&
                  cu.ModuleGetFunction(&again, mod, "strata_reduce_uint32_sum") == 0 && again == sum,
              "kernel_lookup", "cuModuleGetFunction of strata_reduce_uint32_sum");
        check(cu.ModuleGetFunction(&none, mod, "strata_reduce_int32_sum") == NOT_FOUND &&
                  cu.ModuleGetFunction(&none, mod, "vectorAdd") == NOT_FOUND,
              "kernel_unknown_name", "a name that is not in strata's kernel list was found");
        for (int i = 0; i < N; ++i) {
            a_in[i] = (unsigned)i;
            b_in[i] = 3u * (unsigned)i + 1u;
        }
        if (cu.MemAlloc(&a, SIZE) != 0 || cu.MemAlloc(&b, SIZE) != 0 || cu.MemcpyHtoD(a, a_in, SIZE) != 0 ||
            cu.MemcpyHtoD(b, b_in, SIZE) != 0 || cu.EventCreate(&kev, 2) != 0)
            return 1;
        const void *ab[3] = {(void *)(uintptr_t)a, (void *)(uintptr_t)b, (void *)(uintptr_t)a};
        memset(out, 0, sizeof out);
        /* b = a + b + a, in place (b is a source too), then copied back on the same stream. */
        check(launch(sum, (void *)(uintptr_t)b, ab, 3, N, 256, s) == 0 && cu.MemcpyDtoHAsync(out, b, SIZE, s) == 0 &&
                  cu.EventRecord(kev, s) == 0,
              "kernel_launch", "cuLaunchKernel of a valid reduction");
        check(cu.EventQuery(kev) == NOT_READY && out[N - 1] == 0, "kernel_not_done_yet",
              "the launch completed before the stream ran it");
        while (cu.EventQuery(kev) == NOT_READY) usleep(1000);
        for (int i = 0; i < N; ++i) wrong += out[i] != 5u * (unsigned)i + 1u;
        check(wrong == 0, "kernel_result_when_event_says", "a + b + a is wrong after the event completed");
        check(launch(sum, (void *)(uintptr_t)b, ab, 3, N, 2048, s) == INVALID_VALUE &&
                  launch(sum, (void *)(uintptr_t)b, ab, 0, N, 256, s) == INVALID_VALUE &&
                  launch(sum, (void *)(uintptr_t)b, ab, 9, N, 256, s) == INVALID_VALUE,
              "kernel_bad_launch", "a 2048-thread block, or 0 or 9 sources, was accepted");
        const void *host_src[2] = {(void *)(uintptr_t)a, a_in};
        check(launch(sum, (void *)(uintptr_t)b, host_src, 2, N, 256, s) == INVALID_VALUE &&
                  launch(sum, (void *)(uintptr_t)(b + 4), ab, 2, N, 256, s) == INVALID_VALUE,
              "kernel_bad_operands", "plain host memory or an overrun was accepted");
        cu.StreamSynchronize(s);
        check(cu.ModuleUnload(mod) == 0 && launch(sum, (void *)(uintptr_t)b, ab, 2, N, 256, s) == INVALID_HANDLE &&
                  cu.ModuleUnload(mod) == INVALID_HANDLE,
              "kernel_after_unload", "a function of an unloaded module still launched, or unloaded twice");
        cu.EventDestroy(kev);
        cu.MemFree(a);
        cu.MemFree(b);
    }

    /* 9. Everything released: the counters are back to zero. */
    cu.StreamSynchronize(s);
    cu.StreamDestroy(s);
    cu.EventDestroy(ev);
    cu.EventDestroy(iev);
    cu.MemFree(d);
    cu.PrimaryCtxRelease(0);
    struct fakecuda_stats end;
    cu.Stats(&end);
    snprintf(why, sizeof why, "dev_allocs=%llu dev_bytes=%llu ipc_open=%llu host_allocs=%llu registered=%llu "
             "events=%llu streams=%llu modules=%llu", end.dev_allocs, end.dev_bytes, end.ipc_open, end.host_allocs,
             end.registered, end.events, end.streams, end.modules);
    check(end.dev_allocs == 0 && end.dev_bytes == 0 && end.ipc_open == 0 && end.host_allocs == 0 &&
              end.registered == 0 && end.events == 0 && end.streams == 0 && end.modules == 0 &&
              end.total_dev_allocs == 15,
          "stats_zero_after_free", why);

    /* 10. A misaligned operand: the launch succeeds, the kernel faults on the stream, and
     * from then on every call fails with the same error (last: it poisons the process). */
    {
        CUmodule mod = NULL;
        CUfunction sum = NULL;
        CUdeviceptr a = 0;
        CUstream s2 = NULL;
        CUevent e2 = NULL;
        static const char image[] = ".version 8.4\n.target sm_75\n";
        if (cu.StreamCreate(&s2, 1) != 0 || cu.EventCreate(&e2, 2) != 0 || cu.MemAlloc(&a, SIZE) != 0 ||
            cu.ModuleLoadData(&mod, image) != 0 || cu.ModuleGetFunction(&sum, mod, "strata_reduce_uint32_sum") != 0)
            return 1;
        const void *odd[2] = {(void *)(uintptr_t)a, (void *)(uintptr_t)(a + 2)};
        check(launch(sum, (void *)(uintptr_t)a, odd, 2, 4, 256, s2) == 0 && cu.EventRecord(e2, s2) == 0,
              "misaligned_launch_accepted", "the launch itself was refused (a GPU faults later, in the kernel)");
        CUresult q;
        while ((q = cu.EventQuery(e2)) == NOT_READY) usleep(1000);
        CUdeviceptr more = 0;
        check(q == MISALIGNED && cu.StreamSynchronize(s2) == MISALIGNED && cu.MemAlloc(&more, 64) == MISALIGNED &&
                  cu.MemcpyHtoD(a, src, 16) == MISALIGNED,
              "misaligned_sticky", "the fault did not show, or a later call succeeded");
    }

    close(to_peer[1]);
    waitpid(peer, NULL, 0);
    unlink(node_file);
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail == 0 ? 0 : 1;
}
