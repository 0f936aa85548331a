// btl/ipc_cache.h - node peers' device buffers mapped through CUDA IPC, kept between calls.
//
// Opening a peer's allocation (cuIpcOpenMemHandle) costs far more than a collective
// on a small buffer, and applications pass the same buffers call after call, so a
// team keeps what it mapped. An entry is keyed by (local peer, the allocation's start
// in the peer, the allocation's buffer id): the id is unique for the life of the
// peer's process, so an address the peer freed and got back from a new allocation is
// never taken for the old one. When such a new allocation shows up at an address
// already cached, the old mapping is closed at once (its memory is gone for the
// peer). The cache holds at most `capacity` mappings (or, if one call needs more, as
// many as that call maps, until a later call makes room) and closes the least recently
// used one to make room, never a mapping the current call uses; it closes everything
// when the team goes (DESIGN.md, principle 10). While open, a mapping keeps a freed
// allocation's memory from being reused, so the bound is also a bound on GPU memory
// held for peers that freed their buffers.
//
// The export side is memoised too: the handle of an allocation this rank posts is
// kept for the last few allocations, so a call on a known buffer makes no driver call
// beyond one pointer query.
#ifndef STRATA_BTL_IPC_CACHE_H
#define STRATA_BTL_IPC_CACHE_H

#include <cstdint>
#include <list>
#include <map>
#include <tuple>

#include "common.h"
#include "mem/domain.h"

namespace strata {

class IpcCache {
public:
    struct Stats {
        uint64_t hits = 0, misses = 0, evicted = 0, stale = 0;
    };

    IpcCache() = default;
    ~IpcCache() { clear(); }
    IpcCache(const IpcCache &) = delete;
    IpcCache &operator=(const IpcCache &) = delete;

    // 0 turns mapping off (enabled() false). Shrinking closes what no longer fits.
    void set_capacity(size_t n);
    size_t capacity() const { return capacity_; }
    bool enabled() const { return capacity_ > 0; }

    // A new call: mappings used from here on are not evicted until the next one.
    void begin_call() { ++stamp_; }
    // This rank's buffer p as its peers map it (describe + memoised handle).
    Status describe(MemDomain &dom, const void *p, IpcRef *ref);
    // Where peer `peer`'s buffer ref is in this process: its mapping + ref.offset.
    Status map(MemDomain &dom, int peer, const IpcRef &ref, char **ptr);
    // Closes every mapping and forgets every handle.
    void clear();

    size_t size() const { return lru_.size(); }
    const Stats &stats() const { return stats_; }

private:
    using Key = std::tuple<int, uint64_t, uint64_t>;  // peer, base, buffer id
    struct Entry {
        Key key;
        MemDomain *dom;
        char *mapped;
        uint64_t used;  // stamp of the last call that used it
    };
    void close(std::list<Entry>::iterator it);
    void evict_to(size_t n);  // closes least recently used entries of earlier calls

    size_t capacity_ = 0;
    uint64_t stamp_ = 0;
    std::list<Entry> lru_;  // most recently used first
    std::map<Key, std::list<Entry>::iterator> index_;
    Stats stats_;
    struct Export {
        uint64_t base, id;
        IpcHandle handle;
    };
    static constexpr size_t kExports = 8;
    Export exports_[kExports] = {};
    size_t next_export_ = 0;
};

}  // namespace strata

#endif
