// SPDX-License-Identifier: BSD-3-Clause
// src/algo/scatter_hier_direct.cc - hierarchical scatter: straight from the root to node leaders.
//
// The reverse of gather_hier_direct: the root has local index jr; on every node n the
// leader is local index jr % L(n) (on the root's node, the root itself). A block is
// cut into windows of one slot pair (both slots, W = 2 x segment bytes):
//
//                root                1. the root sends window k of every block of node
//                  |                    n to n's leader (sub-tag k x L(n) + t for local
//        straight from the root         rank t); the leader receives its own into
//                  |                    recvbuf, the others into a ring of scratch
//              [leader]                 windows (kSlotPairs deep)
//              /   |   \             2. per window of a peer, one pipeline segment: the
//            r0   r1   r2               leader copies it into its slot, READY; the peer
//                                       copies it out into its recvbuf, DONE
//
// Segment k x (L - 1) + i carries window k of the i-th peer of the leader (local order,
// the leader left out). A peer reads only its own segments, so its DONE jumps from one
// of them to the next: "done with every segment before my next one".
//
// On the root's node of a device team above coll_strata_zero_copy_size, the peers read
// their blocks straight out of the root's send buffer instead (Call::map_peers; both
// ways are built and the call's decision picks one); the root then returns once every
// peer has said DONE for the last segment.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

// A peer of the leader: each of its windows out of the leader's slot (or the root's
// buffer, in place) into recvbuf.
void take_windows(Call &c, const CollArgs &a, StepId mapped, int leader, uint64_t first, uint64_t nk,
                  size_t window) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const int j = team.layout().my_local(), L = team.layout().my_local_size();
    const uint64_t i = uint64_t(j < leader ? j : j - 1), end = first + nk * uint64_t(L - 1);
    auto segment = [&](uint64_t k) { return first + k * uint64_t(L - 1) + i; };
    char *rbuf = static_cast<char *>(a.recvbuf);
    StepId done = s.signal(team.flag(j, kFlagDone), segment(0));  // nothing to read before my first
    for (uint64_t k = 0; k < nk; ++k) {
        const uint64_t g = segment(k);
        const size_t off = k * window, len = std::min(window, a.count - off);
        if (mapped != kNoStep) s.when(mapped, false);
        const StepId seen = s.wait(team.flag(leader, kFlagReady), g + 1);
        const StepId slotted = s.copy(team.domain(), rbuf + off, team.slot(leader, g, 0), len, {seen});
        StepId direct = kNoStep;
        if (mapped != kNoStep) {
            s.when(mapped, true);
            direct = s.copy_late(team.domain(), rbuf + off, c.peer(leader, size_t(team.rank()) * a.count + off), len,
                                 {done});
            s.always();
        }
        done = s.signal(team.flag(j, kFlagDone), k + 1 < nk ? segment(k + 1) : end, {slotted, direct});
    }
}

}  // namespace

Status build_scatter_hier_direct(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int m = l.my_node(), j = l.my_local(), L = l.my_local_size();
    const int jr = l.local_of[size_t(a.root)], root_node = l.node_of[size_t(a.root)];
    const int leader = jr % L;
    const bool is_root = team.rank() == a.root;
    const size_t b = a.count, window = 2 * team.segment_bytes();
    const uint64_t nk = div_up(b, window);
    const uint64_t first = c.take_segments(nk * uint64_t(L - 1));
    MemDomain &dom = team.domain();
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    char *rbuf = static_cast<char *>(a.recvbuf);

    const bool try_map = L > 1 && m == root_node && team.zero_copy(b * size_t(team.size()));
    const StepId mapped = try_map ? c.map_peers(sbuf, is_root ? b * size_t(team.size()) : 0, leader) : kNoStep;
    if (j != leader) {
        take_windows(c, a, mapped, leader, first, nk, window);
        return STRATA_OK;
    }

    // The root: every other node's windows to its leader, and its own block.
    if (is_root) {
        for (int n = 0; n < l.nnodes(); ++n) {
            if (n == root_node) continue;
            const int ln = l.local_size(n), to = l.rank_at(n, jr % ln);
            TagOrder order(nk * uint64_t(ln));
            for (uint64_t k = 0; k < nk; ++k) {
                const size_t off = k * window, len = std::min(window, b - off);
                for (int t = 0; t < ln; ++t) {
                    const uint64_t u = k * uint64_t(ln) + uint64_t(t);
                    StepId &last = order.last(u);
                    last = s.send(sbuf + size_t(l.rank_at(n, t)) * b + off, len, to, c.tag(u), {last});
                }
            }
        }
        if (!a.in_place) s.copy(dom, rbuf, sbuf + size_t(a.root) * b, b);
    }

    // A leader on another node: its node's windows from the root.
    const size_t w = std::min(window, b), depth = Team::kSlotPairs;
    char *ring = is_root || L == 1 ? nullptr : c.scratch(depth * size_t(L) * w);
    if (!is_root && L > 1 && ring == nullptr) return fail(STRATA_ERR_NOMEM, "scatter scratch");
    auto in_ring = [&](uint64_t k, int t) { return ring + ((k % depth) * size_t(L) + size_t(t)) * w; };
    std::vector<StepId> got(nk * size_t(L), kNoStep);  // window k of local rank t is here
    std::vector<StepId> read(depth * size_t(L), kNoStep);  // the copy that last read a ring window
    TagOrder order(nk * uint64_t(L));
    auto receive = [&](uint64_t k, int t) {
        if (is_root) return;
        const size_t off = k * window, len = std::min(window, b - off);
        const uint64_t u = k * uint64_t(L) + uint64_t(t);
        StepId &last = order.last(u);
        char *dst = t == j ? rbuf + off : in_ring(k, t);
        last = s.recv(dst, len, a.root, c.tag(u), {last, t == j ? kNoStep : read[(k % depth) * size_t(L) + size_t(t)]});
        got[k * size_t(L) + size_t(t)] = last;
    };

    // Per segment: a peer's window into my slot, READY; I read no one's slot: DONE.
    for (uint64_t k = 0; k < nk; ++k) {
        const size_t off = k * window, len = std::min(window, b - off);
        receive(k, j);
        uint64_t g = first + k * uint64_t(L - 1);
        for (int t = 0; t < L; ++t) {
            if (t == j) continue;
            receive(k, t);
            const char *from = is_root ? sbuf + size_t(l.rank_at(m, t)) * b + off : in_ring(k, t);
            if (try_map) s.when(mapped, false);
            const StepId free = c.slots_free(g);
            const StepId cp = s.copy(dom, team.slot(j, g, 0), from, len, {free, got[k * size_t(L) + size_t(t)]});
            const StepId ready = s.signal(team.flag(j, kFlagReady), g + 1, {cp});
            s.always();
            if (!is_root) read[(k % depth) * size_t(L) + size_t(t)] = cp;
            s.signal(team.flag(j, kFlagDone), g + 1, {ready});
            ++g;
        }
    }
    if (try_map) {  // in place: the root returns once every peer has read its block
        s.when(mapped, true);
        c.wait_all(kFlagDone, first + nk * uint64_t(L - 1), j);
        s.always();
    }
    return STRATA_OK;
}

}  // namespace strata
