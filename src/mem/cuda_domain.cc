// SPDX-License-Identifier: BSD-3-Clause
// src/mem/cuda_domain.cc - the CUDA memory domain (see cuda_domain.h).
//
// Copies are cuMemcpyAsync (unified addressing picks the direction); reductions are
// the kernels of cuda_kernels.cu, loaded from the fatbin embedded in the library on the
// first reduce and launched (cuLaunchKernel) on the same stream. Driver calls go through
// the run-time loaded table of topo/cuda_api.h, shared with classify().
#include "mem/cuda_domain.h"

#ifdef STRATA_HAVE_CUDA

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <cuda.h>  // CUDA_VERSION: the toolkit this build's kernels come from

#include "mem/classify.h"
#include "mem/cuda_kernels.h"
#include "mem/kernel_body.h"
#include "mem/ops.h"
#include "topo/cuda_api.h"

namespace strata {
namespace {

namespace cu = topo::cu;
constexpr int kMaxDevices = 64;
constexpr size_t kMaxBlocks = 4096;  // per launch; the kernels loop over the rest
constexpr size_t kScratchAlign = 256;

// strata's own use of GPU memory (cuda_usage()).
struct Usage {
    std::atomic<long long> device_allocs{0}, device_bytes{0}, peak_bytes{0}, ipc_mapped{0}, pinned_host{0},
        allocs_total{0}, scratch_bytes{0};
    std::mutex mu;
    std::map<void *, size_t> sizes;  // live device allocations
};
Usage &usage() {
    static Usage *u = new Usage;  // never destroyed: the exit report reads it
    return *u;
}

// Once per process: at the component's close (MPI_Finalize, where Open MPI 5 still
// forwards the output) or else at exit.
std::atomic<bool> g_report_armed{false}, g_reported{false};
void report_usage() {
    if (!g_report_armed.load() || g_reported.exchange(true)) return;
    const CudaUsage u = cuda_usage();
    char line[384];
    const int n = std::snprintf(
        line, sizeof line,
        "strata cuda usage: pid=%ld device_allocs=%lld device_bytes=%lld peak_bytes=%lld ipc_mapped=%lld "
        "pinned_host=%lld allocs_total=%lld scratch_bytes=%lld\n",
        (long)getpid(), u.device_allocs, u.device_bytes, u.peak_bytes, u.ipc_mapped, u.pinned_host, u.allocs_total,
        u.scratch_bytes);
    // STRATA_CUDA_REPORT=/a/file: appended there in one write (a launcher may drop a
    // process's last output after MPI_Finalize; a file keeps every process's line).
    const char *to = getenv("STRATA_CUDA_REPORT");
    if (to != nullptr && to[0] == '/' && n > 0) {
        const int fd = open(to, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) {
            const bool whole = write(fd, line, size_t(n)) == n;
            close(fd);
            if (whole) return;
        }
    }
    std::fputs(line, stderr);
}

// The alignment a kernel's loads of dtype need (alignof its element type).
size_t elem_align(strata_dtype_t dtype) {
    size_t a = 1;
    dispatch_type(dtype, [&](auto *tp) {
        using T = std::remove_pointer_t<decltype(tp)>;
        if constexpr (!std::is_void<T>::value) a = alignof(T);
    });
    return a;
}

class CudaDomain final : public MemDomain {
public:
    CudaDomain(const cu::Driver &d, int device) : d_(d), device_(device) {
        snprintf(name_, sizeof name_, "cuda:%d", device);
    }

    // Retains the GPU's primary context (the one the CUDA runtime uses too) and makes
    // the domain's stream. false with *why. The stream is an ordinary (blocking) one:
    // it waits for work the application queued on the legacy default stream, such as
    // a cudaMemcpy that produced a send buffer.
    bool init(std::string *why) {
        cu::CUresult rc;
        if ((rc = d_.DeviceGet(&dev_, device_)) != cu::SUCCESS) return bad(why, "cuDeviceGet", rc);
        if ((rc = d_.DevicePrimaryCtxRetain(&ctx_, dev_)) != cu::SUCCESS && !adopt_current(rc))
            return bad(why, "cuDevicePrimaryCtxRetain", rc);
        Scope scope(*this);
        if (scope.status() != STRATA_OK) {
            *why = "cannot make its context current";
            return false;
        }
        if ((rc = d_.StreamCreate(&stream_, 0)) != cu::SUCCESS) return bad(why, "cuStreamCreate", rc);
        stream_flags_ = probe_stream_flags();
        return true;
    }

    // A lane (open_lane) waits for what it queued and lets go of its stream, events and
    // scratch; the GPU's own domain is never destroyed (cuda_domain).
    ~CudaDomain() override {
        if (parent_ == nullptr) return;
        Scope scope(*this);
        if (scope.status() != STRATA_OK) return;
        d_.StreamSynchronize(stream_);
        d_.StreamDestroy(stream_);
        for (cu::CUevent ev : free_) d_.EventDestroy(ev);
        for (auto &f : scratch_free_) {
            d_.MemFree(reinterpret_cast<cu::CUdeviceptr>(f.first));
            usage().scratch_bytes -= (long long)f.second;
        }
    }

    // Whether p is device memory of a context other than the domain's: one the
    // application made itself (cuCtxCreate). A kernel of the domain's context cannot
    // read it (it is not mapped there), so a call copies it into strata's memory and
    // back (copies work across contexts: unified addressing). Said once per process.
    bool foreign(const void *p) const {
        cu::CUcontext owner = nullptr;
        int attr = cu::POINTER_ATTR_CONTEXT;
        void *data = &owner;
        if (d_.PointerGetAttributes(1, &attr, &data, reinterpret_cast<cu::CUdeviceptr>(p)) != cu::SUCCESS ||
            owner == nullptr || owner == ctx_)
            return false;
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
            warn("foreign cuda context", "buffer %p belongs to a CUDA context of the application's own (cuCtxCreate), "
                                         "not GPU %d's primary context that strata works in: calls copy such buffers "
                                         "through strata's memory",
                 p, device_);
        return true;
    }

    // The driver cannot run this build's kernels (said once, by cuda_domain): the
    // domain still copies, which is all staging device buffers needs; prepare and
    // every reduction fail, so no team runs its schedules in this GPU's memory.
    void refuse_kernels() { load_failed_ = true; }

    Status prepare() override {
        if (load_failed_) return STRATA_ERR_DEVICE;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        for (int k = 0; k < kern::kNumKernels; ++k) {
            cu::CUfunction f = nullptr;
            STRATA_CHECK(kernel(k, &f));
        }
        return STRATA_OK;
    }

    const char *name() const override { return name_; }
    int device() const override { return device_; }

    Status copy(void *dst, const void *src, size_t bytes, Ticket *t) override {
        if (t != nullptr) t->pending = nullptr;
        if (bytes == 0 || dst == src) return STRATA_OK;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        const cu::CUresult rc = d_.MemcpyAsync(reinterpret_cast<cu::CUdeviceptr>(dst),
                                               reinterpret_cast<cu::CUdeviceptr>(src), bytes, stream_);
        if (rc != cu::SUCCESS) return device_error("cuMemcpyAsync", rc);
        return t != nullptr ? record(t) : STRATA_OK;
    }

    Status reduce(void *dst, const void *const *srcs, int nsrc, size_t count, strata_dtype_t dtype,
                  strata_op_t op, Ticket *t) override {
        if (t != nullptr) t->pending = nullptr;
        if (count == 0) return STRATA_OK;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        STRATA_CHECK(queue_reduce(dst, srcs, nsrc, count, dtype, op));
        return t != nullptr ? record(t) : STRATA_OK;
    }

    // One launch where it can (at most kMaxDsts destinations, kMaxSrcs sources, all
    // aligned for the type: a node's fused kernel); else the reduction into dsts[0]
    // and a copy from it to each other destination, queued in that order.
    Status reduce_multi(void *const *dsts, int ndst, const void *const *srcs, int nsrc, size_t count,
                        strata_dtype_t dtype, strata_op_t op, Ticket *t) override {
        if (t != nullptr) t->pending = nullptr;
        if (ndst < 1 || nsrc < 1) return STRATA_ERR_ARG;
        if (count == 0) return STRATA_OK;
        const int k = kern::kernel_index(dtype, op);
        const size_t align = elem_align(dtype);
        bool one = k >= 0 && ndst <= kern::kMaxDsts && nsrc <= kern::kMaxSrcs;
        kern::Dsts d{};
        for (int j = 0; j < ndst && one; ++j) {
            one = reinterpret_cast<uintptr_t>(dsts[j]) % align == 0;
            d.p[j] = dsts[j];
        }
        for (int j = 0; j < nsrc && one; ++j) one = reinterpret_cast<uintptr_t>(srcs[j]) % align == 0;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        if (one) {
            cu::CUfunction f = nullptr;
            STRATA_CHECK(kernel(k, &f));
            STRATA_CHECK(fold(f, k, d, ndst, nullptr, srcs, nsrc, count));
            return t != nullptr ? record(t) : STRATA_OK;
        }
        STRATA_CHECK(queue_reduce(dsts[0], srcs, nsrc, count, dtype, op));
        for (int j = 1; j < ndst; ++j) STRATA_CHECK(enqueue_copy(dsts[j], dsts[0], count * strata_dtype_size(dtype)));
        return t != nullptr ? record(t) : STRATA_OK;
    }

private:
    // Queues the reduction of count > 0 elements (reduce()), with the context current.
    Status queue_reduce(void *dst, const void *const *srcs, int nsrc, size_t count, strata_dtype_t dtype,
                        strata_op_t op) {
        const int k = kern::kernel_index(dtype, op);
        if (k < 0) {
            log(1, "%s reduce: no device kernel for %s %s", name_, strata_dtype_name(dtype), strata_op_name(op));
            return STRATA_ERR_UNSUPPORTED;
        }
        if (nsrc < 1) return STRATA_ERR_ARG;
        cu::CUfunction f = nullptr;
        STRATA_CHECK(kernel(k, &f));
        const size_t bytes = count * strata_dtype_size(dtype), align = elem_align(dtype);
        auto odd = [align](const void *p) { return reinterpret_cast<uintptr_t>(p) % align != 0; };
        // Scratch pieces: one per misaligned source, one for a misaligned dst, one for
        // the partial folds when a source that only a later launch reads is dst (it
        // must not be overwritten by an earlier launch).
        const size_t piece = (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
        size_t pieces = odd(dst) ? 1 : 0;
        bool acc_needed = false;
        for (int j = 0; j < nsrc; ++j) {
            pieces += odd(srcs[j]);
            acc_needed = acc_needed || (j >= kern::kMaxSrcs && srcs[j] == dst);
        }
        pieces += acc_needed;
        if (pieces == 0) return fold(f, k, one_dst(dst), 1, nullptr, srcs, nsrc, count);
        char *scratch = nullptr;
        STRATA_CHECK(take_scratch(pieces * piece, &scratch));
        char *next = scratch;
        std::vector<const void *> in(srcs, srcs + nsrc);
        Status st = STRATA_OK;
        for (int j = 0; j < nsrc && st == STRATA_OK; ++j) {
            if (!odd(srcs[j])) continue;
            st = enqueue_copy(next, srcs[j], bytes);  // copy engines take any alignment
            in[size_t(j)] = next;
            next += piece;
        }
        void *out = dst;
        if (odd(dst)) {
            out = next;
            next += piece;
        }
        void *acc = acc_needed ? next : nullptr;
        if (st == STRATA_OK) st = fold(f, k, one_dst(out), 1, acc, in.data(), nsrc, count);
        if (st == STRATA_OK && out != dst) st = enqueue_copy(dst, out, bytes);
        give_scratch(scratch);  // later users queue after this work on the same stream
        return st;
    }

public:
    Status settle() override {
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        Ticket t;
        STRATA_CHECK(record(&t));
        return wait_ticket(*this, &t);
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
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        cu::CUdeviceptr dp = 0;
        if (bytes == 0) bytes = 256;
        const cu::CUresult rc = d_.MemAlloc(&dp, bytes);
        if (rc != cu::SUCCESS) {
            device_error("cuMemAlloc", rc);
            return STRATA_ERR_NOMEM;
        }
        *p = reinterpret_cast<void *>(dp);
        Usage &u = usage();
        {
            std::lock_guard<std::mutex> g(u.mu);
            u.sizes[*p] = bytes;
        }
        ++u.device_allocs;
        ++u.allocs_total;
        const long long now = u.device_bytes += (long long)bytes;
        long long peak = u.peak_bytes.load();
        while (now > peak && !u.peak_bytes.compare_exchange_weak(peak, now)) {
        }
        return STRATA_OK;
    }

    void release(void *p) override {
        if (p == nullptr) return;
        Scope scope(*this);
        if (scope.status() != STRATA_OK) return;
        const cu::CUresult rc = d_.MemFree(reinterpret_cast<cu::CUdeviceptr>(p));
        if (rc != cu::SUCCESS) warn("cuda error", "%s", d_.error("cuMemFree", rc).c_str());
        Usage &u = usage();
        std::lock_guard<std::mutex> g(u.mu);
        auto it = u.sizes.find(p);
        if (it == u.sizes.end()) return;
        --u.device_allocs;
        u.device_bytes -= (long long)it->second;
        u.sizes.erase(it);
    }

    Status alloc_host(size_t bytes, void **p) override {
        *p = nullptr;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        // Portable: usable by every context, whichever GPU a later call is on.
        const cu::CUresult rc = d_.MemHostAlloc(p, bytes ? bytes : 64, cu::MEMHOSTALLOC_PORTABLE);
        if (rc != cu::SUCCESS) {
            warn("cuda error", "%s", d_.error("cuMemHostAlloc", rc).c_str());
            *p = nullptr;
            return STRATA_ERR_NOMEM;
        }
        ++usage().pinned_host;
        return STRATA_OK;
    }

    void release_host(void *p) override {
        if (p == nullptr) return;
        Scope scope(*this);
        if (scope.status() != STRATA_OK) return;
        const cu::CUresult rc = d_.MemFreeHost(p);
        if (rc != cu::SUCCESS) warn("cuda error", "%s", d_.error("cuMemFreeHost", rc).c_str());
        --usage().pinned_host;
    }

    Status ipc_export(void *base, IpcHandle *h) override {
        static_assert(sizeof(IpcHandle) == sizeof(cu::CUipcMemHandle), "IPC handle size");
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        cu::CUipcMemHandle raw;
        const cu::CUresult rc = d_.IpcGetMemHandle(&raw, reinterpret_cast<cu::CUdeviceptr>(base));
        if (rc != cu::SUCCESS) return device_error("cuIpcGetMemHandle", rc);
        memcpy(h->bytes, raw.reserved, sizeof h->bytes);
        return STRATA_OK;
    }

    Status ipc_open(const IpcHandle &h, void **p) override {
        *p = nullptr;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        cu::CUipcMemHandle raw;
        memcpy(raw.reserved, h.bytes, sizeof raw.reserved);
        cu::CUdeviceptr dp = 0;
        const cu::CUresult rc = d_.IpcOpenMemHandle(&dp, raw, cu::IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        if (rc == cu::ERROR_ALREADY_MAPPED) {  // a stale mapping in the way: the IPC cache retries
            log(2, "%s: %s", name_, d_.error("cuIpcOpenMemHandle", rc).c_str());
            return STRATA_ERR_DEVICE;
        }
        if (rc != cu::SUCCESS) return device_error("cuIpcOpenMemHandle", rc);
        *p = reinterpret_cast<void *>(dp);
        ++usage().ipc_mapped;
        return STRATA_OK;
    }

    bool stream_flags() const override { return stream_flags_; }

    Status register_flags(void *p, size_t bytes) override {
        if (!stream_flags_) return STRATA_ERR_UNSUPPORTED;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        const cu::CUresult rc =
            d_.MemHostRegister(p, bytes, cu::MEMHOSTREGISTER_PORTABLE | cu::MEMHOSTREGISTER_DEVICEMAP);
        return rc == cu::SUCCESS ? STRATA_OK : device_error("cuMemHostRegister", rc);
    }

    void unregister_flags(void *p) override {
        if (p == nullptr || !stream_flags_) return;
        Scope scope(*this);
        if (scope.status() != STRATA_OK) return;
        const cu::CUresult rc = d_.MemHostUnregister(p);
        if (rc != cu::SUCCESS) warn("cuda error", "%s", d_.error("cuMemHostUnregister", rc).c_str());
    }

    // Unified addressing: registered host memory has the same address on the GPU.
    Status signal_flag(uint64_t *flag, uint64_t value) override {
        if (!stream_flags_) return STRATA_ERR_UNSUPPORTED;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        const cu::CUresult rc = d_.StreamWriteValue64(stream_, reinterpret_cast<cu::CUdeviceptr>(flag), value,
                                                      cu::STREAM_WRITE_VALUE_DEFAULT);
        return rc == cu::SUCCESS ? STRATA_OK : device_error("cuStreamWriteValue64", rc);
    }

    // GEQ is the driver's cyclic comparison, (int64_t)(*flag - value) >= 0: flag_reached.
    Status wait_flag(const uint64_t *flag, uint64_t value) override {
        if (!stream_flags_) return STRATA_ERR_UNSUPPORTED;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        const cu::CUresult rc = d_.StreamWaitValue64(stream_, reinterpret_cast<cu::CUdeviceptr>(flag), value,
                                                     cu::STREAM_WAIT_VALUE_GEQ);
        return rc == cu::SUCCESS ? STRATA_OK : device_error("cuStreamWaitValue64", rc);
    }

    Status mark(Ticket *t) override {
        t->pending = nullptr;
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        return record(t);
    }

    Status open_lane(LanePtr *lane) override {
        lane->reset();
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        std::unique_ptr<CudaDomain> l(new CudaDomain(d_, device_));
        l->parent_ = this;
        l->dev_ = dev_;
        l->ctx_ = ctx_;
        l->load_failed_ = load_failed_;
        l->stream_flags_ = stream_flags_;
        const cu::CUresult rc = d_.StreamCreate(&l->stream_, cu::STREAM_NON_BLOCKING);  // follow_application
        if (rc != cu::SUCCESS) {
            l->parent_ = nullptr;  // nothing of its own to release
            return device_error("cuStreamCreate", rc);
        }
        lane->reset(l.release());
        return STRATA_OK;
    }

    Status follow_application() override {
        if (parent_ == nullptr) return STRATA_OK;  // the GPU's own stream is a blocking one
        Scope scope(*this);
        STRATA_CHECK(scope.status());
        Ticket t;
        STRATA_CHECK(record(&t, nullptr));  // on the legacy default stream
        cu::CUevent ev = static_cast<cu::CUevent>(t.pending);
        const cu::CUresult rc = d_.StreamWaitEvent(stream_, ev, 0);
        put_event(ev);  // the wait took the event's record as it is now
        return rc == cu::SUCCESS ? STRATA_OK : device_error("cuStreamWaitEvent", rc);
    }

    Status ipc_describe(const void *p, IpcRef *ref) override {
        if (p == nullptr) return STRATA_ERR_UNSUPPORTED;  // a rank with nothing to give
        unsigned long long id = 0, start = 0, size = 0;
        int capable = 0;
        int attrs[4] = {cu::POINTER_ATTR_BUFFER_ID, cu::POINTER_ATTR_RANGE_START_ADDR,
                        cu::POINTER_ATTR_IS_LEGACY_IPC_CAPABLE, cu::POINTER_ATTR_RANGE_SIZE};
        void *data[4] = {&id, &start, &capable, &size};
        // Unknown (host) pointers succeed with every value zero, so "not capable".
        const cu::CUresult rc = d_.PointerGetAttributes(4, attrs, data, reinterpret_cast<cu::CUdeviceptr>(p));
        if (rc != cu::SUCCESS) {  // a driver without these attributes: never in place, and say so once
            if (!describe_failed_.exchange(true))
                log(1, "%s: %s: node peers' buffers are copied, not mapped", name_,
                    d_.error("cuPointerGetAttributes", rc).c_str());
            return STRATA_ERR_UNSUPPORTED;
        }
        if (!capable || start == 0) return STRATA_ERR_UNSUPPORTED;
        ref->base = start;
        ref->buffer_id = id;
        ref->offset = reinterpret_cast<uintptr_t>(p) - start;
        ref->bytes = size;
        return STRATA_OK;
    }

    void ipc_close(void *p) override {
        if (p == nullptr) return;
        Scope scope(*this);
        if (scope.status() != STRATA_OK) return;
        const cu::CUresult rc = d_.IpcCloseMemHandle(reinterpret_cast<cu::CUdeviceptr>(p));
        if (rc != cu::SUCCESS) warn("cuda error", "%s", d_.error("cuIpcCloseMemHandle", rc).c_str());
        --usage().ipc_mapped;
    }

private:
    Status enqueue_copy(void *dst, const void *src, size_t bytes) {
        const cu::CUresult rc = d_.MemcpyAsync(reinterpret_cast<cu::CUdeviceptr>(dst),
                                               reinterpret_cast<cu::CUdeviceptr>(src), bytes, stream_);
        return rc == cu::SUCCESS ? STRATA_OK : device_error("cuMemcpyAsync", rc);
    }

    // Device scratch of at least bytes, from the pool (allocated only when no free
    // buffer is large enough). All work is on stream_, in order, so a buffer given
    // back right after its work was queued may serve the next caller at once.
    Status take_scratch(size_t bytes, char **p) {
        {
            std::lock_guard<std::mutex> g(scratch_mu_);
            auto best = scratch_free_.end();
            for (auto it = scratch_free_.begin(); it != scratch_free_.end(); ++it)
                if (it->second >= bytes && (best == scratch_free_.end() || it->second < best->second)) best = it;
            if (best != scratch_free_.end()) {
                *p = best->first;
                scratch_size_[*p] = best->second;
                scratch_free_.erase(best);
                return STRATA_OK;
            }
        }
        size_t n = 64 << 10;
        while (n < bytes) n *= 2;
        void *v = nullptr;
        STRATA_CHECK(alloc(n, &v));
        Usage &u = usage();  // counted apart: kept for reuse for the life of the process
        {
            std::lock_guard<std::mutex> g(u.mu);
            u.sizes.erase(v);
        }
        --u.device_allocs;
        u.device_bytes -= (long long)n;
        u.scratch_bytes += (long long)n;
        std::lock_guard<std::mutex> g(scratch_mu_);
        *p = static_cast<char *>(v);
        scratch_size_[*p] = n;
        return STRATA_OK;
    }
    void give_scratch(char *p) {
        std::lock_guard<std::mutex> g(scratch_mu_);
        auto it = scratch_size_.find(p);
        scratch_free_.emplace_back(p, it->second);
        scratch_size_.erase(it);
    }

    static kern::Dsts one_dst(void *dst) {
        kern::Dsts d{};
        d.p[0] = dst;
        return d;
    }

    // Queues the launches of kernel f (kKernels[k]) that fold srcs into d.p[0 .. ndst):
    // the first takes srcs[0..kMaxSrcs), each further one the partial result and up to
    // kMaxSrcs - 1 more sources, so the order stays MPI's left to right. The partial
    // results go to acc (d.p[0] when null), the last one to every destination.
    Status fold(cu::CUfunction f, int k, const kern::Dsts &d, int ndst, void *acc, const void *const *srcs, int nsrc,
                size_t count) {
        if (acc == nullptr) acc = d.p[0];
        const kern::Dsts partial = one_dst(acc);
        int one = 1;
        unsigned long long n = count;
        // Sized by 16-byte vectors (kernel_body.h); past kMaxBlocks the threads loop.
        const unsigned long long threads = kern::launch_threads(count, strata_dtype_size(kern::kKernels[k].dtype));
        const unsigned blocks = static_cast<unsigned>(
            std::max<unsigned long long>(1, std::min<unsigned long long>(div_up(threads, kern::kThreads), kMaxBlocks)));
        int done = 0;
        while (done < nsrc) {
            kern::Srcs s{};
            int m = 0;
            if (done > 0) s.p[m++] = acc;
            while (m < kern::kMaxSrcs && done < nsrc) s.p[m++] = srcs[done++];
            const bool last = done == nsrc;
            kern::Dsts out = last ? d : partial;
            int nout = last ? ndst : one;
            void *params[] = {&out, &nout, &s, &m, &n};
            const cu::CUresult rc =
                d_.LaunchKernel(f, blocks, 1, 1, kern::kThreads, 1, 1, 0, stream_, params, nullptr);
            if (rc != cu::SUCCESS) {
                const std::string call = std::string("cuLaunchKernel ") + kern::kKernels[k].name;
                warn("cuda error", "%s reduce: %s", name_, d_.error(call.c_str(), rc).c_str());
                return STRATA_ERR_DEVICE;
            }
        }
        return STRATA_OK;
    }

    // The function of kKernels[k], loading the module (once per domain) and looking the
    // kernel up (once per kernel) on first use. Needs the context current.
    Status kernel(int k, cu::CUfunction *f) {
        if (parent_ != nullptr) return parent_->kernel(k, f);  // a lane: its GPU domain's module
        if ((*f = fns_[k].load(std::memory_order_acquire)) != nullptr) return STRATA_OK;
        std::lock_guard<std::mutex> g(mod_mu_);
        if ((*f = fns_[k].load(std::memory_order_relaxed)) != nullptr) return STRATA_OK;
        if (load_failed_) return STRATA_ERR_DEVICE;  // said once already
        cu::CUresult rc;
        if (module_ == nullptr && (rc = d_.ModuleLoadData(&module_, strata_cuda_fatbin)) != cu::SUCCESS) {
            module_ = nullptr;
            load_failed_ = true;
            warn("reduction kernels unavailable", "%s: loading the reduction kernels (%zu-byte fatbin): %s", name_,
                 strata_cuda_fatbin_size, d_.error("cuModuleLoadData", rc).c_str());
            return STRATA_ERR_DEVICE;
        }
        if ((rc = d_.ModuleGetFunction(f, module_, kern::kKernels[k].name)) != cu::SUCCESS) {
            *f = nullptr;
            warn("reduction kernels unavailable", "%s: kernel %s: %s", name_, kern::kKernels[k].name,
                 d_.error("cuModuleGetFunction", rc).c_str());
            return STRATA_ERR_DEVICE;
        }
        fns_[k].store(*f, std::memory_order_release);
        return STRATA_OK;
    }

    // In exclusive-process compute mode a process holds one context per GPU: where the
    // application made its own (cuCtxCreate), the primary one cannot be had (rc). The
    // domain then copies in the application's context, current on this thread, and
    // runs no kernels, so the GPU path is off (said here, once per GPU): staging device
    // buffers through host memory needs copies only, and no context of strata's.
    bool adopt_current(cu::CUresult rc) {
        int mode = 0;
        cu::CUcontext cur = nullptr;
        cu::CUdevice dev = -1;
        if (d_.DeviceGetAttribute(&mode, cu::ATTR_COMPUTE_MODE, dev_) != cu::SUCCESS ||
            mode != cu::COMPUTEMODE_EXCLUSIVE_PROCESS || d_.CtxGetCurrent(&cur) != cu::SUCCESS || cur == nullptr ||
            d_.CtxGetDevice(&dev) != cu::SUCCESS || dev != dev_)
            return false;
        ctx_ = cur;
        refuse_kernels();
        warn("exclusive process", "GPU path off: GPU %d is in exclusive-process compute mode and this process's "
                                  "context on it is the application's own, not the primary one (%s); strata copies "
                                  "in that context and device buffers are staged through host memory",
             device_, d_.error("cuDevicePrimaryCtxRetain", rc).c_str());
        return true;
    }

    // Stream memory operations on flags in registered host memory: the driver has the
    // 64-bit wait and write and host registration, and the GPU says it can use them.
    bool probe_stream_flags() const {
        if (!d_.StreamWaitValue64 || !d_.StreamWriteValue64 || !d_.MemHostRegister || !d_.MemHostUnregister)
            return false;
        int can = 0;
        return d_.DeviceGetAttribute(&can, cu::ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS, dev_) == cu::SUCCESS && can == 1;
    }

    bool bad(std::string *why, const char *call, cu::CUresult rc) const {
        *why = d_.error(call, rc);
        return false;
    }

    Status device_error(const char *call, cu::CUresult rc) const {
        const std::string e = std::string(name_) + ": " + d_.error(call, rc);
        DeviceErrors::keep(e) ? log(3, "%s", e.c_str()) : warn("cuda error", "%s", e.c_str());
        return STRATA_ERR_DEVICE;
    }

    // Makes the domain's context current on this thread (calls come from any thread)
    // for one call, and puts back whatever was current before: the application's
    // choice of GPU or context of its own is never changed by strata.
    class Scope {
    public:
        explicit Scope(const CudaDomain &dom) : dom_(dom) {
            if (dom_.d_.CtxGetCurrent(&prev_) != cu::SUCCESS) prev_ = nullptr;
            if (prev_ == dom_.ctx_) return;
            const cu::CUresult rc = dom_.d_.CtxSetCurrent(dom_.ctx_);
            if (rc != cu::SUCCESS) {
                status_ = dom_.device_error("cuCtxSetCurrent", rc);
            } else {
                switched_ = true;
            }
        }
        ~Scope() {
            if (switched_) dom_.d_.CtxSetCurrent(prev_);
        }
        Status status() const { return status_; }
        Scope(const Scope &) = delete;
        Scope &operator=(const Scope &) = delete;

    private:
        const CudaDomain &dom_;
        cu::CUcontext prev_ = nullptr;
        bool switched_ = false;
        Status status_ = STRATA_OK;
    };

    // Records a (pooled) event after the work just queued on stream `on` (the domain's
    // by default); the ticket holds it.
    Status record(Ticket *t) { return record(t, stream_); }
    Status record(Ticket *t, cu::CUstream on) {
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
        if ((rc = d_.EventRecord(ev, on)) != cu::SUCCESS) {
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
    CudaDomain *parent_ = nullptr;  // a lane: the GPU's domain it was opened from
    bool stream_flags_ = false;
    char name_[16];
    cu::CUdevice dev_ = 0;
    cu::CUcontext ctx_ = nullptr;
    cu::CUstream stream_ = nullptr;
    std::mutex mu_;
    std::vector<cu::CUevent> free_;
    std::mutex mod_mu_;  // loading the module and looking kernels up
    cu::CUmodule module_ = nullptr;  // never unloaded: the domain lives as long as the process
    bool load_failed_ = false;
    std::atomic<cu::CUfunction> fns_[kern::kNumKernels] = {};
    std::atomic<bool> describe_failed_{false};
    std::mutex scratch_mu_;
    std::vector<std::pair<char *, size_t>> scratch_free_;  // kept for the life of the process
    std::map<char *, size_t> scratch_size_;                // taken
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
    static bool reported = false;
    if (getenv("STRATA_CUDA_REPORT") != nullptr && strcmp(getenv("STRATA_CUDA_REPORT"), "0") != 0 && !reported) {
        reported = true;
        g_report_armed = true;
        atexit(report_usage);
    }
    if (domains[device] == nullptr && failed[device].empty()) {
        int version = 0;
        if (d->DriverGetVersion(&version) != topo::cu::SUCCESS) version = 0;
        const std::string mismatch = cuda_driver_mismatch(version);
        if (!mismatch.empty()) {
            static std::atomic<bool> said{false};
            if (!said.exchange(true)) warn("old cuda driver", "%s", mismatch.c_str());
        }
        auto *dom = new CudaDomain(*d, device);
        if (dom->init(&failed[device])) {
            if (!mismatch.empty()) dom->refuse_kernels();
            domains[device] = dom;
        } else {
            delete dom;  // leaks the stream/context retain if init got that far; it failed anyway
            log(1, "cuda:%d domain: %s", device, failed[device].c_str());
        }
    }
    if (domains[device] == nullptr) *why = failed[device];
    return domains[device];
}

bool cuda_reduce_supported(strata_dtype_t dtype, strata_op_t op) { return kern::kernel_index(dtype, op) >= 0; }

// Every domain cuda_domain() makes is a CudaDomain.
bool cuda_foreign_context(const void *ptr, int device) {
    MemDomain *dom = cuda_domain(device, nullptr);
    return dom != nullptr && static_cast<CudaDomain *>(dom)->foreign(ptr);
}

int cuda_driver_needed() { return topo::build_driver_needed(); }

std::string cuda_kernels_ptx_isa() { return topo::build_ptx_isa(); }

const void *cuda_kernels_image(size_t *bytes) {
    *bytes = strata_cuda_fatbin_size;
    return strata_cuda_fatbin;
}

std::string cuda_driver_mismatch(int v) {
    const int need = cuda_driver_needed();
    if (v >= need) return "";
    char line[320];
    snprintf(line, sizeof line,
             "GPU path off: the CUDA driver is %d.%d, this build's kernels need %d.%d or newer (%s+; PTX ISA %s, "
             "built with CUDA %d.%d); device buffers are staged through host memory",
             v / 1000, v % 1000 / 10, need / 1000, need % 1000 / 10, cuda_driver_branch(need),
             cuda_kernels_ptx_isa().c_str(), CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    return line;
}

CudaUsage cuda_usage() {
    Usage &u = usage();
    return CudaUsage{u.device_allocs.load(), u.device_bytes.load(), u.peak_bytes.load(), u.ipc_mapped.load(),
                     u.pinned_host.load(),   u.allocs_total.load(), u.scratch_bytes.load()};
}

}  // namespace strata

extern "C" void strata_cuda_report(void) { strata::report_usage(); }

#else  // !STRATA_HAVE_CUDA

namespace strata {

MemDomain *cuda_domain(int, std::string *why) {
    if (why) *why = "strata was built without CUDA (configure found no nvcc)";
    return nullptr;
}

bool cuda_reduce_supported(strata_dtype_t, strata_op_t) { return false; }

bool cuda_foreign_context(const void *, int) { return false; }

int cuda_driver_needed() { return 0; }

std::string cuda_kernels_ptx_isa() { return ""; }

const void *cuda_kernels_image(size_t *bytes) {
    *bytes = 0;
    return nullptr;
}

std::string cuda_driver_mismatch(int) { return ""; }

CudaUsage cuda_usage() { return CudaUsage{0, 0, 0, 0, 0, 0, 0}; }

}  // namespace strata

extern "C" void strata_cuda_report(void) {}  // no GPU domain was ever made

#endif


