// SPDX-License-Identifier: BSD-3-Clause
// src/mem/classify.cc - buffer kinds through the driver's pointer attributes.
#include "mem/classify.h"

#include <atomic>
#include <mutex>

#include "strata_device.h"
#include "topo/cuda_api.h"

namespace strata {
namespace {

namespace cu = topo::cu;

// The driver is loaded (dlopen, no cuInit) when first asked about, and initialised
// only by an explicit cuda_driver() (a GPU domain is wanted), or once the application
// has initialised it itself: a CPU-only job on a GPU node never runs cuInit (which
// would create driver state, and take time, in every process).
struct DriverState {
    enum : int { Unknown, Loaded, Ready, Failed };
    std::mutex mu;
    std::atomic<int> state{Unknown};
    cu::Driver drv;  // stays loaded: unloading libcuda is not supported
    std::string why;

    // Loads the library once. Caller holds mu.
    void load_locked() {
        if (state.load() != Unknown) return;
        if (drv.load(&why)) {
            state = Loaded;
        } else {
            state = Failed;  // why says "no CUDA driver (...)" or which symbol is missing
            log(1, "device buffers: off (%s); every buffer is treated as host memory", why.c_str());
        }
    }
    // cuInit (a no-op where the application did it) and the GPU count. Caller holds mu.
    void init_locked() {
        if (state.load() != Loaded) return;
        int n = 0;
        cu::CUresult rc;
        if ((rc = drv.Init(0)) != cu::SUCCESS) {
            why = rc == cu::ERROR_NO_DEVICE ? std::string("no GPU (cuInit: no CUDA-capable device)")
                                            : drv.error("cuInit", rc);
        } else if ((rc = drv.DeviceGetCount(&n)) != cu::SUCCESS) {
            why = drv.error("cuDeviceGetCount", rc);
        } else if (n == 0) {
            why = "no GPU (cuDeviceGetCount: 0)";
        }
        state = why.empty() ? Ready : Failed;
        if (state == Ready) {
            log(1, "device buffers: CUDA driver loaded, %d GPU(s)", n);
        } else {
            log(1, "device buffers: off (%s); every buffer is treated as host memory", why.c_str());
        }
    }
    // true once the driver is initialised; initialises it only if force, or if the
    // application already has (cuCtxGetCurrent answers anything but NOT_INITIALIZED).
    bool ready(bool force) {
        const int st = state.load(std::memory_order_acquire);
        if (st == Ready || st == Failed) return st == Ready;
        std::lock_guard<std::mutex> g(mu);
        load_locked();
        if (state.load() == Loaded) {
            cu::CUcontext ctx = nullptr;
            if (force || drv.CtxGetCurrent(&ctx) != cu::ERROR_NOT_INITIALIZED) init_locked();
        }
        return state.load() == Ready;
    }
};

DriverState &driver_state() {
    static DriverState *s = new DriverState;  // never destroyed: used until the process ends
    return *s;
}

}  // namespace

const topo::cu::Driver *cuda_driver(std::string *why) {
    DriverState &s = driver_state();
    if (!s.ready(true)) {
        if (why) {
            std::lock_guard<std::mutex> g(s.mu);
            *why = s.why;
        }
        return nullptr;
    }
    return &s.drv;
}

bool cuda_available() {
    DriverState &s = driver_state();
    s.ready(false);
    return s.state.load() != DriverState::Failed;  // loaded: a GPU may still come
}

int current_device() {
    DriverState &s = driver_state();
    if (!s.ready(false)) return -1;
    const cu::Driver *d = &s.drv;
    cu::CUcontext ctx = nullptr;
    cu::CUdevice dev = -1;
    if (d->CtxGetCurrent(&ctx) != cu::SUCCESS || ctx == nullptr || d->CtxGetDevice(&dev) != cu::SUCCESS) return -1;
    return dev;
}

bool cuda_context_current() { return current_device() >= 0; }

MemKind classify(const void *ptr, int *device) {
    if (device) *device = -1;
    // A buffer the driver knows exists only once the application initialised it.
    DriverState &s = driver_state();
    if (ptr == nullptr || !s.ready(false)) return MemKind::Host;
    const cu::Driver *d = &s.drv;
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

extern "C" int strata_device_absent(char *why, size_t len) {
    strata::DriverState &s = strata::driver_state();
    s.ready(false);
    if (s.state.load() != strata::DriverState::Failed) return 0;
    std::lock_guard<std::mutex> g(s.mu);
    snprintf(why, len, "%s", s.why.c_str());
    return 1;
}

extern "C" int strata_buffer_kind(const void *ptr) { return static_cast<int>(strata::classify(ptr)); }
