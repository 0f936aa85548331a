// src/mem/classify.cc - buffer kinds through the driver's pointer attributes.
#include "mem/classify.h"

#include <mutex>

#include "strata_device.h"
#include "topo/cuda_api.h"

namespace strata {
namespace {

namespace cu = topo::cu;

struct DriverState {
    cu::Driver drv;  // stays loaded: unloading libcuda is not supported
    bool ok = false;
    std::string why;
};

DriverState &driver_state() {
    static DriverState s;
    static std::once_flag once;
    std::call_once(once, [] {
        int n = 0;
        cu::CUresult rc;
        if (!s.drv.load(&s.why)) {
            // s.why says "no CUDA driver (...)" or which symbol is missing
        } else if ((rc = s.drv.Init(0)) != cu::SUCCESS) {
            s.why = rc == cu::ERROR_NO_DEVICE ? std::string("no GPU (cuInit: no CUDA-capable device)")
                                              : s.drv.error("cuInit", rc);
        } else if ((rc = s.drv.DeviceGetCount(&n)) != cu::SUCCESS) {
            s.why = s.drv.error("cuDeviceGetCount", rc);
        } else if (n == 0) {
            s.why = "no GPU (cuDeviceGetCount: 0)";
        } else {
            s.ok = true;
        }
        if (s.ok) {
            log(1, "device buffers: CUDA driver loaded, %d GPU(s)", n);
        } else {
            log(1, "device buffers: off (%s); every buffer is treated as host memory", s.why.c_str());
        }
    });
    return s;
}

}  // namespace

const topo::cu::Driver *cuda_driver(std::string *why) {
    DriverState &s = driver_state();
    if (!s.ok) {
        if (why) *why = s.why;
        return nullptr;
    }
    return &s.drv;
}

bool cuda_available() { return driver_state().ok; }

int current_device() {
    const cu::Driver *d = cuda_driver();
    cu::CUcontext ctx = nullptr;
    cu::CUdevice dev = -1;
    if (d == nullptr || d->CtxGetCurrent(&ctx) != cu::SUCCESS || ctx == nullptr ||
        d->CtxGetDevice(&dev) != cu::SUCCESS)
        return -1;
    return dev;
}

bool cuda_context_current() { return current_device() >= 0; }

MemKind classify(const void *ptr, int *device) {
    if (device) *device = -1;
    const cu::Driver *d = cuda_driver();
    if (d == nullptr || ptr == nullptr) return MemKind::Host;
    // Unlike cuPointerGetAttribute, the plural form succeeds for pointers the driver
    // does not know, leaving the values zero: that is host memory.
    unsigned memtype = 0, managed = 0;
    int ordinal = -1;
    int attrs[3] = {cu::POINTER_ATTR_MEMORY_TYPE, cu::POINTER_ATTR_IS_MANAGED, cu::POINTER_ATTR_DEVICE_ORDINAL};
    void *data[3] = {&memtype, &managed, &ordinal};
    const cu::CUresult rc =
        d->PointerGetAttributes(3, attrs, data, reinterpret_cast<cu::CUdeviceptr>(ptr));
    if (rc != cu::SUCCESS) {
        log(2, "classify %p: %s; taken as host memory", ptr, d->error("cuPointerGetAttributes", rc).c_str());
        return MemKind::Host;
    }
    MemKind k = MemKind::Host;
    if (managed) {
        k = MemKind::Managed;
    } else if (memtype == cu::MEMORYTYPE_DEVICE) {
        k = MemKind::Device;
    } else if (memtype == cu::MEMORYTYPE_HOST) {
        k = MemKind::PinnedHost;
    }
    if (device && k != MemKind::Host) *device = ordinal;
    return k;
}

const char *mem_kind_name(MemKind k) {
    switch (k) {
        case MemKind::Host: return "host";
        case MemKind::Device: return "device";
        case MemKind::Managed: return "managed";
        case MemKind::PinnedHost: return "pinned-host";
    }
    return "?";
}

static_assert(static_cast<int>(MemKind::Host) == STRATA_MEM_HOST &&
                  static_cast<int>(MemKind::Device) == STRATA_MEM_DEVICE &&
                  static_cast<int>(MemKind::Managed) == STRATA_MEM_MANAGED &&
                  static_cast<int>(MemKind::PinnedHost) == STRATA_MEM_PINNED_HOST,
              "strata_device.h and MemKind disagree");

}  // namespace strata

extern "C" int strata_buffer_kind(const void *ptr) { return static_cast<int>(strata::classify(ptr)); }
