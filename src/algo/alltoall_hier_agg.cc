// SPDX-License-Identifier: BSD-3-Clause
// src/algo/alltoall_hier_agg.cc - hierarchical alltoall(v): shared memory inside a
// node, one aggregated message per (sending node, destination rank) across nodes.
//
// Block (a,i) -> (b,k) for a != b travels on rail k: the aggregator on node a is
// local rank k % L(a); it gathers the blocks of every rank of node a for (b,k),
// ordered by source local index, and sends them to (b,k) as ONE message. So each
// rank receives one message per other node, holding L(a) blocks, and every
// (source, destination) pair is carried exactly once, uneven nodes included.
// The receiver knows each block's size (its own receive counts), the sender side
// does not: the node's ranks first swap their send counts (a small exchange run
// while building, since the shared-memory plan below depends on them).
//
// Inside the node every rank i writes one byte stream through its slots: for each
// local consumer c != i, first the block i -> c, then i's blocks for the remote
// destinations c aggregates. Segment g carries stream bytes [g*2S, g*2S + 2S) in the
// two halves of i's slot pair (S = segment_bytes()); consumers copy their pieces out
// (into recvbuf, or into the aggregated message buffer) and mark the segment done.
// Every rank of the node computes the same stream layouts, hence the same number
// of segments. In place: every outgoing block is first copied to private scratch.
#include <algorithm>

#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

struct Item {
    int consumer;   // local index that copies it out
    int dst;        // destination rank
    size_t bytes;
    size_t at;      // offset in the producer's stream
};

}  // namespace

Status build_alltoall_hier_agg(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int p = team.size(), me = team.rank();
    const int node = l.my_node(), j = l.my_local(), L = l.my_local_size(), nn = l.nnodes();
    MemDomain &dom = team.domain();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const int data_tag = c.tag(0), counts_tag = c.tag(1);
    const size_t S = team.segment_bytes();
    const size_t P = size_t(p);

    // 1. Every local rank's send counts (row i = local rank i), swapped point to point.
    //    (This exchange still runs while the schedule is built: the layout of the
    //    streams below depends on it.)
    std::vector<size_t> counts(size_t(L) * P);
    std::copy(a.send_counts, a.send_counts + p, counts.begin() + std::ptrdiff_t(size_t(j) * P));
    if (L > 1) {
        Schedule x;
        for (int i = 0; i < L; ++i) {
            if (i == j) continue;
            const int r = l.rank_at(node, i);
            x.send(a.send_counts, P * sizeof(size_t), r, counts_tag);
            x.recv(counts.data() + size_t(i) * P, P * sizeof(size_t), r, counts_tag);
        }
        STRATA_CHECK(x.run(team.wire(), &team, c.numbering()));  // host memory
    }
    auto sc = [&](int local, int dst) { return counts[size_t(local) * P + size_t(dst)]; };

    // 2. Stream layouts of every local producer.
    std::vector<std::vector<Item>> items(static_cast<size_t>(L));
    uint64_t nseg = 0;
    for (int i = 0; i < L && L > 1; ++i) {
        size_t at = 0;
        for (int c = 0; c < L; ++c) {
            if (c == i) continue;
            const int d = l.rank_at(node, c);
            items[size_t(i)].push_back({c, d, sc(i, d), at});
            at += sc(i, d);
            for (int b = 0; b < nn; ++b) {
                if (b == node) continue;
                for (int k = c; k < l.local_size(b); k += L) {
                    const int dk = l.rank_at(b, k);
                    items[size_t(i)].push_back({c, dk, sc(i, dk), at});
                    at += sc(i, dk);
                }
            }
        }
        nseg = std::max<uint64_t>(nseg, div_up(at, 2 * S));
    }

    // 3. Scratch: copied-in input (in place), outgoing aggregates, incoming aggregates.
    std::vector<size_t> out_off(P, 0), in_off(P, SIZE_MAX);  // by destination / source node rank
    size_t copy_in_bytes = 0, out_bytes = 0, in_bytes = 0;
    if (a.in_place)
        for (int r = 0; r < p; ++r) copy_in_bytes += r == me ? 0 : a.send_counts[r];
    std::vector<int> out_dst;  // destinations I aggregate for
    for (int b = 0; b < nn; ++b) {
        if (b == node) continue;
        for (int k = j; k < l.local_size(b); k += L) {
            const int d = l.rank_at(b, k);
            out_dst.push_back(d);
            out_off[size_t(d)] = out_bytes;
            for (int i = 0; i < L; ++i) out_bytes += sc(i, d);
        }
    }
    std::vector<char> direct(size_t(nn), 0);  // receive straight into recvbuf
    for (int b = 0; b < nn; ++b) {
        if (b == node) continue;
        bool contiguous = true;
        for (int i = 0; i + 1 < l.local_size(b); ++i) {
            const int r = l.rank_at(b, i), r1 = l.rank_at(b, i + 1);
            contiguous = contiguous && a.displs[r1] == a.displs[r] + a.counts[r];
        }
        direct[size_t(b)] = contiguous;
        if (!contiguous) {
            in_off[size_t(b)] = in_bytes;
            for (int i = 0; i < l.local_size(b); ++i) in_bytes += a.counts[l.rank_at(b, i)];
        }
    }
    const size_t total = copy_in_bytes + out_bytes + in_bytes;
    char *tmp = total ? c.scratch(total) : nullptr;
    if (total && !tmp) return fail(STRATA_ERR_NOMEM, "alltoall hier_agg scratch");
    char *out_buf = tmp + copy_in_bytes, *in_buf = out_buf + out_bytes;

    // 4. In place: copy every outgoing block in; nothing writes recvbuf before that.
    std::vector<const char *> from(P, nullptr);
    const StepId copied_in = alltoall_copy_in(s, team, a, tmp, from);

    // Where a consumed item lands: recvbuf for a local destination, else the aggregate.
    std::vector<std::vector<StepId>> into_out(P);  // copies into each outgoing aggregate
    auto item_dst = [&](int producer, const Item &it) -> char * {
        if (l.node_of[size_t(it.dst)] == node) return rbuf + a.displs[l.rank_at(node, producer)];
        size_t off = out_off[size_t(it.dst)];
        for (int i = 0; i < producer; ++i) off += sc(i, it.dst);
        return out_buf + off;
    };

    // My own blocks for the destinations I aggregate go straight into the aggregates.
    for (int d : out_dst) {
        if (!sc(j, d)) continue;
        size_t off = out_off[size_t(d)];
        for (int i = 0; i < j; ++i) off += sc(i, d);
        into_out[size_t(d)].push_back(s.copy(dom, out_buf + off, from[size_t(d)], sc(j, d), {copied_in}));
    }

    // 5. The shared-memory streams, segment by segment.
    const uint64_t first = c.take_segments(nseg);
    std::vector<size_t> cursor(static_cast<size_t>(L), 0);
    for (uint64_t k = 0; k < nseg; ++k) {
        const uint64_t g = first + k;
        const size_t lo = size_t(k) * 2 * S, hi = lo + 2 * S;
        const StepId free = c.slots_free(g, {copied_in});
        std::vector<StepId> done;
        for (int i = 0; i < L; ++i) {
            std::vector<Item> &its = items[size_t(i)];
            size_t &c = cursor[size_t(i)];
            while (c < its.size() && its[c].at + its[c].bytes <= lo) ++c;
            StepId ready = kNoStep;
            std::vector<StepId> in;
            for (size_t t = c; t < its.size() && its[t].at < hi; ++t) {
                const Item &it = its[t];
                if (it.bytes == 0 || (i != j && it.consumer != j)) continue;
                if (i != j && ready == kNoStep) ready = s.wait(team.flag(i, kFlagReady), g + 1);
                // The part of the item in this window, split at the half boundary.
                for (int h = 0; h < 2; ++h) {
                    const size_t wlo = lo + size_t(h) * S, whi = wlo + S;
                    const size_t b0 = std::max(wlo, it.at), b1 = std::min(whi, it.at + it.bytes);
                    if (b0 >= b1) continue;
                    char *slot = team.slot(i, g, h) + (b0 - wlo);
                    const size_t in_item = b0 - it.at;
                    if (i == j) {  // producer: copy in
                        in.push_back(s.copy(dom, slot, from[size_t(it.dst)] + in_item, b1 - b0, {free}));
                    } else {       // consumer: copy out
                        const StepId cp = s.copy(dom, item_dst(i, it) + in_item, slot, b1 - b0,
                                                 {ready, copied_in});
                        done.push_back(cp);
                        if (l.node_of[size_t(it.dst)] != node) into_out[size_t(it.dst)].push_back(cp);
                    }
                }
            }
            if (i == j) {
                in.push_back(free);
                const StepId filled = s.signal(team.flag(j, kFlagReady), g + 1, in);
                done.push_back(filled);
            }
        }
        s.signal(team.flag(j, kFlagDone), g + 1, done);
    }

    // 6. Across nodes: one aggregate to each destination I serve, one from each other node.
    for (int d : out_dst) {
        size_t bytes = 0;
        for (int i = 0; i < L; ++i) bytes += sc(i, d);
        s.send(out_buf + out_off[size_t(d)], bytes, d, data_tag, {s.join(into_out[size_t(d)])});
    }
    for (int b = 0; b < nn; ++b) {
        if (b == node) continue;
        const int lb = l.local_size(b), from_rank = l.rank_at(b, j % lb);
        size_t bytes = 0;
        for (int i = 0; i < lb; ++i) bytes += a.counts[l.rank_at(b, i)];
        if (direct[size_t(b)]) {
            if (bytes) s.recv(rbuf + a.displs[l.rank_at(b, 0)], bytes, from_rank, data_tag, {copied_in});
            continue;
        }
        const StepId got = s.recv(in_buf + in_off[size_t(b)], bytes, from_rank, data_tag);
        size_t at = in_off[size_t(b)];
        for (int i = 0; i < lb; ++i) {
            const int r = l.rank_at(b, i);
            if (a.counts[r]) s.copy(dom, rbuf + a.displs[r], in_buf + at, a.counts[r], {got, copied_in});
            at += a.counts[r];
        }
    }
    return STRATA_OK;
}

}  // namespace strata
