// SPDX-License-Identifier: BSD-3-Clause
// test/unit/copies_test.cc - what a staged call copies, and the engine's staged transport.
//
// StageBlocks: strata::call_blocks for every collective, with CollArgs built the way
// src/api.cc builds them and every expected block written out by hand.
// BounceChannel: two thread-ranks exchange messages of 0 bytes to several MiB through
// btl/p2p.h's bounce channel over the plain transport, with a wrapper of the host
// domain that counts its allocations and copies, knows which memory is the channel's,
// and finishes copies late (as a stream does), so that a transfer that does not wait
// for its copy (or a receive that completes before its copy out) shows up as wrong bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine.h"
#include "harness.h"
#include "mem/domain.h"
#include "copies.h"
#include "strata.h"

namespace {

using strata::CollArgs;
using strata::Status;
using strata::StepId;
using strata::Ticket;

// ---------------------------------------------------------------------------
// call_blocks

using Blocks = std::vector<std::pair<size_t, size_t>>;  // {offset, bytes}

struct InOut {
    Blocks in, out;
};

InOut blocks_of(strata_coll_t coll, const CollArgs &a, int rank, int size) {
    // Stale entries: call_blocks must start from empty vectors.
    std::vector<strata::Block> in{{7, 7}}, out{{9, 9}, {1, 1}};
    strata::call_blocks(coll, a, rank, size, &in, &out);
    InOut r;
    for (const strata::Block &b : in) r.in.emplace_back(b.offset, b.bytes);
    for (const strata::Block &b : out) r.out.emplace_back(b.offset, b.bytes);
    return r;
}

// Arguments as the entry points of src/api.cc fill them (buffers are never touched).
char sbuf[256], rbuf[256];

CollArgs allreduce_args(const void *sendbuf, size_t count, strata_dtype_t dtype) {
    CollArgs a;
    a.sendbuf = sendbuf ? sendbuf : rbuf;
    a.recvbuf = rbuf;
    a.count = count;
    a.dtype = dtype;
    a.op = STRATA_OP_SUM;
    return a;
}

CollArgs reduce_args(const void *sendbuf, size_t count, strata_dtype_t dtype, int root) {
    CollArgs a;
    a.in_place = sendbuf == nullptr;
    a.sendbuf = a.in_place ? rbuf : sendbuf;
    a.recvbuf = rbuf;
    a.count = count;
    a.dtype = dtype;
    a.op = STRATA_OP_SUM;
    a.root = root;
    return a;
}

CollArgs reduce_scatter_args(const void *sendbuf, const size_t *counts, int size, strata_dtype_t dtype) {
    CollArgs a;
    for (int r = 0; r < size; ++r) a.count += counts[r];
    a.in_place = sendbuf == nullptr;
    a.sendbuf = a.in_place ? rbuf : sendbuf;
    a.recvbuf = rbuf;
    a.counts = counts;
    a.dtype = dtype;
    a.op = STRATA_OP_SUM;
    return a;
}

CollArgs allgatherv_args(const void *sendbuf, const size_t *bytes, const size_t *displs, int rank) {
    CollArgs a;
    a.in_place = sendbuf == nullptr;
    a.sendbuf = a.in_place ? rbuf + displs[rank] : sendbuf;
    a.recvbuf = rbuf;
    a.count = bytes[rank];
    a.counts = bytes;
    a.displs = displs;
    return a;
}

CollArgs bcast_args(size_t bytes, int root) {
    CollArgs a;
    a.sendbuf = rbuf;
    a.recvbuf = rbuf;
    a.count = bytes;
    a.root = root;
    return a;
}

CollArgs alltoallv_args(const void *sendbuf, const size_t *sbytes, const size_t *sdispls,
                        const size_t *rbytes, const size_t *rdispls) {
    CollArgs a;
    a.in_place = sendbuf == nullptr;
    a.sendbuf = a.in_place ? rbuf : sendbuf;
    a.recvbuf = rbuf;
    a.send_counts = a.in_place ? rbytes : sbytes;
    a.send_displs = a.in_place ? rdispls : sdispls;
    a.counts = rbytes;
    a.displs = rdispls;
    return a;
}

TEST(StageBlocks, Allreduce) {
    for (int rank = 0; rank < 3; ++rank) {
        InOut b = blocks_of(STRATA_COLL_ALLREDUCE, allreduce_args(sbuf, 10, STRATA_INT32), rank, 3);
        EXPECT_EQ(b.in, (Blocks{{0, 40}})) << "rank " << rank;
        EXPECT_EQ(b.out, (Blocks{{0, 40}})) << "rank " << rank;
    }
    // In place (sendbuf NULL): the same bytes of recvbuf are read and written.
    InOut b = blocks_of(STRATA_COLL_ALLREDUCE, allreduce_args(nullptr, 3, STRATA_DOUBLE), 1, 2);
    EXPECT_EQ(b.in, (Blocks{{0, 24}}));
    EXPECT_EQ(b.out, (Blocks{{0, 24}}));
    // Nothing to move: no empty blocks.
    b = blocks_of(STRATA_COLL_ALLREDUCE, allreduce_args(sbuf, 0, STRATA_INT64), 0, 2);
    EXPECT_EQ(b.in, Blocks{});
    EXPECT_EQ(b.out, Blocks{});
}

TEST(StageBlocks, ReduceWritesOnlyAtTheRoot) {
    const CollArgs a = reduce_args(sbuf, 5, STRATA_DOUBLE, 2);
    for (int rank : {0, 1, 3}) {
        InOut b = blocks_of(STRATA_COLL_REDUCE, a, rank, 4);
        EXPECT_EQ(b.in, (Blocks{{0, 40}})) << "rank " << rank;
        EXPECT_EQ(b.out, Blocks{}) << "rank " << rank;
    }
    InOut b = blocks_of(STRATA_COLL_REDUCE, a, 2, 4);
    EXPECT_EQ(b.in, (Blocks{{0, 40}}));
    EXPECT_EQ(b.out, (Blocks{{0, 40}}));
    // In place at the root: recvbuf holds the input and the result.
    b = blocks_of(STRATA_COLL_REDUCE, reduce_args(nullptr, 7, STRATA_INT16, 0), 0, 4);
    EXPECT_EQ(b.in, (Blocks{{0, 14}}));
    EXPECT_EQ(b.out, (Blocks{{0, 14}}));
}

TEST(StageBlocks, ReduceScatterUnevenCountsWithZeros) {
    // int64 elements: 3 + 0 + 5 + 1 = 9 in, 72 bytes.
    const size_t counts[] = {3, 0, 5, 1};
    const Blocks out[] = {{{0, 24}}, {}, {{0, 40}}, {{0, 8}}};
    for (const void *send : {static_cast<const void *>(sbuf), static_cast<const void *>(nullptr)}) {
        const CollArgs a = reduce_scatter_args(send, counts, 4, STRATA_INT64);
        for (int rank = 0; rank < 4; ++rank) {
            InOut b = blocks_of(STRATA_COLL_REDUCE_SCATTER, a, rank, 4);
            EXPECT_EQ(b.in, (Blocks{{0, 72}})) << "rank " << rank << " in place " << (send == nullptr);
            EXPECT_EQ(b.out, out[rank]) << "rank " << rank << " in place " << (send == nullptr);
        }
    }
}

TEST(StageBlocks, AllgatherUniformBlocksMergeIntoOne) {
    // strata_allgather(6 bytes per rank) on 3 ranks: displacements 0, 6, 12.
    const size_t bytes[] = {6, 6, 6}, displs[] = {0, 6, 12};
    for (int rank = 0; rank < 3; ++rank) {
        InOut b = blocks_of(STRATA_COLL_ALLGATHER, allgatherv_args(sbuf, bytes, displs, rank), rank, 3);
        EXPECT_EQ(b.in, (Blocks{{0, 6}})) << "rank " << rank;
        EXPECT_EQ(b.out, (Blocks{{0, 18}})) << "rank " << rank;
    }
}

TEST(StageBlocks, AllgathervGapsZerosAndReversedDispls) {
    // Rank 1 gives nothing (its displacement 50 lies in a gap); rank 3 comes first.
    const size_t bytes[] = {4, 0, 7, 3}, displs[] = {100, 50, 20, 0};
    const Blocks out{{0, 3}, {20, 7}, {100, 4}};
    const Blocks in[] = {{{0, 4}}, {}, {{0, 7}}, {{0, 3}}};
    for (int rank = 0; rank < 4; ++rank) {
        InOut b = blocks_of(STRATA_COLL_ALLGATHER, allgatherv_args(sbuf, bytes, displs, rank), rank, 4);
        EXPECT_EQ(b.in, in[rank]) << "rank " << rank;
        EXPECT_EQ(b.out, out) << "rank " << rank;
        // In place: sendbuf = recvbuf + displs[rank]; the input is read relative to it.
        b = blocks_of(STRATA_COLL_ALLGATHER, allgatherv_args(nullptr, bytes, displs, rank), rank, 4);
        EXPECT_EQ(b.in, in[rank]) << "in place, rank " << rank;
        EXPECT_EQ(b.out, out) << "in place, rank " << rank;
    }
}

TEST(StageBlocks, BcastRootReadsOthersWrite) {
    const CollArgs a = bcast_args(33, 1);
    InOut b = blocks_of(STRATA_COLL_BCAST, a, 1, 3);
    EXPECT_EQ(b.in, (Blocks{{0, 33}}));
    EXPECT_EQ(b.out, Blocks{});
    for (int rank : {0, 2}) {
        b = blocks_of(STRATA_COLL_BCAST, a, rank, 3);
        EXPECT_EQ(b.in, Blocks{}) << "rank " << rank;
        EXPECT_EQ(b.out, (Blocks{{0, 33}})) << "rank " << rank;
    }
}

TEST(StageBlocks, AlltoallUniformBlocksMergeIntoOne) {
    // strata_alltoall(5 bytes per rank) on 4 ranks.
    const size_t bytes[] = {5, 5, 5, 5}, displs[] = {0, 5, 10, 15};
    InOut b = blocks_of(STRATA_COLL_ALLTOALL, alltoallv_args(sbuf, bytes, displs, bytes, displs), 2, 4);
    EXPECT_EQ(b.in, (Blocks{{0, 20}}));
    EXPECT_EQ(b.out, (Blocks{{0, 20}}));
}

TEST(StageBlocks, AlltoallvGapsZerosTouchingAndOverlappingBlocks) {
    // Send: [10,12) [12,15) touch; [1,5) and [3,9) overlap; [4,5) lies inside [1,5);
    // the zero block at 0 is dropped. Merged: [1,9) and [10,15) (9..10 is a gap).
    const size_t sbytes[] = {2, 0, 3, 4, 6, 1}, sdispls[] = {10, 0, 12, 1, 3, 4};
    // Receive: [16,24) [0,8) [40,41), [20,22) inside [16,24); zeros at 30 (inside a
    // gap) and 8 are dropped.
    const size_t rbytes[] = {0, 8, 8, 1, 0, 2}, rdispls[] = {30, 16, 0, 40, 8, 20};
    const Blocks in{{1, 8}, {10, 5}}, out{{0, 8}, {16, 8}, {40, 1}};
    for (int rank = 0; rank < 6; ++rank) {
        InOut b = blocks_of(STRATA_COLL_ALLTOALL, alltoallv_args(sbuf, sbytes, sdispls, rbytes, rdispls),
                            rank, 6);
        EXPECT_EQ(b.in, in) << "rank " << rank;
        EXPECT_EQ(b.out, out) << "rank " << rank;
    }
    // In place: the send blocks are the receive blocks.
    InOut b = blocks_of(STRATA_COLL_ALLTOALL, alltoallv_args(nullptr, nullptr, nullptr, rbytes, rdispls),
                        3, 6);
    EXPECT_EQ(b.in, out);
    EXPECT_EQ(b.out, out);
    // A rank that sends and receives nothing.
    const size_t zeros[] = {0, 0, 0};
    b = blocks_of(STRATA_COLL_ALLTOALL, alltoallv_args(sbuf, zeros, sdispls, zeros, rdispls), 0, 3);
    EXPECT_EQ(b.in, Blocks{});
    EXPECT_EQ(b.out, Blocks{});
}

// ---------------------------------------------------------------------------
// The staged transport

// The host domain, but copies finish on the kPollsPerCopy-th poll of their ticket: the
// source is read when the copy is queued and the destination written when it
// completes, so a step that runs before the copy's step is done sees the old bytes.
// With read_late, as a stream does, copies read their source when they land, in the
// order they were queued: a copy queued behind one that writes its source reads the
// new bytes only if both land together or in that order.
// Counts what is asked of it and knows which memory it handed out by alloc_host.
class LateHostDomain : public strata::MemDomain {
public:
    static constexpr int kPollsPerCopy = 3;

    ~LateHostDomain() override { EXPECT_EQ(live_.size(), 0u) << "host memory not released"; }

    const char *name() const override { return "late-host"; }
    Status copy(void *dst, const void *src, size_t bytes, Ticket *t) override {
        ++copies;
        copied_bytes += bytes;
        const bool from = in_pool(src, bytes), to = in_pool(dst, bytes);
        if (to && !from) ++copies_into_pool;
        if (from && !to) ++copies_out_of_pool;
        const char *s = static_cast<const char *>(src);
        Write w{static_cast<char *>(dst), read_late ? s : nullptr, bytes,
                read_late ? std::vector<char>() : std::vector<char>(s, s + bytes)};
        if (t == nullptr) {  // queued with no ticket: lands with the next mark's
            unmarked_.push_back(std::move(w));
            return STRATA_OK;
        }
        ++ticketed;
        t->pending = new Pending{{std::move(w)}, kPollsPerCopy};
        return STRATA_OK;
    }
    // A ticket for every copy queued with none so far (a stream runs them in order).
    Status mark(Ticket *t) override {
        ++marks;
        t->pending = new Pending{std::move(unmarked_), kPollsPerCopy};
        unmarked_.clear();
        return STRATA_OK;
    }
    Status reduce(void *dst, const void *const *srcs, int nsrc, size_t count, strata_dtype_t dtype,
                  strata_op_t op, Ticket *t) override {
        ADD_FAILURE() << "the staged transport does not reduce";
        return strata::host_domain().reduce(dst, srcs, nsrc, count, dtype, op, t);
    }
    Status poll(Ticket *t, bool *done) override {
        Pending *p = static_cast<Pending *>(t->pending);
        *done = p == nullptr || --p->polls_left == 0;
        if (p != nullptr && *done) {
            for (const Write &w : p->writes) memmove(w.dst, w.src ? w.src : w.data.data(), w.bytes);
            delete p;
            t->pending = nullptr;
        }
        return STRATA_OK;
    }
    Status alloc(size_t bytes, void **p) override { return strata::host_domain().alloc(bytes, p); }
    void release(void *p) override { strata::host_domain().release(p); }
    Status alloc_host(size_t bytes, void **p) override {
        STRATA_CHECK(strata::host_domain().alloc_host(bytes, p));
        ++host_allocs;
        host_sizes.push_back(bytes);
        live_.emplace_back(static_cast<char *>(*p), bytes);
        return STRATA_OK;
    }
    void release_host(void *p) override {
        ++host_releases;
        for (size_t i = 0; i < live_.size(); ++i) {
            if (live_[i].first != p) continue;
            live_.erase(live_.begin() + long(i));
            strata::host_domain().release_host(p);
            return;
        }
        ADD_FAILURE() << "release_host of memory this domain did not hand out";
    }

    // Whether [p, p + bytes) lies inside one live alloc_host allocation.
    bool in_pool(const void *p, size_t bytes) const {
        const char *c = static_cast<const char *>(p);
        for (const auto &m : live_)
            if (c >= m.first && c + bytes <= m.first + m.second) return true;
        return false;
    }

    bool read_late = false;
    int copies = 0, copies_into_pool = 0, copies_out_of_pool = 0;
    int ticketed = 0, marks = 0;  // copies with a ticket of their own; mark() tickets
    size_t copied_bytes = 0;
    int host_allocs = 0, host_releases = 0;
    std::vector<size_t> host_sizes;

private:
    struct Write {
        char *dst;
        const char *src;  // read_late; else data, read when the copy was queued
        size_t bytes;
        std::vector<char> data;
    };
    struct Pending {
        std::vector<Write> writes;
        int polls_left;
    };
    std::vector<std::pair<char *, size_t>> live_;
    std::vector<Write> unmarked_;
};

constexpr size_t kMiB = size_t(1) << 20;

// One message of each size each way between ranks 0 and 1: zero bytes, small ones, and
// two of several MiB.
const std::vector<size_t> kSizes = {0, 1, 1000, 65536, 4 * kMiB + 1, 6 * kMiB};
constexpr int kNonEmpty = 5;

uint8_t pattern(int round, int from, size_t msg, size_t i) {
    return uint8_t((i * 131 + msg * 17 + size_t(from) * 59 + size_t(round) * 101) ^ (i >> 9));
}

// "" when buf[0..n) is message msg of round `round` from rank `from`, else the first wrong byte.
std::string check_bytes(const std::vector<char> &buf, int round, int from, size_t msg) {
    for (size_t i = 0; i < buf.size(); ++i)
        if (uint8_t(buf[i]) != pattern(round, from, msg, i))
            return "message " + std::to_string(msg) + " (" + std::to_string(buf.size()) +
                   " bytes): first wrong byte " + std::to_string(i);
    return "";
}

// The transport of a ThreadJob, noting whether each buffer it is given is pool memory.
struct Wire {
    strata_transport_t inner;
    const LateHostDomain *dom;
    int from_pool = 0, into_pool = 0, user_sends = 0, user_recvs = 0, empty = 0;

    strata_transport_t transport() {
        strata_transport_t t = inner;
        t.ctx = this;
        t.isend = [](void *ctx, const void *buf, size_t bytes, int peer, int tag, void **req) {
            Wire *w = static_cast<Wire *>(ctx);
            if (bytes == 0) ++w->empty;
            ++(w->dom->in_pool(buf, bytes) ? w->from_pool : w->user_sends);
            return w->inner.isend(w->inner.ctx, buf, bytes, peer, tag, req);
        };
        t.irecv = [](void *ctx, void *buf, size_t bytes, int peer, int tag, void **req) {
            Wire *w = static_cast<Wire *>(ctx);
            if (bytes == 0) ++w->empty;
            ++(w->dom->in_pool(buf, bytes) ? w->into_pool : w->user_recvs);
            return w->inner.irecv(w->inner.ctx, buf, bytes, peer, tag, req);
        };
        t.test = [](void *ctx, void *req, int *done, size_t *bytes) {
            Wire *w = static_cast<Wire *>(ctx);
            return w->inner.test(w->inner.ctx, req, done, bytes);
        };
        return t;
    }
};

// One rank's side of an exchange round on s. The send buffers are written by a late
// copy that each send depends on, and overwritten by a step that depends on the send;
// each receive is read by a step that depends on it. So the bytes only arrive right if
// a send's copy-in waits for its deps and the returned receive step waits for the
// copy-out.
struct Round {
    std::vector<std::vector<char>> src, send, recv, seen, junk;

    void build(strata::Schedule &s, LateHostDomain &late, int round, int rank) {
        const int peer = 1 - rank;
        src.assign(kSizes.size(), {});
        send.assign(kSizes.size(), {});
        recv.assign(kSizes.size(), {});
        seen.assign(kSizes.size(), {});
        junk.assign(kSizes.size(), {});
        for (size_t m = 0; m < kSizes.size(); ++m) {
            const size_t n = kSizes[m];
            src[m].resize(n);
            for (size_t i = 0; i < n; ++i) src[m][i] = char(pattern(round, rank, m, i));
            send[m].assign(n, char(0x5a));
            recv[m].assign(n, char(0xa5));
            seen[m].assign(n, char(0x3c));
            junk[m].assign(n, char(0x77));
            const StepId fill = s.copy(late, send[m].data(), src[m].data(), n);
            const StepId sent = s.send(send[m].data(), n, peer, int(m), {fill});
            s.copy(strata::host_domain(), send[m].data(), junk[m].data(), n, {sent});
            const StepId got = s.recv(recv[m].data(), n, peer, int(m));
            s.copy(strata::host_domain(), seen[m].data(), recv[m].data(), n, {got});
        }
    }

    std::string check(int round, int rank) const {
        for (size_t m = 0; m < kSizes.size(); ++m) {
            std::string e = check_bytes(recv[m], round, 1 - rank, m);
            if (!e.empty()) return "received " + e;
            e = check_bytes(seen[m], round, 1 - rank, m);
            if (!e.empty()) return "read by a step after the receive: " + e;
        }
        return "";
    }
};

// Per rank: its domain, schedule, wire and channels.
struct Rank {
    LateHostDomain dom;
    strata::Schedule sched;
    Wire wire;
    strata::TransportChannel plain;
    strata::BounceChannel bounce;
    Rank(strata_test::ThreadJob &job, int rank)
        : wire{job.transport(rank), &dom}, plain(wire.transport()), bounce(plain, dom) {}
};

// Runs round `round` on r.sched over ch and returns "" or what went wrong.
std::string run_round(Rank &r, strata::P2PChannel &ch, Round &rd, int round, int rank) {
    r.sched.clear();
    rd.build(r.sched, r.dom, round, rank);
    if (r.sched.run(ch) != STRATA_OK) return "run failed";
    return rd.check(round, rank);
}

TEST(BounceChannel, EverySizeArrivesThroughItsBuffersWhichAreReused) {
    strata_test::ThreadJob job(2);
    job.run([&](int rank) {
        Rank r(job, rank);
        for (int round = 0; round < 3; ++round) {
            Round rd;
            EXPECT_EQ(run_round(r, r.bounce, rd, round, rank), "") << "rank " << rank << " round " << round;
            // Every non-empty message left from and landed in the channel's memory,
            // nothing else did; empty ones are no transfers at all.
            EXPECT_EQ(r.wire.from_pool, kNonEmpty * (round + 1)) << "rank " << rank;
            EXPECT_EQ(r.wire.into_pool, kNonEmpty * (round + 1)) << "rank " << rank;
            EXPECT_EQ(r.wire.user_sends + r.wire.user_recvs, 0) << "rank " << rank;
            EXPECT_EQ(r.wire.empty, 0) << "rank " << rank;
            // One copy into the channel's memory per send, one out per receive, besides
            // the kNonEmpty late fills of the send buffers (which touch none of it).
            EXPECT_EQ(r.dom.copies_into_pool, kNonEmpty * (round + 1)) << "rank " << rank;
            EXPECT_EQ(r.dom.copies_out_of_pool, kNonEmpty * (round + 1)) << "rank " << rank;
        }
        // At most one buffer per message in flight at once, whatever the rounds: reused.
        EXPECT_LE(r.dom.host_allocs, 2 * kNonEmpty) << "rank " << rank;
        EXPECT_EQ(r.dom.host_releases, 0) << "rank " << rank;
    });
    EXPECT_EQ(job.unreceived(), 0u);
}

// The copies of the sends a pass issues share one event: rank 0 sends kNonEmpty
// messages at once (the run issues them all in its first pass), through the bounce
// channel, whose domain lands a copy only when its ticket completes, so a message
// sent before its copy landed arrives wrong. One mark for them all, no copy with a
// ticket of its own (before: kNonEmpty of them), and every message exact.
TEST(BounceChannel, TheSendsOfAPassShareOneEvent) {
    strata_test::ThreadJob job(2);
    job.run([&](int rank) {
        Rank r(job, rank);
        r.sched.clear();
        std::vector<std::vector<char>> msgs(kSizes.size());
        for (size_t m = 0; m < kSizes.size(); ++m) {
            msgs[m].assign(kSizes[m], char(0x3c));
            if (rank == 0) {
                for (size_t i = 0; i < kSizes[m]; ++i) msgs[m][i] = char(pattern(5, 0, m, i));
                r.sched.send(msgs[m].data(), kSizes[m], 1, int(m));
            } else {
                r.sched.recv(msgs[m].data(), kSizes[m], 0, int(m));
            }
        }
        ASSERT_EQ(r.sched.run(rank == 0 ? static_cast<strata::P2PChannel &>(r.bounce) : r.plain), STRATA_OK);
        if (rank == 0) {
            EXPECT_EQ(r.dom.copies_into_pool, kNonEmpty);
            EXPECT_EQ(r.dom.ticketed, 0) << "a send's copy polled on its own";
            EXPECT_EQ(r.dom.marks, 1) << "the pass's sends did not share one event";
        } else {
            for (size_t m = 0; m < kSizes.size(); ++m) EXPECT_EQ(check_bytes(msgs[m], 5, 0, m), "") << "message " << m;
        }
    });
    EXPECT_EQ(job.unreceived(), 0u);
}

// A chained run's sends for the two tests below: rank 0 fills each message's buffer
// with a copy of gpu (which the chain puts on the lane: a kernel's stand-in) and sends
// it through the bounce channel; rank 1 receives them on the plain channel. The lane
// lands its copies in order and reads their sources as they land (read_late).
struct FilledSends {
    LateHostDomain gpu, lane;
    std::vector<std::vector<char>> src, msgs;
    FilledSends() : src(kSizes.size()), msgs(kSizes.size()) { lane.read_late = true; }

    // Builds the run of `round` on r.sched (after anything the caller adds) and runs it.
    Status run(Rank &r, int rank, int round, const std::function<void()> &add = {}) {
        r.sched.clear();
        for (size_t m = 0; m < kSizes.size(); ++m) {
            msgs[m].assign(kSizes[m], char(0x3c));
            if (rank == 0) {
                src[m].resize(kSizes[m]);
                for (size_t i = 0; i < kSizes[m]; ++i) src[m][i] = char(pattern(round, 0, m, i));
                const StepId fill = r.sched.copy(gpu, msgs[m].data(), src[m].data(), kSizes[m]);
                r.sched.send(msgs[m].data(), kSizes[m], 1, int(m), {fill});
            } else {
                r.sched.recv(msgs[m].data(), kSizes[m], 0, int(m));
            }
        }
        if (add) add();
        if (rank == 0) r.sched.chain(&gpu, &lane, {}, false);
        return r.sched.run(rank == 0 ? static_cast<strata::P2PChannel &>(r.bounce) : r.plain);
    }
    void expect_received(int round) const {
        for (size_t m = 0; m < kSizes.size(); ++m) EXPECT_EQ(check_bytes(msgs[m], round, 0, m), "") << "message " << m;
    }
};

// In a run chained on a lane (src/engine.h), a send's copy out of device memory goes on
// the lane behind the work that wrote its buffer, before that work is done. So a send
// copy queued ahead of its fill, or a transfer started before the lane passed it,
// arrives wrong. The fills and the sends' copies share the lane's one batch: the host
// polled no event to learn that a fill was done (before: the fills' batch, then the
// sends' own event on the channel's domain).
TEST(BounceChannel, ChainedSendsCopyOnTheLaneBehindTheWorkThatWroteThem) {
    strata_test::ThreadJob job(2);
    job.run([&](int rank) {
        Rank r(job, rank);
        FilledSends f;
        ASSERT_EQ(f.run(r, rank, 6), STRATA_OK);
        if (rank == 0) {
            EXPECT_EQ(f.gpu.copies, 0) << "a fill ran off the lane";
            EXPECT_EQ(f.lane.copies, 2 * kNonEmpty) << "the fills and the sends' copies (an empty message has neither)";
            EXPECT_EQ(f.lane.marks, 1) << "the host learnt that a fill was done before its send's copy was queued";
            EXPECT_EQ(r.dom.copies, 0) << "a send's copy went on the channel's own domain";
            EXPECT_EQ(r.dom.marks + r.dom.ticketed, 0);
            EXPECT_EQ(r.wire.from_pool, kNonEmpty);
        } else {
            f.expect_received(6);
        }
    });
    EXPECT_EQ(job.unreceived(), 0u);
}

// A chained run given up while its sends' copies are on the lane: rank 0's third poll
// of a failing step comes after the sends queued their copies and before the lane
// passed them. The run fails, nothing goes on the wire, and the channel takes the
// next run (its buffers back, the same messages exact).
TEST(BounceChannel, AChainedRunGivenUpWithSendsCopiesOnTheLane) {
    strata_test::ThreadJob job(2);
    job.run([&](int rank) {
        Rank r(job, rank);
        FilledSends f;
        if (rank == 0) {
            int polls = 0;
            const Status st = f.run(r, rank, 8, [&] {
                r.sched.poll([&polls](bool *done, bool *) {
                    *done = false;
                    return ++polls == 3 ? STRATA_ERR_COMM : STRATA_OK;
                });
            });
            EXPECT_EQ(st, STRATA_ERR_COMM);
            EXPECT_EQ(f.lane.copies, 2 * kNonEmpty) << "the sends had not queued their copies when it failed";
            EXPECT_EQ(r.wire.from_pool, 0) << "a send went on the wire after its run failed";
        }
        EXPECT_EQ(f.run(r, rank, 8), STRATA_OK);  // nothing of the failed run reaches rank 1
        if (rank == 1)
            f.expect_received(8);
        else
            EXPECT_LE(r.dom.host_allocs, kNonEmpty) << "the given-up sends' buffers were not reused";
    });
    EXPECT_EQ(job.unreceived(), 0u);
}

TEST(BounceChannel, ThePlainChannelSendsTheCallersBuffers) {
    strata_test::ThreadJob job(2);
    job.run([&](int rank) {
        Rank r(job, rank);
        Round rd;
        EXPECT_EQ(run_round(r, r.plain, rd, 0, rank), "") << "rank " << rank;
        EXPECT_EQ(r.dom.host_allocs, 0) << "rank " << rank;
        EXPECT_EQ(r.dom.copies, kNonEmpty) << "rank " << rank;  // the late fills only
        EXPECT_EQ(r.wire.user_sends, kNonEmpty) << "rank " << rank;
        EXPECT_EQ(r.wire.user_recvs, kNonEmpty) << "rank " << rank;
        EXPECT_EQ(r.wire.from_pool + r.wire.into_pool, 0) << "rank " << rank;
    });
    EXPECT_EQ(job.unreceived(), 0u);
}

TEST(BounceChannel, ReceiveCopyOutCompletesBeforeItsDependents) {
    // One message, and a chain after the receive: a host copy of the received bytes and a
    // join after it. The copy-out finishes on its third poll; the host copy must still
    // see the message, however the engine orders the steps it releases.
    const size_t n = 4096 + 3;
    strata_test::ThreadJob job(2);
    job.run([&](int rank) {
        Rank r(job, rank);
        r.sched.clear();
        std::vector<char> msg(n), in(n, char(0xa5)), seen(n, char(0x3c));
        for (size_t i = 0; i < n; ++i) msg[i] = char(pattern(7, rank, 0, i));
        StepId last = strata::kNoStep;
        if (rank == 0) {
            last = r.sched.send(msg.data(), n, 1, 3);
        } else {
            const StepId got = r.sched.recv(in.data(), n, 0, 3);
            const StepId look = r.sched.copy(strata::host_domain(), seen.data(), in.data(), n, {got});
            last = r.sched.join({look});
        }
        EXPECT_NE(last, strata::kNoStep);
        ASSERT_EQ(r.sched.run(r.bounce), STRATA_OK);
        if (rank == 1) {
            EXPECT_EQ(check_bytes(in, 7, 0, 0), "");
            EXPECT_EQ(check_bytes(seen, 7, 0, 0), "") << "a dependent of the receive ran before its copy-out";
            EXPECT_EQ(r.dom.copies_out_of_pool, 1);
        } else {
            EXPECT_EQ(r.dom.copies_into_pool, 1);
        }
    });
    EXPECT_EQ(job.unreceived(), 0u);
}

}  // namespace
