// btl/ipc_cache.cc - the IPC mapping cache (see the header).
#include "btl/ipc_cache.h"

#include <cstring>

namespace strata {

void IpcCache::set_capacity(size_t n) {
    capacity_ = n;
    evict_to(n);
}

Status IpcCache::describe(MemDomain &dom, const void *p, IpcRef *ref) {
    STRATA_CHECK(dom.ipc_describe(p, ref));
    for (const Export &e : exports_) {
        if (e.base == ref->base && e.id == ref->buffer_id) {
            ref->handle = e.handle;
            return STRATA_OK;
        }
    }
    STRATA_CHECK(dom.ipc_export(reinterpret_cast<void *>(ref->base), &ref->handle));
    exports_[next_export_] = Export{ref->base, ref->buffer_id, ref->handle};
    next_export_ = (next_export_ + 1) % kExports;
    return STRATA_OK;
}

Status IpcCache::map(MemDomain &dom, int peer, const IpcRef &ref, char **ptr) {
    *ptr = nullptr;
    const Key key{peer, ref.base, ref.buffer_id};
    auto hit = index_.find(key);
    if (hit != index_.end() && hit->second->dom == &dom) {
        lru_.splice(lru_.begin(), lru_, hit->second);  // iterators stay valid
        lru_.front().used = stamp_;
        ++stats_.hits;
        *ptr = lru_.front().mapped + ref.offset;
        return STRATA_OK;
    }
    ++stats_.misses;
    // Anything else cached for this peer at this address is an allocation it has
    // freed since (or a mapping of another domain): close it now.
    for (auto it = index_.lower_bound(Key{peer, ref.base, 0});
         it != index_.end() && std::get<0>(it->first) == peer && std::get<1>(it->first) == ref.base;) {
        auto next = std::next(it);
        ++stats_.stale;
        close(it->second);
        it = next;
    }
    if (capacity_ > 0) evict_to(capacity_ - 1);
    void *p = nullptr;
    STRATA_CHECK(dom.ipc_open(ref.handle, &p));
    lru_.push_front(Entry{key, &dom, static_cast<char *>(p), stamp_});
    index_[key] = lru_.begin();
    *ptr = static_cast<char *>(p) + ref.offset;
    return STRATA_OK;
}

void IpcCache::close(std::list<Entry>::iterator it) {
    it->dom->ipc_close(it->mapped);
    index_.erase(it->key);
    lru_.erase(it);
}

void IpcCache::evict_to(size_t n) {
    while (lru_.size() > n && lru_.back().used != stamp_) {
        ++stats_.evicted;
        close(std::prev(lru_.end()));
    }
}

void IpcCache::clear() {
    while (!lru_.empty()) close(lru_.begin());
    std::memset(exports_, 0, sizeof exports_);
    next_export_ = 0;
}

}  // namespace strata
