// SPDX-License-Identifier: BSD-3-Clause
// src/algo/bcast_hier.cc - hierarchical bcast: chain or binomial tree of nodes, the schedule
// both bcast builders share (bcast_hier_chain.cc, bcast_hier_tree.cc).
//
// On every node one rank is the node root: the root itself on its node, elsewhere
// local rank root_local % L(n), i.e. the root's rail. Per segment (one slot pair,
// both slots, 2 x segment bytes):
//
//   node roots:  receive the segment from the parent node (not on the root's node)
//                -> send it on to the child nodes
//                -> copy it into my slot pair -> READY
//   local peers: wait for the node root's READY -> copy the segment out
//   everyone:    DONE
//
// Nodes are numbered from the root's node (v = (n - root_node) mod N); the chain
// links v -> v + 1, the binomial tree v -> v + 2^k for 2^k below v's lowest set
// bit. Segments pipeline: segment k+1 crosses the network while k is copied out.
//
// On a device team the slots go away where every rank of the node maps (Call::map_peers):
//  - across nodes the node root pushes: the local peers' buffers are mapped as outputs,
//    and as each segment arrives the root writes it into all of them with one kernel
//    (MemDomain::reduce_multi with one source: a copy to many). It raises READY once,
//    after its last kernel; a peer waits for that one flag and returns.
//  - on one node the root holds the whole message from the start: each peer copies
//    the whole buffer out of the root's (mapped) in one copy after one READY, and the
//    root returns once every peer has said DONE.
#include "algo/algo.h"
#include "algo/builders.h"
#include "algo/node_inputs.h"

namespace strata {

Status build_bcast_hier(Call &c, const CollArgs &a, bool chain) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int N = l.nnodes(), m = l.my_node(), j = l.my_local(), L = l.my_local_size();
    const int root_node = l.node_of[a.root], nr = l.local_of[a.root] % L;
    // Across nodes a device team's window is at most kDeviceWindowMax: the cost model's
    // best at every size on 2 x 8 H100 (perf/MODEL.md), whatever the segment.
    constexpr size_t kDeviceWindowMax = size_t(4) << 20;
    const size_t window = team.device() && N > 1 ? std::min(2 * team.segment_bytes(), kDeviceWindowMax)
                                                 : 2 * team.segment_bytes();
    const uint64_t nseg = div_up(a.count, window);
    const uint64_t first = c.take_segments(nseg);
    MemDomain &dom = team.domain();
    char *buf = static_cast<char *>(a.recvbuf);
    // One node: peers read the node root's buffer in place (only it is mapped). Across
    // nodes: the root writes into its peers' buffers (every output mapped).
    NodePeers peers(c, buf, a.count, L > 1 && team.zero_copy(a.count), nr, N > 1 ? buf : nullptr);
    // One node, mapped: one copy per peer (below). The per-segment schedule then runs
    // only where not every peer mapped, through the slots (`unmapped` builds only those).
    NodePeers unmapped(c, buf, a.count, false);
    const bool whole = N == 1 && nseg > 0 && peers.maybe_in_place();  // agreed: the layout and zero_copy() are
    NodePeers &way = whole ? unmapped : peers;
    if (whole) {
        const uint64_t end = first + nseg;
        s.when(peers.decided(), true);
        if (j == nr) {
            s.signal(team.flag(j, kFlagDone), end, {s.signal(team.flag(j, kFlagReady), end)});
            c.wait_all(kFlagDone, end, j);
        } else {
            const StepId w = s.wait(team.flag(nr, kFlagReady), end);
            s.signal(team.flag(j, kFlagDone), end, {peers.copy_from(buf, nr, 0, a.count, {w})});
        }
        s.when(peers.decided(), false);
    }

    // Parent and children among the node roots (ranks on the root's rail).
    const std::vector<int> rail = l.rail(l.local_of[a.root]);
    auto rank_of = [&](int v) { return rail[size_t((v + root_node) % N)]; };
    const int v = (m - root_node + N) % N;
    int parent = -1;
    std::vector<int> children;
    if (chain) {
        if (v > 0) parent = rank_of(v - 1);
        if (v + 1 < N) children.push_back(rank_of(v + 1));
    } else {
        if (v > 0) parent = rank_of(v & (v - 1));
        int top = 1;
        while (top < N) top <<= 1;
        // Largest subtree first: it has the longest way to go.
        for (int mask = top >> 1; mask >= 1; mask >>= 1)
            if ((v & (2 * mask - 1)) == 0 && v + mask < N) children.push_back(rank_of(v + mask));
    }

    // The node root's pushes (across nodes, in place): every local peer's buffer but mine.
    std::vector<StepId> pushed;
    for (uint64_t k = 0; k < nseg; ++k) {
        const uint64_t g = first + k;
        const size_t off = k * window, len = std::min(window, a.count - off);
        const int tag = c.tag(k);
        if (j == nr) {
            const StepId got = parent < 0 ? kNoStep : s.recv(buf + off, len, parent, tag);
            for (int child : children) s.send(buf + off, len, child, tag, {got});
            if (L == 1) {
                s.signal(team.flag(j, kFlagDone), g + 1, {got});
                continue;
            }
            // I write the data into my peers' buffers as it lands, or they read it from my slot.
            way.in_place([&] {
                pushed.push_back(s.reduce_multi_late(dom, c.peer_outs(off, false), {LateSrc::fixed(buf + off)}, len,
                                                     STRATA_BYTE, STRATA_OP_BOR, {got, way.decided()}));
            });
            way.otherwise([&] {
                const StepId free = c.slots_free(g);
                const StepId cp = s.copy(dom, team.slot(j, g, 0), buf + off, len, {free, got});
                s.signal(team.flag(j, kFlagDone), g + 1, {s.signal(team.flag(j, kFlagReady), g + 1, {cp})});
            });
        } else {
            way.otherwise([&] {
                const StepId w = s.wait(team.flag(nr, kFlagReady), g + 1);
                s.signal(team.flag(j, kFlagDone), g + 1, {s.copy(dom, buf + off, team.slot(nr, g, 0), len, {w})});
            });
        }
    }
    // In place, one READY and DONE once every push is done (segments may land out of
    // order); a peer returns when it sees that READY, and the root needs no word back
    // (it only read its own buffer).
    const uint64_t end = first + nseg;
    way.in_place([&] {
        if (j == nr) s.signal(team.flag(j, kFlagDone), end, {s.signal(team.flag(j, kFlagReady), end, pushed)});
        else if (nseg > 0) s.signal(team.flag(j, kFlagDone), end, {s.wait(team.flag(nr, kFlagReady), end)});
    });
    if (whole) s.always();  // the one branch left open (above); a decision around the whole call stays (runner.cc)
    return STRATA_OK;
}

}  // namespace strata
