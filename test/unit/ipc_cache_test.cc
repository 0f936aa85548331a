// SPDX-License-Identifier: BSD-3-Clause
// test/unit/ipc_cache_test.cc - the cache of node peers' buffers mapped through IPC.
//
// A stand-in domain hands out a distinct "mapping" per open and counts opens, closes
// and handle exports, so the cache's keying, LRU bound and release are checked
// without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "btl/ipc_cache.h"

namespace {

using strata::IpcCache;
using strata::IpcHandle;
using strata::IpcRef;

// The handle of allocation `id` carries its id; opening it "maps" it at a fresh address.
class MapDomain : public strata::MemDomain {
public:
    const char *name() const override { return "map-test"; }
    strata::Status copy(void *, const void *, size_t, strata::Ticket *) override { return STRATA_ERR_UNSUPPORTED; }
    strata::Status reduce(void *, const void *const *, int, size_t, strata_dtype_t, strata_op_t,
                          strata::Ticket *) override {
        return STRATA_ERR_UNSUPPORTED;
    }
    strata::Status poll(strata::Ticket *, bool *done) override {
        *done = true;
        return STRATA_OK;
    }
    strata::Status alloc(size_t, void **) override { return STRATA_ERR_UNSUPPORTED; }
    void release(void *) override {}
    strata::Status alloc_host(size_t, void **) override { return STRATA_ERR_UNSUPPORTED; }
    void release_host(void *) override {}

    strata::Status ipc_open(const IpcHandle &h, void **p) override {
        if (fail_open) return STRATA_ERR_DEVICE;
        uint64_t want = 0;
        std::memcpy(&want, h.bytes, sizeof want);
        // As the driver's CUDA_ERROR_ALREADY_MAPPED: a stale mapping overlaps this one.
        for (uintptr_t m : open)
            if (blocks.count({opened_id[m], want})) return STRATA_ERR_DEVICE;
        ++opens;
        next_ += 0x100000;
        *p = reinterpret_cast<void *>(next_);
        open.insert(next_);
        uint64_t id = 0;
        std::memcpy(&id, h.bytes, sizeof id);
        opened_id[next_] = id;
        return STRATA_OK;
    }
    void ipc_close(void *p) override {
        ++closes;
        EXPECT_EQ(open.erase(reinterpret_cast<uintptr_t>(p)), 1u) << "closed twice or never opened";
    }
    // Buffers live in allocations of 1 MiB at base = p & ~(1 MiB - 1); the allocation's
    // id is whatever `id_at` says for that base (tests change it to "re-allocate").
    strata::Status ipc_describe(const void *p, IpcRef *ref) override {
        const uintptr_t a = reinterpret_cast<uintptr_t>(p), base = a & ~uintptr_t(0xfffff);
        auto it = id_at.find(base);
        if (it == id_at.end()) return STRATA_ERR_UNSUPPORTED;
        ref->base = base;
        ref->offset = a - base;
        ref->buffer_id = it->second;
        return STRATA_OK;
    }
    // The handle of an allocation start carries the allocation's current id.
    strata::Status ipc_export(void *base, IpcHandle *h) override {
        auto it = id_at.find(reinterpret_cast<uintptr_t>(base));
        if (it == id_at.end()) return STRATA_ERR_ARG;
        ++exports;
        std::memset(h->bytes, 0, sizeof h->bytes);
        std::memcpy(h->bytes, &it->second, sizeof it->second);
        return STRATA_OK;
    }

    int opens = 0, closes = 0, exports = 0;
    bool fail_open = false;
    // (old, new): allocation `new` overlaps `old`, which the peer freed; opening new
    // fails while old is still mapped here.
    std::set<std::pair<uint64_t, uint64_t>> blocks;
    std::set<uintptr_t> open;
    std::map<uintptr_t, uint64_t> opened_id, id_at;

private:
    uintptr_t next_ = 0x7000000000;
};

// A handle names the allocation and its process (as a real one does), so the same id
// in two peers gives two handles.
IpcRef ref_of(uint64_t base, uint64_t id, uint64_t offset = 0, int peer = 0, uint64_t bytes = 0) {
    IpcRef r{};
    r.base = base;
    r.buffer_id = id;
    r.offset = offset;
    r.bytes = bytes;
    std::memcpy(r.handle.bytes, &id, sizeof id);
    std::memcpy(r.handle.bytes + sizeof id, &peer, sizeof peer);
    return r;
}

class IpcCacheTest : public ::testing::Test {
protected:
    char *map(int peer, uint64_t base, uint64_t id, uint64_t offset = 0) {
        char *p = nullptr;
        EXPECT_EQ(cache_.map(dom_, peer, ref_of(base, id, offset, peer), &p), STRATA_OK);
        return p;
    }
    uint64_t id_of(char *p) const { return dom_.opened_id.at(reinterpret_cast<uintptr_t>(p)); }
    // A mapping of an allocation of `bytes`.
    char *map_sized(int peer, uint64_t base, uint64_t id, uint64_t bytes) {
        char *p = nullptr;
        EXPECT_EQ(cache_.map(dom_, peer, ref_of(base, id, 0, peer, bytes), &p), STRATA_OK);
        return p;
    }
    bool is_open(char *p) const { return dom_.open.count(reinterpret_cast<uintptr_t>(p)) == 1; }
    MapDomain dom_;
    IpcCache cache_;
};

TEST_F(IpcCacheTest, OpensOnceAndAddsTheOffset) {
    cache_.set_capacity(8);
    cache_.begin_call();
    char *a = map(1, 0x1000000, 7, 0);
    char *b = map(1, 0x1000000, 7, 4096);
    cache_.begin_call();
    char *c = map(1, 0x1000000, 7, 12);
    EXPECT_EQ(dom_.opens, 1);
    EXPECT_EQ(b, a + 4096);
    EXPECT_EQ(c, a + 12);
    EXPECT_EQ(id_of(a), 7u);
    EXPECT_EQ(cache_.stats().hits, 2u);
    EXPECT_EQ(cache_.stats().misses, 1u);
}

TEST_F(IpcCacheTest, AReallocatedAddressIsANewAllocation) {
    cache_.set_capacity(8);
    cache_.begin_call();
    char *old_map = map(1, 0x1000000, 7);
    cache_.begin_call();
    char *new_map = map(1, 0x1000000, 8);  // the peer freed 7 and got the address back
    EXPECT_EQ(dom_.opens, 2);
    EXPECT_NE(new_map, old_map);
    EXPECT_EQ(id_of(new_map), 8u);
    // The old mapping is closed at once: its allocation is gone.
    EXPECT_EQ(dom_.closes, 1);
    EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(old_map)), 0u);
    EXPECT_EQ(cache_.stats().stale, 1u);
    EXPECT_EQ(cache_.size(), 1u);
}

// The peer freed allocation 7 (at 0x1000000) and got 8 at another start, over the old
// range: the driver refuses to map 8 while 7 is mapped (CUDA_ERROR_ALREADY_MAPPED). The
// cache closes that peer's mappings no running call uses, and tries again.
TEST_F(IpcCacheTest, AnOverlappingReallocationEvictsAndRetries) {
    cache_.set_capacity(8);
    cache_.begin_call();
    char *old_map = map(1, 0x1000000, 7);
    char *other_peer = map(2, 0x1000000, 3);
    cache_.begin_call();
    dom_.blocks.insert({7, 8});
    char *p = nullptr;
    ASSERT_EQ(cache_.map(dom_, 1, ref_of(0x0f00000, 8, 0, 1), &p), STRATA_OK);
    EXPECT_EQ(id_of(p), 8u);
    EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(old_map)), 0u) << "the stale mapping stayed";
    EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(other_peer)), 1u) << "another peer's mapping was closed";
    EXPECT_EQ(cache_.stats().stale, 1u);
    EXPECT_EQ(cache_.size(), 2u);
}

// What a running call uses is never closed: when only such a mapping is in the way,
// the open fails (the caller copies instead) and both stay as they were.
TEST_F(IpcCacheTest, AnOverlapInUseIsNotClosed) {
    cache_.set_capacity(8);
    cache_.begin_call();
    char *in_use = map(1, 0x1000000, 7);
    dom_.blocks.insert({7, 8});
    char *p = nullptr;
    EXPECT_EQ(cache_.map(dom_, 1, ref_of(0x0f00000, 8, 0, 1), &p), STRATA_ERR_DEVICE);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(in_use)), 1u);
}

// Two communicators of one process (two caches) share the driver's one mapping of a
// buffer, and a stale mapping that only the other one holds is closed too, when no
// call of it uses that mapping.
TEST_F(IpcCacheTest, CommunicatorsShareMappingsAndTheirStaleOnesGo) {
    IpcCache other;
    cache_.set_capacity(8);
    other.set_capacity(8);
    cache_.begin_call();
    other.begin_call();
    char *a = map(1, 0x1000000, 7);
    char *b = nullptr;
    ASSERT_EQ(other.map(dom_, 3, ref_of(0x1000000, 7, 0, 1), &b), STRATA_OK);
    EXPECT_EQ(a, b);
    EXPECT_EQ(dom_.opens, 1) << "one mapping per buffer and process";
    cache_.begin_call();
    other.begin_call();
    dom_.blocks.insert({7, 8});  // the peer freed 7, and 8 overlaps it
    char *c = nullptr;
    ASSERT_EQ(other.map(dom_, 3, ref_of(0x0f00000, 8, 0, 1), &c), STRATA_OK);
    EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(a)), 0u) << "the stale mapping stayed open";
    // The first cache, hitting its entry of 7, finds it closed and maps again.
    cache_.begin_call();
    EXPECT_NE(map(1, 0x1000000, 7), nullptr);
    EXPECT_EQ(dom_.opens, 3);
    other.clear();
    cache_.clear();
    EXPECT_TRUE(dom_.open.empty());
}

TEST_F(IpcCacheTest, PeersAreKeptApart) {
    cache_.set_capacity(8);
    cache_.begin_call();
    char *p1 = map(1, 0x1000000, 7);
    char *p2 = map(2, 0x1000000, 7);  // the same address and id in another process
    EXPECT_NE(p1, p2);
    EXPECT_EQ(dom_.opens, 2);
    EXPECT_EQ(dom_.closes, 0);
    EXPECT_EQ(map(1, 0x1000000, 7), p1);
    EXPECT_EQ(map(2, 0x1000000, 7), p2);
}

TEST_F(IpcCacheTest, EvictsTheLeastRecentlyUsed) {
    const uint64_t hits = strata_stat(STRATA_STAT_IPC_HITS), misses = strata_stat(STRATA_STAT_IPC_MISSES),
                   evictions = strata_stat(STRATA_STAT_IPC_EVICTIONS);
    cache_.set_capacity(3);
    char *m[4];
    for (int i = 0; i < 3; ++i) {
        cache_.begin_call();
        m[i] = map(1, 0x1000000 * uint64_t(i + 1), uint64_t(i + 1));
    }
    cache_.begin_call();
    EXPECT_EQ(map(1, 0x1000000, 1), m[0]);  // allocation 1 is used again: 2 is now the oldest
    cache_.begin_call();
    m[3] = map(1, 0x4000000, 4);
    EXPECT_EQ(cache_.size(), 3u);
    EXPECT_EQ(cache_.stats().evicted, 1u);
    EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(m[1])), 0u);
    for (int i : {0, 2, 3}) EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(m[i])), 1u) << i;
    // the process's counters (the performance variables) saw the same: 4 mapped, 1 hit, 1 closed
    EXPECT_EQ(strata_stat(STRATA_STAT_IPC_MISSES) - misses, 4u);
    EXPECT_EQ(strata_stat(STRATA_STAT_IPC_HITS) - hits, 1u);
    EXPECT_EQ(strata_stat(STRATA_STAT_IPC_EVICTIONS) - evictions, 1u);
}

// The count alone let a peer's freed buffers stay allocated, 64 of them, whatever
// their size: the bytes mapped are bounded too (coll_strata_ipc_cache_bytes).
TEST_F(IpcCacheTest, BoundsTheBytesItKeepsMapped) {
    constexpr uint64_t MiB = uint64_t(1) << 20;
    cache_.set_capacity(64);
    cache_.set_byte_capacity(3 * MiB);
    char *m[5];
    for (int i = 0; i < 3; ++i) {
        cache_.begin_call();
        m[i] = map_sized(1, 0x1000000 * uint64_t(i + 1), uint64_t(i + 1), MiB);
    }
    EXPECT_EQ(cache_.size(), 3u);
    EXPECT_EQ(cache_.bytes(), 3 * MiB);
    EXPECT_EQ(cache_.stats().evicted, 0u);
    cache_.begin_call();
    m[3] = map_sized(1, 0x4000000, 4, MiB);  // a fourth MiB: the least recently used goes
    EXPECT_EQ(cache_.stats().evicted, 1u);
    EXPECT_FALSE(is_open(m[0]));
    EXPECT_EQ(cache_.bytes(), 3 * MiB);
    cache_.begin_call();
    m[4] = map_sized(1, 0x5000000, 5, 2 * MiB);  // room for 2 MiB: two more go
    EXPECT_EQ(cache_.stats().evicted, 3u);
    EXPECT_FALSE(is_open(m[1]));
    EXPECT_FALSE(is_open(m[2]));
    EXPECT_TRUE(is_open(m[3]));
    EXPECT_TRUE(is_open(m[4]));
    EXPECT_EQ(cache_.size(), 2u);
    EXPECT_EQ(cache_.bytes(), 3 * MiB);
}

// One call may need more than the byte bound: nothing it reads is closed under it, and
// its mappings go at the next calls, least recently used first.
TEST_F(IpcCacheTest, ACallMayMapMoreBytesThanTheBoundUntilItEnds) {
    constexpr uint64_t MiB = uint64_t(1) << 20;
    cache_.set_capacity(64);
    cache_.set_byte_capacity(3 * MiB);
    cache_.begin_call();
    char *a = map_sized(1, 0x1000000, 1, 2 * MiB), *b = map_sized(2, 0x1000000, 2, 2 * MiB),
         *c = map_sized(3, 0x1000000, 3, 2 * MiB);
    EXPECT_EQ(cache_.bytes(), 6 * MiB);
    EXPECT_EQ(dom_.closes, 0);
    cache_.begin_call();
    char *d = map_sized(1, 0x2000000, 4, MiB);
    EXPECT_FALSE(is_open(a));
    EXPECT_FALSE(is_open(b));
    EXPECT_TRUE(is_open(c));
    EXPECT_TRUE(is_open(d));
    EXPECT_EQ(cache_.bytes(), 3 * MiB);
    cache_.set_byte_capacity(MiB);  // shrinking closes what no longer fits
    EXPECT_FALSE(is_open(c));
    EXPECT_EQ(cache_.bytes(), MiB);
}

TEST_F(IpcCacheTest, NeverEvictsWhatTheCurrentCallUses) {
    cache_.set_capacity(2);
    cache_.begin_call();
    char *a = map(1, 0x1000000, 1), *b = map(2, 0x1000000, 2), *c = map(3, 0x1000000, 3);
    EXPECT_EQ(cache_.size(), 3u);  // over the bound for this call, all still open
    EXPECT_EQ(dom_.closes, 0);
    for (char *p : {a, b, c}) EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(p)), 1u);
    cache_.begin_call();
    map(1, 0x2000000, 4);
    EXPECT_EQ(cache_.size(), 2u);  // back to the bound once those calls are over
    EXPECT_EQ(dom_.open.count(reinterpret_cast<uintptr_t>(c)), 1u);
}

TEST_F(IpcCacheTest, ClearAndShrinkClose) {
    cache_.set_capacity(4);
    for (int i = 0; i < 4; ++i) {
        cache_.begin_call();
        map(1, 0x1000000 * uint64_t(i + 1), uint64_t(i + 1));
    }
    cache_.begin_call();
    cache_.set_capacity(1);
    EXPECT_EQ(cache_.size(), 1u);
    EXPECT_EQ(dom_.closes, 3);
    cache_.clear();
    EXPECT_EQ(cache_.size(), 0u);
    EXPECT_TRUE(dom_.open.empty());
    {
        IpcCache scoped;
        scoped.set_capacity(2);
        char *p = nullptr;
        ASSERT_EQ(scoped.map(dom_, 1, ref_of(0x1000000, 9), &p), STRATA_OK);
        EXPECT_EQ(dom_.open.size(), 1u);
    }
    EXPECT_TRUE(dom_.open.empty()) << "a cache closes its mappings when it goes";
}

TEST_F(IpcCacheTest, AFailedOpenIsReportedAndNotKept) {
    cache_.set_capacity(4);
    cache_.begin_call();
    dom_.fail_open = true;
    char *p = reinterpret_cast<char *>(1);
    EXPECT_EQ(cache_.map(dom_, 1, ref_of(0x1000000, 1), &p), STRATA_ERR_DEVICE);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(cache_.size(), 0u);
    dom_.fail_open = false;
    EXPECT_NE(map(1, 0x1000000, 1), nullptr);
    EXPECT_EQ(dom_.opens, 1);
}

TEST_F(IpcCacheTest, ExportsEachAllocationOnce) {
    dom_.id_at[0x1000000] = 5;
    dom_.id_at[0x2000000] = 6;
    IpcRef r{};
    ASSERT_EQ(cache_.describe(dom_, reinterpret_cast<void *>(0x1000040), &r), STRATA_OK);
    EXPECT_EQ(r.base, 0x1000000u);
    EXPECT_EQ(r.offset, 0x40u);
    EXPECT_EQ(r.buffer_id, 5u);
    ASSERT_EQ(cache_.describe(dom_, reinterpret_cast<void *>(0x1000080), &r), STRATA_OK);
    ASSERT_EQ(cache_.describe(dom_, reinterpret_cast<void *>(0x2000000), &r), STRATA_OK);
    EXPECT_EQ(dom_.exports, 2);
    dom_.id_at[0x1000000] = 7;  // freed and allocated again at the same address
    ASSERT_EQ(cache_.describe(dom_, reinterpret_cast<void *>(0x1000000), &r), STRATA_OK);
    EXPECT_EQ(dom_.exports, 3);
    uint64_t id = 0;
    std::memcpy(&id, r.handle.bytes, sizeof id);
    EXPECT_EQ(id, 7u) << "the handle of the new allocation, not the memoised old one";
    EXPECT_EQ(cache_.describe(dom_, reinterpret_cast<void *>(0x3000000), &r), STRATA_ERR_UNSUPPORTED);
}

}  // namespace
