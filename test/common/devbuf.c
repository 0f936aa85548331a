/* SPDX-License-Identifier: BSD-3-Clause */
/* test/common/devbuf.c - see devbuf.h. */
#include "devbuf.h"
#include "test/fakecuda/fakecuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;

static struct {
    void *lib;
    int device;
    char name[128];
    CUresult (*Init)(unsigned);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxCreate)(CUcontext *, unsigned, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemAllocManaged)(CUdeviceptr *, size_t, unsigned);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    /* Optional: stream-ordered and virtual-memory allocators (NULL where missing). */
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, void *);
    CUresult (*MemFreeAsync)(CUdeviceptr, void *);
    CUresult (*StreamSynchronize)(void *);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, void *);
    CUresult (*LaunchHostFunc)(void *, void (*)(void *), void *);
    CUresult (*MemCreate)(unsigned long long *, size_t, const void *, unsigned long long);
    CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*MemMap)(CUdeviceptr, size_t, size_t, unsigned long long, unsigned long long);
    CUresult (*MemSetAccess)(CUdeviceptr, size_t, const void *, size_t);
    CUresult (*MemUnmap)(CUdeviceptr, size_t);
    CUresult (*MemRelease)(unsigned long long);
    CUresult (*MemAddressFree)(CUdeviceptr, size_t);
} cu;

/* Pool and VMM allocations, to free them the way they were made. */
enum { UNSHARE_MANAGED, UNSHARE_POOL, UNSHARE_VMM };
#define MAX_SPECIAL 64
static struct special { void *p; int kind; size_t size; unsigned long long handle; } specials[MAX_SPECIAL];

static int report(const char *call, CUresult rc)
{
    const char *s = NULL;
    if (0 == rc) return 0;
    if (cu.GetErrorString) cu.GetErrorString(rc, &s);
    fprintf(stderr, "devbuf: %s failed: %s (%d)\n", call, s ? s : "unknown error", rc);
    return -1;
}

#define LOAD(field, symbol)                                                         \
    if (NULL == (*(void **) &cu.field = dlsym(cu.lib, symbol))) {                   \
        snprintf(why, why_size, "libcuda.so.1 lacks %s", symbol);                   \
        return -1;                                                                  \
    }

int devbuf_init(int local_rank, char *why, size_t why_size)
{
    int n = 0;
    CUdevice dev;
    CUcontext ctx;
    CUresult rc;

    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (NULL == cu.lib) {
        snprintf(why, why_size, "no CUDA driver (%s)", dlerror());
        return -1;
    }
    LOAD(Init, "cuInit");
    LOAD(GetErrorString, "cuGetErrorString");
    LOAD(DeviceGetCount, "cuDeviceGetCount");
    LOAD(DeviceGet, "cuDeviceGet");
    LOAD(DeviceGetName, "cuDeviceGetName");
    LOAD(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent");
    LOAD(CtxSynchronize, "cuCtxSynchronize");
    LOAD(MemAlloc, "cuMemAlloc_v2");
    LOAD(MemAllocManaged, "cuMemAllocManaged");
    LOAD(MemFree, "cuMemFree_v2");
    LOAD(MemHostAlloc, "cuMemHostAlloc");
    LOAD(MemFreeHost, "cuMemFreeHost");
    LOAD(MemcpyHtoD, "cuMemcpyHtoD_v2");
    LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2");
    LOAD(MemcpyDtoD, "cuMemcpyDtoD_v2");
    LOAD(MemGetInfo, "cuMemGetInfo_v2");
    *(void **) &cu.CtxCreate = dlsym(cu.lib, "cuCtxCreate_v2");
    *(void **) &cu.MemAllocAsync = dlsym(cu.lib, "cuMemAllocAsync");
    *(void **) &cu.MemFreeAsync = dlsym(cu.lib, "cuMemFreeAsync");
    *(void **) &cu.StreamSynchronize = dlsym(cu.lib, "cuStreamSynchronize");
    *(void **) &cu.MemcpyHtoDAsync = dlsym(cu.lib, "cuMemcpyHtoDAsync_v2");
    *(void **) &cu.LaunchHostFunc = dlsym(cu.lib, "cuLaunchHostFunc");
    *(void **) &cu.MemCreate = dlsym(cu.lib, "cuMemCreate");
    *(void **) &cu.MemAddressReserve = dlsym(cu.lib, "cuMemAddressReserve");
    *(void **) &cu.MemMap = dlsym(cu.lib, "cuMemMap");
    *(void **) &cu.MemSetAccess = dlsym(cu.lib, "cuMemSetAccess");
    *(void **) &cu.MemUnmap = dlsym(cu.lib, "cuMemUnmap");
    *(void **) &cu.MemRelease = dlsym(cu.lib, "cuMemRelease");
    *(void **) &cu.MemAddressFree = dlsym(cu.lib, "cuMemAddressFree");
    if (0 != (rc = cu.Init(0)) || 0 != (rc = cu.DeviceGetCount(&n)) || 0 == n) {
        snprintf(why, why_size, "no GPU (cuInit/cuDeviceGetCount: %d, %d device(s))", rc, n);
        return -1;
    }
    cu.device = (local_rank < 0 ? 0 : local_rank) % n;
    if (0 != (rc = cu.DeviceGet(&dev, cu.device))) {
        snprintf(why, why_size, "no GPU %d (CUDA error %d)", cu.device, rc);
        return -1;
    }
    /* DEVBUF_CONTEXT=own: a context of the program's own (cuCtxCreate), as some
     * driver-API codes make, instead of the GPU's primary one that the runtime uses. */
    if (getenv("DEVBUF_CONTEXT") && 0 == strcmp(getenv("DEVBUF_CONTEXT"), "own")) {
        if (NULL == cu.CtxCreate) {
            snprintf(why, why_size, "libcuda.so.1 lacks cuCtxCreate_v2 (DEVBUF_CONTEXT=own)");
            return -1;
        }
        rc = cu.CtxCreate(&ctx, 0, dev);
    } else if (0 == (rc = cu.PrimaryCtxRetain(&ctx, dev))) {
        rc = cu.CtxSetCurrent(ctx);
    }
    if (0 != rc) {
        snprintf(why, why_size, "cannot make GPU %d current (CUDA error %d)", cu.device, rc);
        return -1;
    }
    if (0 != cu.DeviceGetName(cu.name, (int) sizeof cu.name, dev)) snprintf(cu.name, sizeof cu.name, "?");
    return 0;
}

int devbuf_device(void) { return cu.device; }
const char *devbuf_name(void) { return cu.name; }

void *devbuf_alloc(size_t bytes)
{
    CUdeviceptr p = 0;
    if (report("cuMemAlloc", cu.MemAlloc(&p, bytes ? bytes : 1))) return NULL;
    return (void *) p;
}

static int unshareable_kind(void)
{
    const char *k = getenv("DEVBUF_UNSHAREABLE");
    if (k == NULL || strcmp(k, "managed") == 0) return UNSHARE_MANAGED;
    if (strcmp(k, "pool") == 0) return UNSHARE_POOL;
    if (strcmp(k, "vmm") == 0) return UNSHARE_VMM;
    fprintf(stderr, "devbuf: DEVBUF_UNSHAREABLE=%s: want managed, pool or vmm\n", k);
    return UNSHARE_MANAGED;
}

static void *remember(void *p, int kind, size_t size, unsigned long long handle)
{
    for (int i = 0; i < MAX_SPECIAL; ++i) {
        if (specials[i].p == NULL) {
            specials[i].p = p;
            specials[i].kind = kind;
            specials[i].size = size;
            specials[i].handle = handle;
            return p;
        }
    }
    fprintf(stderr, "devbuf: more than %d pool/VMM buffers at once\n", MAX_SPECIAL);
    return NULL;
}

void *devbuf_alloc_pool(size_t bytes)
{
    CUdeviceptr p = 0;
    if (cu.MemAllocAsync == NULL || cu.MemFreeAsync == NULL || cu.StreamSynchronize == NULL) {
        fprintf(stderr, "devbuf: this driver has no stream-ordered allocator\n");
        return NULL;
    }
    if (report("cuMemAllocAsync", cu.MemAllocAsync(&p, bytes ? bytes : 1, NULL)) ||
        report("cuStreamSynchronize", cu.StreamSynchronize(NULL)))
        return NULL;
    return remember((void *) p, UNSHARE_POOL, bytes, 0);
}

void *devbuf_alloc_vmm(size_t bytes)
{
    /* CUmemAllocationProp: pinned (1) memory on device (1) cu.device; access read-write (3). */
    struct { int type, handle_types, loc_type, loc_id; void *win32; unsigned char flags[8]; } prop;
    struct { int loc_type, loc_id; int flags; } access;
    const size_t gran = (size_t) 2 << 20, size = (bytes ? (bytes + gran - 1) / gran : 1) * gran;
    unsigned long long h = 0;
    CUdeviceptr p = 0;
    if (cu.MemCreate == NULL || cu.MemAddressReserve == NULL || cu.MemMap == NULL || cu.MemSetAccess == NULL ||
        cu.MemUnmap == NULL || cu.MemRelease == NULL || cu.MemAddressFree == NULL) {
        fprintf(stderr, "devbuf: this driver has no virtual memory management\n");
        return NULL;
    }
    memset(&prop, 0, sizeof prop);
    prop.type = 1;
    prop.loc_type = 1;
    prop.loc_id = cu.device;
    access.loc_type = 1;
    access.loc_id = cu.device;
    access.flags = 3;
    if (report("cuMemCreate", cu.MemCreate(&h, size, &prop, 0))) return NULL;
    if (report("cuMemAddressReserve", cu.MemAddressReserve(&p, size, 0, 0, 0)) ||
        report("cuMemMap", cu.MemMap(p, size, 0, h, 0)) ||
        report("cuMemSetAccess", cu.MemSetAccess(p, size, &access, 1))) {
        cu.MemRelease(h);
        return NULL;
    }
    return remember((void *) p, UNSHARE_VMM, size, h);
}

void *devbuf_alloc_managed(size_t bytes)
{
    CUdeviceptr p = 0;
    switch (unshareable_kind()) {
    case UNSHARE_POOL: return devbuf_alloc_pool(bytes);
    case UNSHARE_VMM: return devbuf_alloc_vmm(bytes);
    default: break;
    }
    /* CU_MEM_ATTACH_GLOBAL */
    if (report("cuMemAllocManaged", cu.MemAllocManaged(&p, bytes ? bytes : 1, 1))) return NULL;
    return (void *) p;
}

void devbuf_free(void *p)
{
    if (p == NULL) return;
    for (int i = 0; i < MAX_SPECIAL; ++i) {
        struct special *s = &specials[i];
        if (s->p != p) continue;
        if (s->kind == UNSHARE_POOL) {
            report("cuMemFreeAsync", cu.MemFreeAsync((CUdeviceptr) p, NULL));
        } else {
            report("cuMemUnmap", cu.MemUnmap((CUdeviceptr) p, s->size));
            report("cuMemRelease", cu.MemRelease(s->handle));
            report("cuMemAddressFree", cu.MemAddressFree((CUdeviceptr) p, s->size));
        }
        s->p = NULL;
        return;
    }
    report("cuMemFree", cu.MemFree((CUdeviceptr) p));
}

void *devbuf_alloc_pinned(size_t bytes)
{
    void *p = NULL;
    if (report("cuMemHostAlloc", cu.MemHostAlloc(&p, bytes ? bytes : 1, 0))) return NULL;
    return p;
}

void devbuf_free_pinned(void *p)
{
    if (p) report("cuMemFreeHost", cu.MemFreeHost(p));
}

int devbuf_to_dev(void *dst, const void *src, size_t bytes)
{
    return bytes ? report("cuMemcpyHtoD", cu.MemcpyHtoD((CUdeviceptr) dst, src, bytes)) : 0;
}

int devbuf_to_dev_queued(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return 0;
    if (cu.MemcpyHtoDAsync == NULL) {
        fprintf(stderr, "devbuf: the driver has no cuMemcpyHtoDAsync\n");
        return -1;
    }
    return report("cuMemcpyHtoDAsync", cu.MemcpyHtoDAsync((CUdeviceptr) dst, src, bytes, NULL));
}

static void pause_ms(void *ms)
{
    usleep((useconds_t) (uintptr_t) ms * 1000);
}

int devbuf_queue_pause(unsigned ms)
{
    if (cu.LaunchHostFunc == NULL) {
        fprintf(stderr, "devbuf: the driver has no cuLaunchHostFunc\n");
        return -1;
    }
    return report("cuLaunchHostFunc", cu.LaunchHostFunc(NULL, pause_ms, (void *) (uintptr_t) ms));
}

int devbuf_to_host(void *dst, const void *src, size_t bytes)
{
    return bytes ? report("cuMemcpyDtoH", cu.MemcpyDtoH(dst, (CUdeviceptr) src, bytes)) : 0;
}

int devbuf_dev_to_dev(void *dst, const void *src, size_t bytes)
{
    return bytes ? report("cuMemcpyDtoD", cu.MemcpyDtoD((CUdeviceptr) dst, (CUdeviceptr) src, bytes))
                 : 0;
}

int devbuf_sync(void) { return report("cuCtxSynchronize", cu.CtxSynchronize()); }

size_t devbuf_used_bytes(void)
{
    size_t free_b = 0, total = 0;
    /* The fake driver counts this process's own device memory exactly. */
    int (*stats)(struct fakecuda_stats *) = NULL;
    struct fakecuda_stats st;
    if (cu.lib != NULL) *(void **) &stats = dlsym(cu.lib, "fakecuda_stats");
    if (stats != NULL && stats(&st) == 0) return (size_t) st.dev_bytes;
    if (NULL == cu.MemGetInfo || 0 != cu.MemGetInfo(&free_b, &total)) return 0;
    return total - free_b;
}
