/* SPDX-License-Identifier: BSD-3-Clause */
// btl/ipc_cache.h - node peers' device buffers mapped through CUDA IPC, kept between calls.
//
// Opening a peer's allocation (cuIpcOpenMemHandle) costs far more than a collective
// on a small buffer, and applications pass the same buffers call after call, so a
// team keeps what it mapped. An entry is keyed by (local peer, the allocation's start
// in the peer, the allocation's buffer id): the id is unique for the life of the
// peer's process, so an address the peer freed and got back from a new allocation is
// never taken for the old one. When such a new allocation shows up at an address
// already cached, the old mapping is closed at once (its memory is gone for the
// peer).
//
// The mappings themselves are shared by every cache of the process (one table, keyed
// by domain and handle), as the driver keeps one mapping per allocation and process:
// two communicators that map the same peer buffer hold one mapping. A new allocation
// of a peer can overlap a freed one at another start; the driver then refuses to map
// it (CUDA_ERROR_ALREADY_MAPPED) while the old mapping is open, in whichever
// communicator holds it. So a failed open first closes this cache's mappings of that
// peer that no running call uses and tries again; then closes every mapping of the
// domain that no running call of any cache uses (a holder maps again when it next
// needs one) and tries once more; then fails, and the caller copies instead. A ref
// carries no allocation size, so which old mapping overlaps is not known: closing
// more than needed costs only a later re-open (UCX closes overlapping regions, then
// its whole cache; Open MPI clears its cache).
//
// The cache holds at most `capacity` mappings and at most `byte capacity` bytes of
// the allocations they map (or, if one call needs more, as much as that call maps,
// until a later call makes room) and closes the least recently used one to make room,
// never a mapping the current call uses; it closes everything when the team goes
// (whatever a component holds it gives back with its communicator). While open, a
// mapping keeps a freed allocation's memory from being reused, so the bounds are also
// a bound on GPU memory held for peers that freed their buffers.
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
#include <vector>

#include "common.h"
#include "mem/domain.h"

namespace strata {

class IpcCache {
public:
    struct Stats {
        uint64_t hits = 0, misses = 0, evicted = 0, stale = 0;
    };

    IpcCache();
    ~IpcCache();
    IpcCache(const IpcCache &) = delete;
    IpcCache &operator=(const IpcCache &) = delete;

    // 0 turns mapping off (enabled() false). Shrinking closes what no longer fits.
    void set_capacity(size_t n);
    // At most this many bytes of peers' allocations kept mapped (0: no bound but the
    // count): an open mapping keeps a freed allocation's memory, so the count alone
    // let 64 large buffers a peer had freed stay allocated. A call may map more than
    // the bound; what it used is closed (least recently used first) at later calls.
    void set_byte_capacity(uint64_t bytes);
    uint64_t bytes() const { return bytes_; }
    size_t capacity() const { return capacity_; }
    bool enabled() const { return capacity_ > 0; }

    // A new call: mappings used from here on are not evicted (by this cache or any
    // other) until the next one.
    void begin_call();
    // The current call no longer reads what it mapped (its schedule completed): other
    // caches may close those mappings when an overlapping allocation needs the room.
    // Optional: without it a call's mappings count as in use until this cache's next
    // call, or the next call of another cache on the same thread.
    void end_call();
    // The calling thread starts a new collective, so its previous (blocking) one has
    // ended: what that call pinned, in whichever cache, is no longer in use.
    static void thread_call_begins();
    // Maps h for a holder outside every cache (a team's slot regions, closed with
    // dom.ipc_close): where a stale mapping of any cache is in the way, it is closed
    // as for a cache's own open (above), so a region allocated where a peer freed a
    // buffer that some communicator still has mapped can still be mapped.
    static Status open_unheld(MemDomain &dom, const IpcHandle &h, void **p);
    // This rank's buffer p as its peers map it (describe + memoised handle).
    Status describe(MemDomain &dom, const void *p, IpcRef *ref);
    // Where peer `peer`'s buffer ref is in this process: its mapping + ref.offset.
    Status map(MemDomain &dom, int peer, const IpcRef &ref, char **ptr);
    // Closes every mapping and forgets every handle.
    void clear();

    size_t size() const { return lru_.size(); }
    const Stats &stats() const { return stats_; }

    struct Mapping;  // one open of one handle in this process, shared (ipc_cache.cc)

private:
    using Key = std::tuple<int, uint64_t, uint64_t>;  // peer, base, buffer id
    struct Entry {
        Key key;
        Mapping *m;
        uint64_t used;   // stamp of the last call that used it
        uint64_t bytes;  // the allocation's size, as its owner described it
    };
    void close(std::list<Entry>::iterator it);
    // Closes peer's mappings that the current call does not use; how many.
    size_t close_idle(int peer);
    // Closes least recently used entries of earlier calls until at most n are left and
    // `incoming` more bytes fit under the byte bound.
    void evict_to(size_t n, uint64_t incoming = 0);

    size_t capacity_ = 0;
    uint64_t byte_capacity_ = 0, bytes_ = 0;
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
