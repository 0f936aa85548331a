/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_api.h - the few CUDA driver API entry points strata-info uses, loaded
 * at run time from libcuda.so.1 so that the same binary runs on nodes without
 * a GPU or a driver. Own minimal typedefs (no cuda.h needed); where the build
 * has CUDA, the constants are checked against cuda.h at compile time.
 */
#ifndef STRATA_TOPO_CUDA_API_H
#define STRATA_TOPO_CUDA_API_H

#include <string>

namespace strata {
namespace topo {
namespace cu {

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { char reserved[64]; } CUipcEventHandle;

enum : int {
    SUCCESS = 0,
    ATTR_PCI_BUS_ID = 33,
    ATTR_PCI_DEVICE_ID = 34,
    ATTR_PCI_DOMAIN_ID = 50,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
    ATTR_COMPUTE_MODE = 20,
    COMPUTEMODE_PROHIBITED = 2,
    COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
    ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS = 122,
};
enum : unsigned {
    EVENT_DISABLE_TIMING = 0x2,
    EVENT_INTERPROCESS = 0x4,
    IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1,
    STREAM_NON_BLOCKING = 0x1,
    MEMHOSTALLOC_PORTABLE = 0x1,
    MEMHOSTALLOC_DEVICEMAP = 0x2,
    STREAM_WAIT_VALUE_GEQ = 0x0,
    STREAM_WRITE_VALUE_DEFAULT = 0x0,
    MEMHOSTREGISTER_PORTABLE = 0x1,
    MEMHOSTREGISTER_DEVICEMAP = 0x2,
};
// For the memory domain (src/mem): pointer attributes and their values.
enum : int {
    ERROR_NOT_INITIALIZED = 3,
    ERROR_NO_DEVICE = 100,
    ERROR_ALREADY_MAPPED = 208,
    ERROR_NOT_FOUND = 500,
    ERROR_NOT_READY = 600,
    POINTER_ATTR_CONTEXT = 1,
    POINTER_ATTR_MEMORY_TYPE = 2,
    POINTER_ATTR_BUFFER_ID = 7,
    POINTER_ATTR_IS_MANAGED = 8,
    POINTER_ATTR_DEVICE_ORDINAL = 9,
    POINTER_ATTR_IS_LEGACY_IPC_CAPABLE = 10,
    POINTER_ATTR_RANGE_START_ADDR = 11,
    POINTER_ATTR_RANGE_SIZE = 12,
    MEMORYTYPE_HOST = 1,
    MEMORYTYPE_DEVICE = 2,
};

// Function table. Names are the ABI symbols (the _v2 ones where cuda.h maps
// the plain name onto them).
struct Driver {
    void *lib = nullptr;
    CUresult (*Init)(unsigned) = nullptr;
    CUresult (*DriverGetVersion)(int *) = nullptr;
    CUresult (*GetErrorString)(CUresult, const char **) = nullptr;
    CUresult (*DeviceGetCount)(int *) = nullptr;
    CUresult (*DeviceGet)(CUdevice *, int) = nullptr;
    CUresult (*DeviceGetName)(char *, int, CUdevice) = nullptr;
    CUresult (*DeviceTotalMem)(size_t *, CUdevice) = nullptr;
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice) = nullptr;
    CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice) = nullptr;
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
    CUresult (*DevicePrimaryCtxRelease)(CUdevice) = nullptr;
    CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
    CUresult (*MemAlloc)(CUdeviceptr *, size_t) = nullptr;
    CUresult (*MemFree)(CUdeviceptr) = nullptr;
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream) = nullptr;
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned) = nullptr;
    CUresult (*StreamDestroy)(CUstream) = nullptr;
    CUresult (*StreamSynchronize)(CUstream) = nullptr;
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
    CUresult (*EventCreate)(CUevent *, unsigned) = nullptr;
    CUresult (*EventRecord)(CUevent, CUstream) = nullptr;
    CUresult (*EventDestroy)(CUevent) = nullptr;
    CUresult (*IpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr) = nullptr;
    CUresult (*IpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned) = nullptr;
    CUresult (*IpcCloseMemHandle)(CUdeviceptr) = nullptr;
    CUresult (*IpcGetEventHandle)(CUipcEventHandle *, CUevent) = nullptr;
    CUresult (*IpcOpenEventHandle)(CUevent *, CUipcEventHandle) = nullptr;
    CUresult (*MemHostAlloc)(void **, size_t, unsigned) = nullptr;
    CUresult (*MemFreeHost)(void *) = nullptr;
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned) = nullptr;
    // Optional (stream memory operations): nullptr where the driver lacks it.
    CUresult (*StreamWaitValue32)(CUstream, CUdeviceptr, unsigned, unsigned) = nullptr;
    // Optional, for flags ordered by the stream (src/mem/cuda_domain.cc): 64-bit waits
    // and writes, and host memory the GPU reaches (registered).
    CUresult (*StreamWaitValue64)(CUstream, CUdeviceptr, unsigned long long, unsigned) = nullptr;
    CUresult (*StreamWriteValue64)(CUstream, CUdeviceptr, unsigned long long, unsigned) = nullptr;
    CUresult (*MemHostRegister)(void *, size_t, unsigned) = nullptr;
    CUresult (*MemHostUnregister)(void *) = nullptr;
    // Memory domain (src/mem): queued copies, completion events, pointer kinds.
    CUresult (*MemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
    CUresult (*EventQuery)(CUevent) = nullptr;
    CUresult (*EventSynchronize)(CUevent) = nullptr;
    CUresult (*CtxGetCurrent)(CUcontext *) = nullptr;
    CUresult (*CtxGetDevice)(CUdevice *) = nullptr;
    CUresult (*PointerGetAttributes)(unsigned, int *, void **, CUdeviceptr) = nullptr;
    // Kernels (src/mem/cuda_kernels.h): a module from an in-memory fatbin, launched by name.
    CUresult (*ModuleLoadData)(CUmodule *, const void *) = nullptr;
    CUresult (*ModuleUnload)(CUmodule) = nullptr;
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
    // (f, grid x/y/z, block x/y/z, shared bytes, stream, kernelParams, extra)
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **) = nullptr;

    // dlopen + dlsym of everything. false with *why ("libcuda.so.1: not found",
    // "symbol cuX missing"). Does not call cuInit.
    bool load(std::string *why);
    // "cuFoo: CUDA_ERROR_... (text)" for messages.
    std::string error(const char *call, CUresult rc) const;
};

}  // namespace cu
}  // namespace topo
}  // namespace strata

namespace strata {

// The first CUDA release (13000 = 13.0) whose driver reads PTX ISA major.minor; 0 for
// an ISA newer than strata knows.
int cuda_ptx_isa_driver(int major, int minor);
// The driver branch that first shipped CUDA release driver_version ("r525" for 12000,
// "r580" for 13000; the latest one at or below it); "" before CUDA 11.0.
const char *cuda_driver_branch(int driver_version);

namespace topo {
// Build facts of the kernels (the generated image records the PTX ISA it carries,
// src/mem/Makefile.inc): the ISA as "8.0", and the oldest driver that reads it
// (cuDriverGetVersion's number); "" and 0 in builds without CUDA.
std::string build_ptx_isa();
int build_driver_needed();
}  // namespace topo

}  // namespace strata

#endif
