// SPDX-License-Identifier: BSD-3-Clause
// cuda_api.cc - run-time loading of the CUDA driver; see cuda_api.h.
#include "topo/cuda_api.h"

#include <dlfcn.h>

#ifdef STRATA_HAVE_CUDA
#include <cuda.h>
namespace strata { namespace topo { namespace cu {
static_assert((long)ATTR_PCI_BUS_ID == (long)CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, "cuda.h mismatch");
static_assert((long)ATTR_PCI_DEVICE_ID == (long)CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, "cuda.h mismatch");
static_assert((long)ATTR_PCI_DOMAIN_ID == (long)CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, "cuda.h mismatch");
static_assert((long)ATTR_CC_MAJOR == (long)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuda.h mismatch");
static_assert((long)ATTR_CC_MINOR == (long)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuda.h mismatch");
static_assert((long)EVENT_DISABLE_TIMING == (long)CU_EVENT_DISABLE_TIMING, "cuda.h mismatch");
static_assert((long)EVENT_INTERPROCESS == (long)CU_EVENT_INTERPROCESS, "cuda.h mismatch");
static_assert((long)IPC_MEM_LAZY_ENABLE_PEER_ACCESS == (long)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, "cuda.h mismatch");
static_assert((long)MEMHOSTALLOC_PORTABLE == (long)CU_MEMHOSTALLOC_PORTABLE, "cuda.h mismatch");
static_assert((long)MEMHOSTALLOC_DEVICEMAP == (long)CU_MEMHOSTALLOC_DEVICEMAP, "cuda.h mismatch");
static_assert((long)STREAM_WAIT_VALUE_GEQ == (long)CU_STREAM_WAIT_VALUE_GEQ, "cuda.h mismatch");
static_assert((long)STREAM_WRITE_VALUE_DEFAULT == (long)CU_STREAM_WRITE_VALUE_DEFAULT, "cuda.h mismatch");
static_assert((long)MEMHOSTREGISTER_PORTABLE == (long)CU_MEMHOSTREGISTER_PORTABLE, "cuda.h mismatch");
static_assert((long)MEMHOSTREGISTER_DEVICEMAP == (long)CU_MEMHOSTREGISTER_DEVICEMAP, "cuda.h mismatch");
static_assert((long)ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS == (long)CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
              "cuda.h mismatch");
static_assert((long)ERROR_NO_DEVICE == (long)CUDA_ERROR_NO_DEVICE, "cuda.h mismatch");
static_assert((long)ERROR_NOT_INITIALIZED == (long)CUDA_ERROR_NOT_INITIALIZED, "cuda.h mismatch");
static_assert((long)ERROR_ALREADY_MAPPED == (long)CUDA_ERROR_ALREADY_MAPPED, "cuda.h mismatch");
static_assert((long)ERROR_NOT_READY == (long)CUDA_ERROR_NOT_READY, "cuda.h mismatch");
static_assert((long)ERROR_NOT_FOUND == (long)CUDA_ERROR_NOT_FOUND, "cuda.h mismatch");
static_assert((long)ATTR_COMPUTE_MODE == (long)CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, "cuda.h mismatch");
static_assert((long)COMPUTEMODE_PROHIBITED == (long)CU_COMPUTEMODE_PROHIBITED, "cuda.h mismatch");
static_assert((long)COMPUTEMODE_EXCLUSIVE_PROCESS == (long)CU_COMPUTEMODE_EXCLUSIVE_PROCESS, "cuda.h mismatch");
static_assert((long)POINTER_ATTR_CONTEXT == (long)CU_POINTER_ATTRIBUTE_CONTEXT, "cuda.h mismatch");
static_assert((long)POINTER_ATTR_MEMORY_TYPE == (long)CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "cuda.h mismatch");
static_assert((long)POINTER_ATTR_IS_MANAGED == (long)CU_POINTER_ATTRIBUTE_IS_MANAGED, "cuda.h mismatch");
static_assert((long)POINTER_ATTR_DEVICE_ORDINAL == (long)CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "cuda.h mismatch");
static_assert((long)POINTER_ATTR_BUFFER_ID == (long)CU_POINTER_ATTRIBUTE_BUFFER_ID, "cuda.h mismatch");
static_assert((long)POINTER_ATTR_IS_LEGACY_IPC_CAPABLE == (long)CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
              "cuda.h mismatch");
static_assert((long)POINTER_ATTR_RANGE_START_ADDR == (long)CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "cuda.h mismatch");
static_assert((long)MEMORYTYPE_HOST == (long)CU_MEMORYTYPE_HOST, "cuda.h mismatch");
static_assert((long)MEMORYTYPE_DEVICE == (long)CU_MEMORYTYPE_DEVICE, "cuda.h mismatch");
static_assert(sizeof(int) == sizeof(CUpointer_attribute), "cuda.h mismatch");
static_assert(sizeof(CUipcMemHandle) == sizeof(::CUipcMemHandle), "cuda.h mismatch");
static_assert(sizeof(CUipcEventHandle) == sizeof(::CUipcEventHandle), "cuda.h mismatch");
}}}
#endif

namespace strata {
namespace topo {
namespace cu {

namespace {
template <typename F>
bool sym(void *lib, const char *name, F *fn, std::string *why) {
    *fn = reinterpret_cast<F>(dlsym(lib, name));
    if (*fn == nullptr) {
        *why = std::string("libcuda.so.1 lacks ") + name;
        return false;
    }
    return true;
}
}  // namespace

bool Driver::load(std::string *why) {
    if (lib != nullptr) return true;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char *e = dlerror();
        *why = std::string("no CUDA driver (") + (e ? e : "libcuda.so.1 not found") + ")";
        return false;
    }
    bool ok = sym(h, "cuInit", &Init, why) && sym(h, "cuDriverGetVersion", &DriverGetVersion, why) &&
              sym(h, "cuGetErrorString", &GetErrorString, why) &&
              sym(h, "cuDeviceGetCount", &DeviceGetCount, why) && sym(h, "cuDeviceGet", &DeviceGet, why) &&
              sym(h, "cuDeviceGetName", &DeviceGetName, why) &&
              sym(h, "cuDeviceTotalMem_v2", &DeviceTotalMem, why) &&
              sym(h, "cuDeviceGetAttribute", &DeviceGetAttribute, why) &&
              sym(h, "cuDeviceCanAccessPeer", &DeviceCanAccessPeer, why) &&
              sym(h, "cuDevicePrimaryCtxRetain", &DevicePrimaryCtxRetain, why) &&
              sym(h, "cuDevicePrimaryCtxRelease_v2", &DevicePrimaryCtxRelease, why) &&
              sym(h, "cuCtxSetCurrent", &CtxSetCurrent, why) && sym(h, "cuMemAlloc_v2", &MemAlloc, why) &&
              sym(h, "cuMemFree_v2", &MemFree, why) && sym(h, "cuMemcpyHtoD_v2", &MemcpyHtoD, why) &&
              sym(h, "cuMemcpyDtoH_v2", &MemcpyDtoH, why) &&
              sym(h, "cuMemcpyDtoHAsync_v2", &MemcpyDtoHAsync, why) &&
              sym(h, "cuMemsetD32Async", &MemsetD32Async, why) &&
              sym(h, "cuStreamCreate", &StreamCreate, why) &&
              sym(h, "cuStreamDestroy_v2", &StreamDestroy, why) &&
              sym(h, "cuStreamSynchronize", &StreamSynchronize, why) &&
              sym(h, "cuStreamWaitEvent", &StreamWaitEvent, why) && sym(h, "cuEventCreate", &EventCreate, why) &&
              sym(h, "cuEventRecord", &EventRecord, why) && sym(h, "cuEventDestroy_v2", &EventDestroy, why) &&
              sym(h, "cuIpcGetMemHandle", &IpcGetMemHandle, why) &&
              sym(h, "cuIpcOpenMemHandle_v2", &IpcOpenMemHandle, why) &&
              sym(h, "cuIpcCloseMemHandle", &IpcCloseMemHandle, why) &&
              sym(h, "cuIpcGetEventHandle", &IpcGetEventHandle, why) &&
              sym(h, "cuIpcOpenEventHandle", &IpcOpenEventHandle, why) &&
              sym(h, "cuMemHostAlloc", &MemHostAlloc, why) && sym(h, "cuMemFreeHost", &MemFreeHost, why) &&
              sym(h, "cuMemHostGetDevicePointer_v2", &MemHostGetDevicePointer, why) &&
              sym(h, "cuMemcpyAsync", &MemcpyAsync, why) && sym(h, "cuEventQuery", &EventQuery, why) &&
              sym(h, "cuEventSynchronize", &EventSynchronize, why) &&
              sym(h, "cuCtxGetCurrent", &CtxGetCurrent, why) &&
              sym(h, "cuCtxGetDevice", &CtxGetDevice, why) &&
              sym(h, "cuPointerGetAttributes", &PointerGetAttributes, why) &&
              sym(h, "cuModuleLoadData", &ModuleLoadData, why) && sym(h, "cuModuleUnload", &ModuleUnload, why) &&
              sym(h, "cuModuleGetFunction", &ModuleGetFunction, why) &&
              sym(h, "cuLaunchKernel", &LaunchKernel, why);
    if (ok) {
        std::string ignored;
        if (!sym(h, "cuStreamWaitValue32_v2", &StreamWaitValue32, &ignored))
            sym(h, "cuStreamWaitValue32", &StreamWaitValue32, &ignored);
        if (!sym(h, "cuStreamWaitValue64_v2", &StreamWaitValue64, &ignored))
            sym(h, "cuStreamWaitValue64", &StreamWaitValue64, &ignored);
        if (!sym(h, "cuStreamWriteValue64_v2", &StreamWriteValue64, &ignored))
            sym(h, "cuStreamWriteValue64", &StreamWriteValue64, &ignored);
        if (!sym(h, "cuMemHostRegister_v2", &MemHostRegister, &ignored))
            sym(h, "cuMemHostRegister", &MemHostRegister, &ignored);
        sym(h, "cuMemHostUnregister", &MemHostUnregister, &ignored);
    }
    if (!ok) {
        dlclose(h);
        return false;
    }
    lib = h;
    return true;
}

std::string Driver::error(const char *call, CUresult rc) const {
    const char *text = nullptr;
    if (GetErrorString != nullptr) GetErrorString(rc, &text);
    return std::string(call) + " failed: error " + std::to_string(rc) + (text ? std::string(" (") + text + ")" : "");
}

}  // namespace cu
}  // namespace topo
}  // namespace strata

#ifdef STRATA_HAVE_CUDA
extern "C" const int strata_cuda_ptx_isa[2];  // the generated kernel image (src/mem/Makefile.inc)
#endif

namespace strata {
namespace {

// CUDA releases: the PTX ISA each one's compiler writes (its driver reads that and
// every older ISA) and the driver branch that shipped it (NVIDIA's release notes and
// the PTX ISA guide). 12.7 was never released: ISA 8.6 is first read by 12.8's driver.
struct Release {
    int version, isa_major, isa_minor;
    const char *branch;
};
constexpr Release kReleases[] = {
    {11000, 7, 0, "r450"}, {11010, 7, 1, "r455"}, {11020, 7, 2, "r460"}, {11030, 7, 3, "r465"},
    {11040, 7, 4, "r470"}, {11050, 7, 5, "r495"}, {11060, 7, 6, "r510"}, {11070, 7, 7, "r515"},
    {11080, 7, 8, "r520"}, {12000, 8, 0, "r525"}, {12010, 8, 1, "r530"}, {12020, 8, 2, "r535"},
    {12030, 8, 3, "r545"}, {12040, 8, 4, "r550"}, {12050, 8, 5, "r555"}, {12060, 8, 5, "r560"},
    {12080, 8, 7, "r570"}, {12090, 8, 8, "r575"}, {13000, 9, 0, "r580"}, {13010, 9, 1, "r590"},
};

}  // namespace

int cuda_ptx_isa_driver(int major, int minor) {
    for (const Release &r : kReleases)
        if (r.isa_major > major || (r.isa_major == major && r.isa_minor >= minor)) return r.version;
    return 0;
}

const char *cuda_driver_branch(int driver_version) {
    const char *b = "";
    for (const Release &r : kReleases)
        if (r.version <= driver_version) b = r.branch;
    return b;
}

namespace topo {

#ifdef STRATA_HAVE_CUDA
std::string build_ptx_isa() {
    return std::to_string(strata_cuda_ptx_isa[0]) + "." + std::to_string(strata_cuda_ptx_isa[1]);
}

int build_driver_needed() {
    const int v = cuda_ptx_isa_driver(strata_cuda_ptx_isa[0], strata_cuda_ptx_isa[1]);
    // An ISA newer than the table: no driver older than the toolkit itself is known to read it.
    return v > 0 ? v : CUDA_VERSION - CUDA_VERSION % 10;
}
#else
std::string build_ptx_isa() { return ""; }
int build_driver_needed() { return 0; }
#endif

}  // namespace topo
}  // namespace strata
