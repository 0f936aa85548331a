// SPDX-License-Identifier: BSD-3-Clause
// btl/ipc_cache.cc - the IPC mapping cache (see the header).
#include "btl/ipc_cache.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "stats.h"

namespace strata {

// One cuIpcOpenMemHandle of one handle in this process, shared by every cache that
// holds an entry for it. mapped is nullptr once it was closed to make way for an
// overlapping allocation: holders then map again. Freed when nobody holds or pins it.
struct IpcCache::Mapping {
    MemDomain *dom;
    IpcHandle handle;
    char *mapped;
    int refs;  // cache entries
    int pins;  // running calls that use it
};

namespace {

using Mapping = IpcCache::Mapping;

// Every mapping of the process, and what each cache's running call pins. One mutex:
// opens are rare, hits take it briefly.
class Table {
public:
    void add(const IpcCache *c) {
        std::lock_guard<std::mutex> g(mu_);
        pins_[c];
    }
    void remove(const IpcCache *c) {
        std::lock_guard<std::mutex> g(mu_);
        unpin_locked(c);
        pins_.erase(c);
    }
    // c starts a call on this thread. What c pinned is no longer in use, nor is what
    // the cache this thread used before pinned, if this thread pinned it: one thread
    // runs one blocking call at a time, so that call has ended.
    void begin(const IpcCache *c) {
        std::lock_guard<std::mutex> g(mu_);
        unpin_locked(c);
        unpin_thread_locked();
        tl_last = c;
        pins_[c].thread = std::this_thread::get_id();
    }
    // This thread starts a new collective: its previous one has ended.
    void thread_begins() {
        std::lock_guard<std::mutex> g(mu_);
        unpin_thread_locked();
    }
    void end(const IpcCache *c) {
        std::lock_guard<std::mutex> g(mu_);
        unpin_locked(c);
    }

    // A reference to the mapping of h in dom, pinned for c's call, opening it if
    // needed. With retry_all, a failed open is retried after closing every mapping of
    // dom that no running call pins (*closed says how many); while only other caches'
    // pins are in the way (a thread between two calls of its own, as ranks as threads
    // are), it waits for them, up to kPinWait. A mapping of an allocation its peer
    // freed is never in use by a running call (no rank returns while a peer still
    // reads its buffer), so the blocker is never a live use; what else is closed is
    // only re-opened later.
    Status acquire(MemDomain &dom, const IpcHandle &h, bool retry_all, const IpcCache *c, Mapping **out,
                   size_t *closed) {
        std::unique_lock<std::mutex> g(mu_);
        *out = nullptr;
        for (Mapping &m : all_) {
            if (m.dom == &dom && m.mapped != nullptr && std::memcmp(m.handle.bytes, h.bytes, sizeof h.bytes) == 0) {
                ++m.refs;
                pin_locked(c, &m);
                *out = &m;
                return STRATA_OK;
            }
        }
        void *p = nullptr;
        const Status st = open_locked(g, dom, h, retry_all, c, &p, closed);
        if (st != STRATA_OK) {
            if (retry_all)
                log(1, "IPC cache: a node peer's buffer cannot be mapped (%s), copied instead", status_name(st));
            return st;
        }
        if (*closed > 0)
            log(2, "IPC cache: a peer buffer mapped after closing %zu idle mapping(s) of this process", *closed);
        all_.push_back(Mapping{&dom, h, static_cast<char *>(p), 1, 0});
        pin_locked(c, &all_.back());
        *out = &all_.back();
        return STRATA_OK;
    }
    // A mapping of h in dom that no cache holds (a team's slot regions): opened like a
    // cache's, making room the same way, and closed by its owner with dom.ipc_close.
    Status open(MemDomain &dom, const IpcHandle &h, void **p) {
        std::unique_lock<std::mutex> g(mu_);
        size_t closed = 0;
        const Status st = open_locked(g, dom, h, true, nullptr, p, &closed);
        if (st == STRATA_OK && closed > 0)
            log(2, "IPC cache: a peer's slot region mapped after closing %zu idle mapping(s) of this process", closed);
        return st;
    }
    // Where m is mapped, pinned for c's call; nullptr when it was closed meanwhile.
    char *use(Mapping *m, bool first_use, const IpcCache *c) {
        std::lock_guard<std::mutex> g(mu_);
        if (m->mapped != nullptr && first_use) pin_locked(c, m);
        return m->mapped;
    }
    void release(Mapping *m) {
        std::lock_guard<std::mutex> g(mu_);
        --m->refs;
        drop_if_unused(m);
    }

private:
    static constexpr std::chrono::milliseconds kPinWait{5000};
    // dom.ipc_open(h); with retry_all, a failed open is retried as acquire() says. c:
    // the cache whose own pins do not count as in the way (nullptr: none).
    Status open_locked(std::unique_lock<std::mutex> &g, MemDomain &dom, const IpcHandle &h, bool retry_all,
                       const IpcCache *c, void **p, size_t *closed) {
        Status st = dom.ipc_open(h, p);
        const auto start = std::chrono::steady_clock::now();
        static const std::vector<Mapping *> none;
        const std::vector<Mapping *> &mine = c != nullptr ? pins_[c].list : none;
        while (st != STRATA_OK && retry_all) {
            size_t now_closed = 0;
            bool others_pin = false;
            for (Mapping &m : all_) {
                if (m.dom != &dom || m.mapped == nullptr) continue;
                if (m.pins > 0) {
                    others_pin = others_pin || std::find(mine.begin(), mine.end(), &m) == mine.end();
                    continue;
                }
                dom.ipc_close(m.mapped);
                m.mapped = nullptr;
                ++now_closed;
            }
            *closed += now_closed;
            if (now_closed > 0) st = dom.ipc_open(h, p);
            if (st == STRATA_OK || !others_pin || std::chrono::steady_clock::now() - start > kPinWait) break;
            g.unlock();
            std::this_thread::sleep_for(std::chrono::microseconds(500));
            g.lock();
        }
        return st;
    }

    struct Pins {
        std::thread::id thread;
        std::vector<Mapping *> list;
    };
    static thread_local const IpcCache *tl_last;  // the cache this thread pinned for last
    void unpin_thread_locked() {
        if (tl_last == nullptr) return;
        auto it = pins_.find(tl_last);  // gone if its team went
        if (it != pins_.end() && it->second.thread == std::this_thread::get_id()) unpin_locked(tl_last);
        tl_last = nullptr;
    }
    void pin_locked(const IpcCache *c, Mapping *m) {
        ++m->pins;
        pins_[c].list.push_back(m);
    }
    void unpin_locked(const IpcCache *c) {
        auto it = pins_.find(c);
        if (it == pins_.end()) return;
        std::vector<Mapping *> list;
        list.swap(it->second.list);
        for (Mapping *m : list) {
            --m->pins;
            drop_if_unused(m);
        }
    }
    void drop_if_unused(Mapping *m) {
        if (m->refs > 0 || m->pins > 0) return;
        if (m->mapped != nullptr) m->dom->ipc_close(m->mapped);
        for (auto it = all_.begin(); it != all_.end(); ++it) {
            if (&*it == m) {
                all_.erase(it);
                return;
            }
        }
    }
    std::mutex mu_;
    std::list<Mapping> all_;  // stable addresses
    std::map<const IpcCache *, Pins> pins_;
};

thread_local const IpcCache *Table::tl_last = nullptr;

Table &table() {
    static Table *t = new Table;  // never destroyed: caches of static objects may outlive it
    return *t;
}

}  // namespace

IpcCache::IpcCache() { table().add(this); }

IpcCache::~IpcCache() {
    clear();
    table().remove(this);
}

void IpcCache::set_capacity(size_t n) {
    capacity_ = n;
    evict_to(n);
}

void IpcCache::set_byte_capacity(uint64_t bytes) {
    byte_capacity_ = bytes;
    evict_to(capacity_);
}

void IpcCache::begin_call() {
    table().begin(this);
    ++stamp_;
}

void IpcCache::thread_call_begins() { table().thread_begins(); }

Status IpcCache::open_unheld(MemDomain &dom, const IpcHandle &h, void **p) { return table().open(dom, h, p); }

void IpcCache::end_call() {
    table().end(this);
    ++stamp_;  // nothing mapped so far is in use any more
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
    if (hit != index_.end() && hit->second->m->dom == &dom) {
        Entry &e = *hit->second;
        const bool first_use = e.used != stamp_;
        if (char *mapped = table().use(e.m, first_use, this)) {
            lru_.splice(lru_.begin(), lru_, hit->second);  // iterators stay valid
            lru_.front().used = stamp_;
            ++stats_.hits;
            count(STRATA_STAT_IPC_HITS);
            *ptr = mapped + ref.offset;
            return STRATA_OK;
        }
        close(hit->second);  // closed for an overlapping allocation: map again
    }
    ++stats_.misses;
    count(STRATA_STAT_IPC_MISSES);
    // Anything else cached for this peer at this address is an allocation it has
    // freed since (or a mapping of another domain): close it now.
    for (auto it = index_.lower_bound(Key{peer, ref.base, 0});
         it != index_.end() && std::get<0>(it->first) == peer && std::get<1>(it->first) == ref.base;) {
        auto next = std::next(it);
        ++stats_.stale;
        close(it->second);
        it = next;
    }
    if (capacity_ > 0) evict_to(capacity_ - 1, ref.bytes);
    Mapping *m = nullptr;
    size_t closed = 0;
    if (table().acquire(dom, ref.handle, false, this, &m, &closed) != STRATA_OK) {
        // Most likely CUDA_ERROR_ALREADY_MAPPED: a stale mapping overlaps (header).
        closed = close_idle(peer);
        if (closed == 0 || table().acquire(dom, ref.handle, false, this, &m, &closed) != STRATA_OK) {
            closed = 0;
            const Status st = table().acquire(dom, ref.handle, true, this, &m, &closed);
            stats_.stale += closed;
            if (st != STRATA_OK) return st;
        }
    }
    lru_.push_front(Entry{key, m, stamp_, ref.bytes});
    bytes_ += ref.bytes;
    index_[key] = lru_.begin();
    *ptr = m->mapped + ref.offset;
    return STRATA_OK;
}

void IpcCache::close(std::list<Entry>::iterator it) {
    bytes_ -= it->bytes;
    table().release(it->m);
    index_.erase(it->key);
    lru_.erase(it);
}

size_t IpcCache::close_idle(int peer) {
    size_t n = 0;
    for (auto it = index_.lower_bound(Key{peer, 0, 0}); it != index_.end() && std::get<0>(it->first) == peer;) {
        auto next = std::next(it);
        if (it->second->used != stamp_) {
            ++stats_.stale;
            close(it->second);
            ++n;
        }
        it = next;
    }
    return n;
}

void IpcCache::evict_to(size_t n, uint64_t incoming) {
    auto over = [&] {
        return lru_.size() > n || (byte_capacity_ > 0 && !lru_.empty() && bytes_ + incoming > byte_capacity_);
    };
    while (over() && lru_.back().used != stamp_) {
        ++stats_.evicted;
        count(STRATA_STAT_IPC_EVICTIONS);
        close(std::prev(lru_.end()));
    }
}

void IpcCache::clear() {
    // A team goes between calls: what this thread's last call pinned, in whichever
    // cache, is no longer in use either (a thread that waits in one team's release for
    // a peer must not keep that peer from mapping a buffer of another team).
    table().end(this);
    table().thread_begins();
    while (!lru_.empty()) close(lru_.begin());
    std::memset(exports_, 0, sizeof exports_);
    next_export_ = 0;
}

}  // namespace strata
