/* test/common/devbuf.c - see devbuf.h. */
#include "devbuf.h"

#include <dlfcn.h>
#include <stdio.h>

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
} cu;

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
    if (0 != (rc = cu.Init(0)) || 0 != (rc = cu.DeviceGetCount(&n)) || 0 == n) {
        snprintf(why, why_size, "no GPU (cuInit/cuDeviceGetCount: %d, %d device(s))", rc, n);
        return -1;
    }
    cu.device = (local_rank < 0 ? 0 : local_rank) % n;
    if (0 != (rc = cu.DeviceGet(&dev, cu.device)) || 0 != (rc = cu.PrimaryCtxRetain(&ctx, dev)) ||
        0 != (rc = cu.CtxSetCurrent(ctx))) {
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

void *devbuf_alloc_managed(size_t bytes)
{
    CUdeviceptr p = 0;
    /* CU_MEM_ATTACH_GLOBAL */
    if (report("cuMemAllocManaged", cu.MemAllocManaged(&p, bytes ? bytes : 1, 1))) return NULL;
    return (void *) p;
}

void devbuf_free(void *p)
{
    if (p) report("cuMemFree", cu.MemFree((CUdeviceptr) p));
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
    if (NULL == cu.MemGetInfo || 0 != cu.MemGetInfo(&free_b, &total)) return 0;
    return total - free_b;
}
