// SPDX-License-Identifier: BSD-3-Clause
// src/algo/gather_hier_direct.cc - hierarchical gather: node leaders, then straight to the root.
//
// The root has local index jr; on every node n the leader is local index jr % L(n),
// the node's member of rail jr (on the root's node, the root itself). A block is cut
// into windows of one slot pair (both slots, W = 2 x segment bytes); window k of every
// block is pipeline segment k:
//
//   node n:  r0   r1   r2        1. every other rank copies window k of its block into
//            [k]  [k]  [k]          its own slot, READY (it reads nothing: DONE)
//              \   |   /         2. the leader copies each peer's window out of its
//              [leader]             slot, into recvbuf on the root, else into scratch,
//                  |                then DONE
//        straight to the root    3. a leader on another node sends each window of its
//                  |                node (its own from sendbuf) to the root, which
//                root               receives it in place in recvbuf
//
// On a device team above coll_strata_zero_copy_size the leader reads its peers' send
// buffers in place instead of their slots (Call::map_peers; both ways are built and
// the call's decision picks one); a peer then returns once the leader has said DONE
// for the last window.
//
// Messages: window k of local rank t of a node has sub-tag k x L + t, from the node's
// leader to the root (TagOrder: sub-tags wrap).
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

// Everyone but the leader: window k into the slot, or (in place) nothing.
void publish_windows(Call &c, const CollArgs &a, StepId mapped, int leader, uint64_t first, uint64_t nk,
                     size_t window) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const int j = team.layout().my_local();
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    for (uint64_t k = 0; k < nk; ++k) {
        const uint64_t g = first + k;
        const size_t off = k * window, len = std::min(window, a.count - off);
        if (mapped != kNoStep) s.when(mapped, false);
        const StepId free = c.slots_free(g);
        const StepId cp = s.copy(team.domain(), team.slot(j, g, 0), sbuf + off, len, {free});
        const StepId ready = s.signal(team.flag(j, kFlagReady), g + 1, {cp});
        s.always();
        s.signal(team.flag(j, kFlagDone), g + 1, {ready});
    }
    if (mapped != kNoStep) {  // the leader reads my buffer until its last DONE
        s.when(mapped, true);
        s.wait(team.flag(leader, kFlagDone), first + nk);
        s.always();
    }
}

}  // namespace

Status build_gather_hier_direct(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int m = l.my_node(), j = l.my_local(), L = l.my_local_size();
    const int jr = l.local_of[size_t(a.root)], root_node = l.node_of[size_t(a.root)];
    const int leader = jr % L;
    const bool is_root = team.rank() == a.root;
    const size_t b = a.count, window = 2 * team.segment_bytes();
    const uint64_t nk = div_up(b, window);
    const uint64_t first = c.take_segments(nk);
    MemDomain &dom = team.domain();
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    char *rbuf = static_cast<char *>(a.recvbuf);
    auto sub = [](uint64_t k, int t, int local_size) { return k * uint64_t(local_size) + uint64_t(t); };

    const bool try_map = L > 1 && team.zero_copy(b * size_t(team.size()));
    const StepId mapped = try_map ? c.map_peers(sbuf, b) : kNoStep;
    if (j != leader) {
        publish_windows(c, a, mapped, leader, first, nk, window);
        return STRATA_OK;
    }

    // The leader: its node's windows, into recvbuf (the root) or a ring of scratch
    // windows (kSlotPairs deep) that the sends empty.
    const size_t w = std::min(window, b), depth = Team::kSlotPairs;
    char *ring = is_root || L == 1 ? nullptr : c.scratch(depth * size_t(L) * w);
    if (!is_root && L > 1 && ring == nullptr) return fail(STRATA_ERR_NOMEM, "gather scratch");
    std::vector<StepId> sent(depth * size_t(L), kNoStep);   // the send that last read a ring window
    TagOrder to_root(nk * uint64_t(L));
    for (uint64_t k = 0; k < nk; ++k) {
        const uint64_t g = first + k;
        const size_t off = k * window, len = std::min(window, b - off);
        std::vector<StepId> reads;
        for (int t = 0; t < L; ++t) {
            const int r = l.rank_at(m, t);
            StepId have = kNoStep;  // window k of rank r is in `from`
            const char *from = sbuf + off;
            if (t != j) {
                StepId &reuse = sent[(k % depth) * size_t(L) + size_t(t)];
                char *dst = is_root ? rbuf + size_t(r) * b + off : ring + ((k % depth) * size_t(L) + size_t(t)) * w;
                if (try_map) s.when(mapped, false);
                const StepId seen = s.wait(team.flag(t, kFlagReady), g + 1);
                const StepId slotted = s.copy(dom, dst, team.slot(t, g, 0), len, {seen, reuse});
                StepId direct = kNoStep;
                if (try_map) {
                    s.when(mapped, true);
                    direct = s.copy_late(dom, dst, c.peer(t, off), len, {reuse});
                    s.always();
                }
                have = s.join({slotted, direct});
                reads.push_back(have);
                from = dst;
            } else if (is_root && !a.in_place) {
                s.copy(dom, rbuf + size_t(r) * b + off, sbuf + off, len);
            }
            if (is_root) continue;
            const uint64_t u = sub(k, t, L);
            StepId &same_tag = to_root.last(u);
            same_tag = s.send(from, len, a.root, c.tag(u), {have, same_tag});
            if (t != j) sent[(k % depth) * size_t(L) + size_t(t)] = same_tag;
        }
        s.signal(team.flag(j, kFlagDone), g + 1, reads);
    }
    if (!is_root) return STRATA_OK;

    // The root: every other node's windows, from its leader, in place.
    for (int n = 0; n < l.nnodes(); ++n) {
        if (n == root_node) continue;
        const int ln = l.local_size(n), from = l.rank_at(n, jr % ln);
        TagOrder from_leader(nk * uint64_t(ln));
        for (uint64_t k = 0; k < nk; ++k) {
            const size_t off = k * window, len = std::min(window, b - off);
            for (int t = 0; t < ln; ++t) {
                const uint64_t u = sub(k, t, ln);
                StepId &same_tag = from_leader.last(u);
                same_tag = s.recv(rbuf + size_t(l.rank_at(n, t)) * b + off, len, from, c.tag(u), {same_tag});
            }
        }
    }
    return STRATA_OK;
}

}  // namespace strata
