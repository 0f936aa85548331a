// SPDX-License-Identifier: BSD-3-Clause
// src/algo/allgather_share.cc - the intra-node phase both allgather algorithms share.
//
// After (or while) the inter-node phase lands remote blocks in this rank's
// receive buffer, each local rank publishes a "stream" to its node peers: its own
// block, then every remote block it received, in a fixed order that every rank
// of the node can compute from the counts alone:
//
//   stream(i) on node m = for rails t = i, i+L, ... < Lmax: for nodes n in order:
//                         the block of rank (n, t) when node n has a local rank t
//
// (rail t is served on node m by local rank t % L, and carries the blocks of
// local rank t of every node, so every block lands on exactly one rank per node.)
// The streams are cut into windows of one slot pair (both slots, 2 x segment bytes);
// per segment: copy my window into my slot pair -> READY -> copy every peer's window
// out of its slot pair into my buffer -> DONE.
//
// On a device team the ranks of a node map each other's buffers through CUDA IPC
// (Call::map_peers) and move the blocks without slots where they can:
//  - a plain allgather (a.uniform: every block at r x the block in every rank's
//    buffer), on any number of nodes, writes: each rank writes every block of its
//    stream into every other local rank's receive buffer with one kernel per block, or
//    per piece of it as the pieces arrive from the network (MemDomain::reduce_multi
//    with one source: a copy to many), reading it once; its own block goes into its
//    own buffer with the same kernel;
//  - an allgatherv on one node, whose displacements are each rank's own, reads: each
//    rank copies every peer's block out of its send buffer, one copy per block.
// Either way a rank returns once every local peer is done with its buffers
// (Call::done_together).
#include <algorithm>

#include "algo/algo.h"
#include "algo/builders.h"
#include "algo/node_inputs.h"

namespace strata {

namespace {

// The ranks whose blocks local rank i of my node publishes, in stream order.
std::vector<int> stream_of(const Layout &l, int i) {
    std::vector<int> out;
    const int L = l.my_local_size(), lmax = l.max_local_size();
    for (int t = i; t < lmax; t += L)
        for (int n = 0; n < l.nnodes(); ++n)
            if (t < l.local_size(n)) out.push_back(l.rank_at(n, t));
    return out;
}

// Through the slots: the streams are cut into windows of one slot pair; per segment,
// my window into my slot pair -> READY -> every peer's window out of its slot pair
// into my buffer -> DONE.
void through_windows(Call &c, const CollArgs &a, const std::vector<std::vector<StepId>> &arrived, size_t chunk) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int L = l.my_local_size(), j = l.my_local();
    const size_t window = 2 * team.segment_bytes();  // both slots of a slot pair are contiguous
    MemDomain &dom = team.domain();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const char *sbuf = static_cast<const char *>(a.sendbuf);  // my own block (also in place)

    std::vector<std::vector<int>> streams(static_cast<size_t>(L));
    uint64_t nseg = 0;
    for (int i = 0; i < L; ++i) {
        streams[i] = stream_of(l, i);
        size_t len = 0;
        for (int r : streams[i]) len += a.counts[r];
        nseg = std::max<uint64_t>(nseg, div_up(len, window));
    }
    const uint64_t first = c.take_segments(nseg);

    // Calls fn(rank, offset in its block, length, offset in the window) for every
    // piece of stream i that falls in window k.
    auto pieces = [&](int i, uint64_t k, auto &&fn) {
        const size_t lo = k * window, hi = lo + window;
        size_t pos = 0;
        for (int r : streams[i]) {
            const size_t b = pos, e = pos + a.counts[r];
            pos = e;
            if (e <= lo || e == b) continue;
            if (b >= hi) break;
            const size_t from = std::max(b, lo), to = std::min(e, hi);
            fn(r, from - b, to - from, from - lo);
        }
    };

    for (uint64_t k = 0; k < nseg; ++k) {
        const uint64_t g = first + k;
        // Publish my window once its blocks have arrived and the slot pair is free.
        const StepId free = c.slots_free(g);
        std::vector<StepId> ins{free};
        char *mine = team.slot(j, g, 0);
        pieces(j, k, [&](int r, size_t off, size_t len, size_t at) {
            Deps d{free};
            const std::vector<StepId> &arr = arrived[size_t(r)];
            if (!arr.empty())
                for (size_t c = off / chunk; c <= (off + len - 1) / chunk && c < arr.size(); ++c)
                    d.add(arr[c]);
            const char *src = r == team.rank() ? sbuf + off : rbuf + a.displs[r] + off;
            ins.push_back(s.copy(dom, mine + at, src, len, d));
        });
        const StepId ready = s.signal(team.flag(j, kFlagReady), g + 1, ins);

        // Take every peer's window.
        std::vector<StepId> outs{ready};
        for (int i = 0; i < L; ++i) {
            if (i == j) continue;
            const StepId w = s.wait(team.flag(i, kFlagReady), g + 1);
            const char *theirs = team.slot(i, g, 0);
            pieces(i, k, [&](int r, size_t off, size_t len, size_t at) {
                outs.push_back(s.copy(dom, rbuf + a.displs[r] + off, theirs + at, len, {w}));
            });
            outs.push_back(w);
        }
        s.signal(team.flag(j, kFlagDone), g + 1, outs);
    }
}

}  // namespace

// arrived[r]: steps after which rank r's block is in recvbuf, one per `chunk`
// bytes of it (empty: already there, or this rank's own block, read from sendbuf).
Status allgather_share(Call &c, const CollArgs &a, const std::vector<std::vector<StepId>> &arrived,
                       size_t chunk) {
    Team &team = c.team();
    const Layout &l = team.layout();
    const int L = l.my_local_size(), j = l.my_local();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const char *sbuf = static_cast<const char *>(a.sendbuf);  // my own block (also in place)
    const size_t mine = a.counts[team.rank()], at = a.displs[team.rank()];
    // My own block into my recvbuf (the fused kernel below writes it with the others).
    auto own = [&] {
        if (!a.in_place) c.schedule().copy(team.domain(), rbuf + at, sbuf, mine);
    };
    if (L == 1) return own(), STRATA_OK;  // nobody to share with; no slot used

    size_t total = 0;
    for (int r = 0; r < team.size(); ++r) total += a.counts[r];
    // In place (above), or through the windows (through_windows). Agreed: the layout,
    // zero_copy() and uniform (the same collective on every rank).
    NodePeers peers(c, sbuf, mine, (l.nnodes() == 1 || a.uniform) && team.zero_copy(total), -1,
                    a.uniform ? rbuf : nullptr);
    peers.in_place([&] {
        std::vector<StepId> outs;
        if (a.uniform) {  // every block of my stream into every buffer it is not in yet
            for (int r : stream_of(l, j)) {
                const bool own_block = r == team.rank();
                const size_t n = a.counts[r], d = a.displs[r];
                const std::vector<StepId> &arr = arrived[size_t(r)];
                // Piece by piece as the network brings them (one piece when already there).
                const size_t piece = own_block || arr.empty() ? n : chunk;
                for (size_t off = 0, p = 0; off < n; off += piece, ++p) {
                    const std::vector<LateSrc> to = c.peer_outs(d + off, own_block && !a.in_place);
                    if (to.empty()) continue;
                    const LateSrc from = own_block ? c.peer(j, off) : LateSrc::fixed(rbuf + d + off);
                    Deps deps{peers.decided()};
                    if (!own_block && p < arr.size()) deps.add(arr[p]);
                    outs.push_back(c.schedule().reduce_multi_late(team.domain(), to, {from}, std::min(piece, n - off),
                                                                  STRATA_BYTE, STRATA_OP_BOR, deps));
                }
            }
        } else {  // every peer's block out of its send buffer
            own();
            for (int i = 0; i < L; ++i) {
                const int r = l.rank_at(0, i);
                if (i != j) outs.push_back(peers.copy_from(rbuf + a.displs[r], i, 0, a.counts[r]));
            }
        }
        c.done_together(outs);
    });
    peers.otherwise([&] {
        own();
        through_windows(c, a, arrived, chunk);
    });
    return STRATA_OK;
}

}  // namespace strata
