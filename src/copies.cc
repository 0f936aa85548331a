// SPDX-License-Identifier: BSD-3-Clause
// src/copies.cc - copies of a rank's buffers in the team's memory kind (see copies.h).
#include "copies.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "btl/ipc_cache.h"
#include "mem/device.h"
#include "strata_device.h"

namespace strata {

namespace {

void merge(std::vector<Block> *v) {
    std::sort(v->begin(), v->end(), [](const Block &x, const Block &y) { return x.offset < y.offset; });
    size_t n = 0;
    for (const Block &b : *v) {
        if (n > 0 && b.offset <= (*v)[n - 1].offset + (*v)[n - 1].bytes) {
            Block &last = (*v)[n - 1];
            last.bytes = std::max(last.offset + last.bytes, b.offset + b.bytes) - last.offset;
        } else {
            (*v)[n++] = b;
        }
    }
    v->resize(n);
}

size_t extent(const std::vector<Block> &v) { return v.empty() ? 0 : v.back().offset + v.back().bytes; }

}  // namespace

void call_blocks(strata_coll_t coll, const CollArgs &a, int rank, int size, std::vector<Block> *in,
                 std::vector<Block> *out) {
    in->clear();
    out->clear();
    collective(coll).blocks(a, rank, size, in, out);
    merge(in);
    merge(out);
}

Status BufferCopies::StageBuf::reserve(MemDomain &d, bool host_memory, size_t n) {
    // Page-locked host memory is portable: any GPU's domain can copy through it.
    if (n <= bytes && host == host_memory && (host_memory || dom == &d)) return STRATA_OK;
    drop();
    void *p = nullptr;
    STRATA_CHECK(host_memory ? d.alloc_host(n, &p) : d.alloc(n, &p));
    dom = &d;
    host = host_memory;
    ptr = static_cast<char *>(p);
    bytes = n;
    return STRATA_OK;
}

void BufferCopies::StageBuf::drop() {
    if (ptr != nullptr) {
        if (host) {
            dom->release_host(ptr);
        } else {
            dom->release(ptr);
        }
    }
    dom = nullptr;
    ptr = nullptr;
    bytes = 0;
}

BufferCopies::~BufferCopies() {
    send_.drop();
    recv_.drop();
}

StepId BufferCopies::copy_blocks(Schedule &s, MemDomain &dom, char *dst, const char *src,
                            const std::vector<Block> &blocks, size_t dst_shift, const Deps &deps) {
    std::vector<StepId> copies;
    for (const Block &b : blocks)
        copies.push_back(s.copy(dom, dst + dst_shift + b.offset, src + b.offset, b.bytes, deps));
    return s.join(copies);
}

StepId BufferCopies::copy_in(Schedule &s) {
    if (!active_ || in_dom_ == nullptr) return kNoStep;
    return copy_blocks(s, *in_dom_, in_copy_, in_user_, in_, in_shift_, {});
}

StepId BufferCopies::copy_out(Schedule &s, const Deps &deps) {
    if (!active_ || out_dom_ == nullptr) return kNoStep;
    return copy_blocks(s, *out_dom_, out_user_, out_copy_, out_, 0, deps);
}

// Host team: GPU memory is staged through host memory, with the GPU's domain.
// Device team: memory the team's kernels cannot read (pageable or registered host
// memory, another GPU's memory, or this GPU's memory of a context the application made
// itself) is staged through GPU memory; this GPU's memory and managed memory are used
// in place. Each rank decides for its own buffers: the copies are its own steps, and
// the algorithm is the same either way.
Status BufferCopies::plan(const void *ptr, MemDomain *gpu, MemDomain **dom, bool *host) {
    *dom = nullptr;
    *host = gpu == nullptr;
    if (gpu == nullptr) return device_domain_of(ptr, dom);
    if (ptr == nullptr) return STRATA_OK;
    int device = -1;
    const MemKind k = classify(ptr, &device);
    if (k == MemKind::Host || k == MemKind::PinnedHost ||
        (k == MemKind::Device && (device != gpu->device() || device_foreign_context(ptr, device))))
        *dom = gpu;
    return STRATA_OK;
}

uint64_t BufferCopies::plan_key(const void *ptr, MemDomain *gpu) {
    MemDomain *dom = nullptr;
    bool host = true;
    if (plan(ptr, gpu, &dom, &host) != STRATA_OK) return ~uint64_t(0);
    return dom == nullptr ? 0 : (reinterpret_cast<uintptr_t>(dom) | (host ? 1 : 0));
}

Status BufferCopies::enter(strata_coll_t coll, int rank, int size, MemDomain *gpu, CollArgs *a) {
    active_ = false;
    in_dom_ = out_dom_ = nullptr;
    MemDomain *sdom = nullptr, *rdom = nullptr;
    bool shost = true, rhost = true;
    STRATA_CHECK(plan(a->sendbuf, gpu, &sdom, &shost));
    STRATA_CHECK(plan(a->recvbuf, gpu, &rdom, &rhost));
    if (sdom == nullptr && rdom == nullptr) return STRATA_OK;
    active_ = true;
    call_blocks(coll, *a, rank, size, &in_, &out_);

    const char *user_send = static_cast<const char *>(a->sendbuf);
    char *user_recv = static_cast<char *>(a->recvbuf);
    // In place: the inputs live inside the receive buffer (at sendbuf - recvbuf).
    const bool alias = a->recvbuf != nullptr && (a->in_place || a->sendbuf == a->recvbuf);
    if (alias) {
        if (rdom == nullptr) {  // of the team's kind after all
            active_ = false;
            return STRATA_OK;
        }
        const size_t shift = static_cast<size_t>(user_send - user_recv);
        STRATA_CHECK(recv_.reserve(*rdom, rhost, std::max(extent(out_), shift + extent(in_))));
        in_dom_ = rdom;
        in_user_ = user_send;
        in_copy_ = recv_.ptr;
        in_shift_ = shift;
        a->recvbuf = recv_.ptr;
        a->sendbuf = recv_.ptr + shift;
    } else {
        if (sdom != nullptr) {
            STRATA_CHECK(send_.reserve(*sdom, shost, extent(in_)));
            in_dom_ = sdom;
            in_user_ = user_send;
            in_copy_ = send_.ptr;
            in_shift_ = 0;
            a->sendbuf = send_.ptr;
        }
        if (rdom != nullptr) {
            STRATA_CHECK(recv_.reserve(*rdom, rhost, extent(out_)));
            a->recvbuf = recv_.ptr;
        }
    }
    if (rdom != nullptr) {
        out_dom_ = rdom;
        out_user_ = user_recv;
        out_copy_ = recv_.ptr;
    }
    return STRATA_OK;
}


}  // namespace strata

extern "C" int strata_device_copy(void *dst, const void *src, size_t bytes) {
    using namespace strata;
    if (bytes == 0) return 0;
    MemDomain *dom = nullptr;
    if (device_domain_of(dst, &dom) != STRATA_OK || (dom == nullptr && device_domain_of(src, &dom) != STRATA_OK))
        return -1;
    if (dom == nullptr) {
        memcpy(dst, src, bytes);
        return 0;
    }
    Ticket t;
    if (dom->copy(dst, src, bytes, &t) != STRATA_OK || wait_ticket(*dom, &t) != STRATA_OK) return -1;
    return 0;
}

// Page-locked host memory for the glue's fallback staging (coll_strata_fallback.c): a few
// grow-only buffers kept between calls, so that staging a device buffer for the
// previous component costs no allocation, and its copies run at full speed and
// asynchronously, which pageable malloc'ed memory does not allow.
namespace {

struct HostStage {
    std::mutex mu;
    struct Buf {
        strata::MemDomain *dom;
        char *p;
        size_t bytes;
        bool used;
    };
    std::vector<Buf> bufs;
    static constexpr size_t kKeep = 4;  // buffers kept; more in use at once are freed on return
};

HostStage &host_stage() {
    static HostStage *h = new HostStage;  // never destroyed: pinned memory goes with the process
    return *h;
}

}  // namespace

extern "C" void *strata_host_copy_get(const void *device_buf, size_t bytes) {
    using namespace strata;
    MemDomain *dom = nullptr;
    if (device_domain_of(device_buf, &dom) != STRATA_OK || dom == nullptr) return nullptr;
    HostStage &h = host_stage();
    std::lock_guard<std::mutex> g(h.mu);
    for (HostStage::Buf &b : h.bufs) {
        if (!b.used && b.bytes >= bytes) {
            b.used = true;
            return b.p;
        }
    }
    size_t n = 64 << 10;
    while (n < bytes) n *= 2;
    for (auto it = h.bufs.begin(); it != h.bufs.end(); ++it) {  // a smaller free one makes room
        if (!it->used) {
            it->dom->release_host(it->p);
            h.bufs.erase(it);
            break;
        }
    }
    void *p = nullptr;
    if (dom->alloc_host(n, &p) != STRATA_OK) return nullptr;
    h.bufs.push_back(HostStage::Buf{dom, static_cast<char *>(p), n, true});
    return p;
}

extern "C" void strata_host_copy_release(void) {
    HostStage &h = host_stage();
    std::lock_guard<std::mutex> g(h.mu);
    for (auto it = h.bufs.begin(); it != h.bufs.end();) {
        if (it->used) {
            ++it;
            continue;
        }
        it->dom->release_host(it->p);
        it = h.bufs.erase(it);
    }
}

extern "C" void strata_host_copy_put(void *p) {
    HostStage &h = host_stage();
    std::lock_guard<std::mutex> g(h.mu);
    size_t free_bufs = 0;
    for (const HostStage::Buf &b : h.bufs) free_bufs += !b.used;
    for (auto it = h.bufs.begin(); it != h.bufs.end(); ++it) {
        if (it->p != p) continue;
        if (free_bufs >= HostStage::kKeep) {
            it->dom->release_host(it->p);
            h.bufs.erase(it);
        } else {
            it->used = false;
        }
        return;
    }
}
