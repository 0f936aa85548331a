// SPDX-License-Identifier: BSD-3-Clause
// src/algo/node_move.cc - bcast, allgather and alltoall through a GPU team's host
// slots, for a small call on host buffers on every rank of its one node (runner.cc,
// decides_on_host), and the table of host forms (node_host_builder).
//
// One shape serves the three: every rank puts its outgoing blocks (one for bcast's
// root and for allgather, one per node peer for alltoall) into its host slot, a
// piece of each per segment, raises READY, waits for every peer's READY, and copies
// the pieces meant for it out of its peers' slots; then DONE. The slot of a segment
// (Team::host_call_bytes) is split evenly between the blocks, so the number of
// segments follows from the longest block, which every rank knows.
#include <algorithm>
#include <functional>

#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

// blocks: pieces per slot; out(b): this rank's outgoing block b (nullptr: none);
// length(r, b): bytes of local rank r's block b, the same on every rank; take(r): the
// block of local rank r this rank copies to into(r) (-1: none).
struct NodeMove {
    int blocks = 1;
    std::function<const char *(int b)> out;
    std::function<size_t(int r, int b)> length;
    std::function<int(int r)> take;
    std::function<char *(int r)> into;
};

Status move_through_host_slots(Call &c, const NodeMove &m) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    if (l.nnodes() != 1) return fail(STRATA_ERR_INTERNAL, "the host slots serve one node");
    const int L = l.my_local_size(), j = l.my_local();
    const size_t piece = team.host_call_bytes() / size_t(m.blocks);
    if (piece == 0) return fail(STRATA_ERR_INTERNAL, "more blocks than bytes in a host slot");
    size_t longest = 0;
    for (int r = 0; r < L; ++r)
        for (int b = 0; b < m.blocks; ++b) longest = std::max(longest, m.length(r, b));
    const uint64_t nseg = div_up(longest, piece), first = c.take_segments(nseg);
    MemDomain &dom = host_domain();
    // A piece of a block at offset `at`: how many of its bytes fall there.
    const auto part = [piece](size_t len, size_t at) { return at < len ? std::min(piece, len - at) : size_t(0); };
    for (uint64_t k = 0; k < nseg; ++k) {
        const uint64_t g = first + k;
        const size_t at = k * piece;
        const StepId free = c.slots_free(g);
        std::vector<StepId> in;
        for (int b = 0; b < m.blocks; ++b) {
            const char *src = m.out(b);
            const size_t n = part(m.length(j, b), at);
            if (src != nullptr && n > 0)
                in.push_back(s.copy(dom, team.host_call_slot(j, g) + size_t(b) * piece, src + at, n, {free}));
        }
        if (in.empty()) in.push_back(free);
        const StepId ready = c.wait_all(kFlagReady, g + 1, j, {s.signal(team.flag(j, kFlagReady), g + 1, in)});
        std::vector<StepId> outs;
        for (int r = 0; r < L; ++r) {
            const int b = m.take(r);
            const size_t n = b < 0 ? 0 : part(m.length(r, b), at);
            if (n > 0)
                outs.push_back(s.copy(dom, m.into(r) + at, team.host_call_slot(r, g) + size_t(b) * piece, n, {ready}));
        }
        if (outs.empty()) outs.push_back(ready);
        s.signal(team.flag(j, kFlagDone), g + 1, outs);
    }
    return STRATA_OK;
}

// The team's rank of local rank r (one node).
int rank_of(const Team &team, int r) { return team.layout().rank_at(team.layout().my_node(), r); }

}  // namespace

// The root's buffer goes into its slot; every other rank copies it out.
Status build_bcast_node_host(Call &c, const CollArgs &a) {
    const Team &team = c.team();
    const int root = team.layout().local_of[size_t(a.root)], j = team.layout().my_local();
    char *buf = static_cast<char *>(a.recvbuf);
    NodeMove m;
    m.out = [&](int) { return j == root ? buf : nullptr; };
    m.length = [&](int r, int) { return r == root ? a.count : size_t(0); };
    m.take = [&](int r) { return r == root && j != root ? 0 : -1; };
    m.into = [&](int) { return buf; };
    return move_through_host_slots(c, m);
}

// Every rank's block goes into its slot and out to every peer's recvbuf at that
// rank's displacement (its own too, unless in place, where it is there already).
Status build_allgather_node_host(Call &c, const CollArgs &a) {
    const Team &team = c.team();
    const int j = team.layout().my_local();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const char *mine = static_cast<const char *>(a.sendbuf);  // also in place (allgather_share)
    NodeMove m;
    m.out = [&](int) { return mine; };
    m.length = [&](int r, int) { return a.counts[rank_of(team, r)]; };
    m.take = [&](int r) { return r == j && a.in_place ? -1 : 0; };
    m.into = [&](int r) { return rbuf + a.displs[rank_of(team, r)]; };
    return move_through_host_slots(c, m);
}

// Block d of every rank (for local rank d) goes into its slot, at d's piece; each rank
// takes its own piece of every peer's slot. In place, a rank's own block stays where
// it is, and its outgoing blocks are read before its incoming ones land (the copies
// in wait for nothing but the slot; the copies out for every READY: the same offsets,
// per segment).
Status build_alltoall_node_host(Call &c, const CollArgs &a) {
    const Team &team = c.team();
    const int L = team.layout().my_local_size(), j = team.layout().my_local();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const char *sbuf = a.in_place ? rbuf : static_cast<const char *>(a.sendbuf);
    const size_t block = a.counts[0];  // uniform (decides_on_host: call_bytes > 0)
    NodeMove m;
    m.blocks = L;
    m.out = [&](int d) { return sbuf + a.send_displs[rank_of(team, d)]; };
    m.length = [&](int, int) { return block; };
    m.take = [&](int r) { return r == j && a.in_place ? -1 : j; };
    m.into = [&](int r) { return rbuf + a.displs[rank_of(team, r)]; };
    return move_through_host_slots(c, m);
}

BuildFn node_host_builder(strata_coll_t coll, BuildFn alg, bool zero_copy) {
    if (coll == STRATA_COLL_ALLREDUCE && alg == build_allreduce_hier_rd) return build_allreduce_node_host;
    if (coll == STRATA_COLL_REDUCE_SCATTER && alg == build_reduce_scatter_hier_rd) return build_reduce_scatter_node_host;
    if (zero_copy) return nullptr;  // the three below branch on reading peers' buffers in place
    if (coll == STRATA_COLL_BCAST && alg == build_bcast_hier_tree) return build_bcast_node_host;
    if (coll == STRATA_COLL_ALLGATHER && alg == build_allgather_hier_direct) return build_allgather_node_host;
    if (coll == STRATA_COLL_ALLTOALL && alg == build_alltoall_pairwise) return build_alltoall_node_host;
    return nullptr;
}

}  // namespace strata
