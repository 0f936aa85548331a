// src/mem/cuda_domain.cc - the CUDA memory domain (see cuda_domain.h).
//
// Copies are cuMemcpyAsync (unified addressing picks the direction); reductions are
// the kernels of cuda_kernels.cu, launched on the same stream. Driver calls go through
// the run-time loaded table of topo/cuda_api.h, shared with classify().
#include "mem/cuda_domain.h"

#ifdef STRATA_HAVE_CUDA

#include <cstdio>
#include <mutex>
#include <vector>

#include "mem/classify.h"
#include "mem/cuda_kernels.h"
#include "topo/cuda_api.h"

namespace strata {
namespace {

namespace cu = topo::cu;
constexpr int kMaxDevices = 64;

class CudaDomain final : public MemDomain {
public:
    CudaDomain(const cu::Driver &d, int device) : d_(d), device_(device) {
        snprintf(name_, sizeof name_, "cuda:%d", device);
    }

    // Retains the GPU's primary context (the one the CUDA runtime uses too) and makes
    // the domain's stream. false with *why.
    bool init(std::string *why) {
        cu::CUresult rc;
        if ((rc = d_.DeviceGet(&dev_, device_)) != cu::SUCCESS) return bad(why, "cuDeviceGet", rc);
        if ((rc = d_.DevicePrimaryCtxRetain(&ctx_, dev_)) != cu::SUCCESS)
            return bad(why, "cuDevicePrimaryCtxRetain", rc);
        if ((rc = d_.CtxSetCurrent(ctx_)) != cu::SUCCESS) return bad(why, "cuCtxSetCurrent", rc);
        if ((rc = d_.StreamCreate(&stream_, cu::STREAM_NON_BLOCKING)) != cu::SUCCESS)
            return bad(why, "cuStreamCreate", rc);
        return true;
    }

    const char *name() const override { return name_; }

    Status copy(void *dst, const void *src, size_t bytes, Ticket *t) override {
        t->pending = nullptr;
        if (bytes == 0 || dst == src) return STRATA_OK;
        STRATA_CHECK(enter());
        const cu::CUresult rc = d_.MemcpyAsync(reinterpret_cast<cu::CUdeviceptr>(dst),
                                               reinterpret_cast<cu::CUdeviceptr>(src), bytes, stream_);
        if (rc != cu::SUCCESS) return device_error("cuMemcpyAsync", rc);
        return record(t);
    }

    Status reduce(void *dst, const void *const *srcs, int nsrc, size_t count, strata_dtype_t dtype,
                  strata_op_t op, Ticket *t) override {
        t->pending = nullptr;
        if (!strata_cuda_reduce_supported(dtype, op)) {
            log(1, "%s reduce: no device kernel for type %d op %d", name_, (int)dtype, (int)op);
            return STRATA_ERR_UNSUPPORTED;
        }
        if (nsrc < 1) return STRATA_ERR_ARG;
        if (count == 0) return STRATA_OK;
        STRATA_CHECK(enter());
        const int rc = strata_cuda_reduce(dst, srcs, nsrc, count, dtype, op, stream_);
        if (rc != 0) {
            log(0, "%s reduce: kernel launch failed: %s", name_, strata_cuda_error_string(rc));
            return STRATA_ERR_DEVICE;
        }
        return record(t);
    }

    Status poll(Ticket *t, bool *done) override {
        *done = true;
        if (t->pending == nullptr) return STRATA_OK;
        cu::CUevent ev = static_cast<cu::CUevent>(t->pending);
        const cu::CUresult rc = d_.EventQuery(ev);
        if (rc == cu::ERROR_NOT_READY) {
            *done = false;
            return STRATA_OK;
        }
        t->pending = nullptr;
        put_event(ev);
        if (rc != cu::SUCCESS) return device_error("cuEventQuery", rc);
        return STRATA_OK;
    }

    Status alloc(size_t bytes, void **p) override {
        *p = nullptr;
        STRATA_CHECK(enter());
        cu::CUdeviceptr dp = 0;
        const cu::CUresult rc = d_.MemAlloc(&dp, bytes ? bytes : 256);
        if (rc != cu::SUCCESS) {
            log(0, "%s", d_.error("cuMemAlloc", rc).c_str());
            return STRATA_ERR_NOMEM;
        }
        *p = reinterpret_cast<void *>(dp);
        return STRATA_OK;
    }

    void release(void *p) override {
        if (p == nullptr || enter() != STRATA_OK) return;
        const cu::CUresult rc = d_.MemFree(reinterpret_cast<cu::CUdeviceptr>(p));
        if (rc != cu::SUCCESS) log(0, "%s", d_.error("cuMemFree", rc).c_str());
    }

    Status alloc_host(size_t bytes, void **p) override {
        *p = nullptr;
        STRATA_CHECK(enter());
        // Portable: usable by every context, whichever GPU a later call is on.
        const cu::CUresult rc = d_.MemHostAlloc(p, bytes ? bytes : 64, cu::MEMHOSTALLOC_PORTABLE);
        if (rc != cu::SUCCESS) {
            log(0, "%s", d_.error("cuMemHostAlloc", rc).c_str());
            *p = nullptr;
            return STRATA_ERR_NOMEM;
        }
        return STRATA_OK;
    }

    void release_host(void *p) override {
        if (p == nullptr || enter() != STRATA_OK) return;
        const cu::CUresult rc = d_.MemFreeHost(p);
        if (rc != cu::SUCCESS) log(0, "%s", d_.error("cuMemFreeHost", rc).c_str());
    }

private:
    bool bad(std::string *why, const char *call, cu::CUresult rc) const {
        *why = d_.error(call, rc);
        return false;
    }

    Status device_error(const char *call, cu::CUresult rc) const {
        log(0, "%s: %s", name_, d_.error(call, rc).c_str());
        return STRATA_ERR_DEVICE;
    }

    // Calls may come from any thread (ranks as threads, progress threads): make the
    // domain's context current on this one first.
    Status enter() const {
        cu::CUcontext cur = nullptr;
        if (d_.CtxGetCurrent(&cur) == cu::SUCCESS && cur == ctx_) return STRATA_OK;
        const cu::CUresult rc = d_.CtxSetCurrent(ctx_);
        if (rc != cu::SUCCESS) return device_error("cuCtxSetCurrent", rc);
        return STRATA_OK;
    }

    // Records a (pooled) event after the work just queued; the ticket holds it.
    Status record(Ticket *t) {
        cu::CUevent ev = nullptr;
        {
            std::lock_guard<std::mutex> g(mu_);
            if (!free_.empty()) {
                ev = free_.back();
                free_.pop_back();
            }
        }
        cu::CUresult rc;
        if (ev == nullptr && (rc = d_.EventCreate(&ev, cu::EVENT_DISABLE_TIMING)) != cu::SUCCESS)
            return device_error("cuEventCreate", rc);
        if ((rc = d_.EventRecord(ev, stream_)) != cu::SUCCESS) {
            put_event(ev);
            return device_error("cuEventRecord", rc);
        }
        t->pending = ev;
        return STRATA_OK;
    }

    void put_event(cu::CUevent ev) {
        std::lock_guard<std::mutex> g(mu_);
        free_.push_back(ev);
    }

    const cu::Driver &d_;
    const int device_;
    char name_[16];
    cu::CUdevice dev_ = 0;
    cu::CUcontext ctx_ = nullptr;
    cu::CUstream stream_ = nullptr;
    std::mutex mu_;
    std::vector<cu::CUevent> free_;
};

}  // namespace

MemDomain *cuda_domain(int device, std::string *why) {
    // Made once per GPU and never destroyed: tearing down streams during exit, after
    // the driver may have gone, is worse than leaving them to the process's end.
    static std::mutex mu;
    static CudaDomain *domains[kMaxDevices] = {};
    static std::string failed[kMaxDevices];
    std::string local;
    if (why == nullptr) why = &local;
    const cu::Driver *d = cuda_driver(why);
    if (d == nullptr) return nullptr;
    std::lock_guard<std::mutex> g(mu);
    static int ndev = -1;  // GPUs do not come and go within a process
    if (ndev < 0 && d->DeviceGetCount(&ndev) != topo::cu::SUCCESS) ndev = 0;
    if (device < 0 || device >= ndev || device >= kMaxDevices) {
        *why = "no GPU " + std::to_string(device) + " (" + std::to_string(ndev) + " present)";
        return nullptr;
    }
    if (domains[device] == nullptr && failed[device].empty()) {
        auto *dom = new CudaDomain(*d, device);
        if (dom->init(&failed[device])) {
            domains[device] = dom;
        } else {
            delete dom;  // leaks the stream/context retain if init got that far; it failed anyway
            log(1, "cuda:%d domain: %s", device, failed[device].c_str());
        }
    }
    if (domains[device] == nullptr) *why = failed[device];
    return domains[device];
}

bool cuda_reduce_supported(strata_dtype_t dtype, strata_op_t op) {
    return strata_cuda_reduce_supported(dtype, op) != 0;
}

}  // namespace strata

#else  // !STRATA_HAVE_CUDA

namespace strata {

MemDomain *cuda_domain(int, std::string *why) {
    if (why) *why = "strata was built without CUDA (configure found no nvcc)";
    return nullptr;
}

bool cuda_reduce_supported(strata_dtype_t, strata_op_t) { return false; }

}  // namespace strata

#endif
