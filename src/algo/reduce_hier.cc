// SPDX-License-Identifier: BSD-3-Clause
// src/algo/reduce_hier.cc - hierarchical reduce to any root, over a tree or a chain: the
// schedule both reduce builders share (reduce_hier_tree.cc, reduce_hier_chain.cc).
//
// The root has local index jr; on every node n the agent is local index jr % L(n),
// i.e. the node's member of rail jr (on the root's node, the root itself).
// Per pipeline segment g (slot pair g % 2):
//
//   node n:  r0  r1  r2          1. copy-in: every rank copies its segment into its slot,
//            [in][in][in]           raises READY (non-agents are then done: DONE)
//              \  |  /           2. the agent sums every local input into its result slot
//              [agent]           3. binomial tree on rail jr, rooted at the root's node:
//                 |                 receive children's sums into scratch, fold them in,
//         ===rail jr (tree)===      send the partial sum to the parent
//                 |              4. the root copies the final sum to recvbuf; DONE
//               root
//
// hier_tree: binomial tree of nodes, log2(P) hops (small messages).
// hier_chain: the nodes form a chain ending at the root's node; segments flow
// down it, so each link carries the data once and all links are busy at once
// (large messages).
// Non-root ranks never touch recvbuf (it may be NULL).
#include "algo/algo.h"
#include "algo/builders.h"
#include "algo/node_inputs.h"

namespace strata {

Status build_reduce_hier(Call &c, const CollArgs &a, bool chain) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const size_t es = strata_dtype_size(a.dtype);
    const Segments sg = take_segments(c, a.count, a.dtype);
    const int L = l.my_local_size(), j = l.my_local();
    const int jr = l.local_of[size_t(a.root)], root_node = l.node_of[size_t(a.root)];
    const bool agent = j == jr % L;
    const bool is_root = team.rank() == a.root;
    MemDomain &dom = team.domain();
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    char *rbuf = static_cast<char *>(a.recvbuf);

    // The tree on the rail: v is the position relative to the root's node.
    const std::vector<int> rail = l.rail(jr);
    const int p = int(rail.size());
    const int v = (l.my_node() - root_node + p) % p;
    std::vector<int> children;  // positions (relative) this agent receives from, in order
    int parent = -1;
    if (chain) {
        if (v > 0) parent = v - 1;
        if (v + 1 < p) children.push_back(v + 1);
    } else {
        for (int mask = 1; mask < p; mask <<= 1) {
            if (v & mask) {
                parent = v - mask;
                break;
            }
            if (v + mask < p) children.push_back(v + mask);
        }
    }
    auto member = [&](int rel) { return rail[size_t((rel + root_node) % p)]; };
    const size_t nch = children.size() ? children.size() : 1;
    char *tmp = agent ? c.scratch(size_t(Team::kSlotPairs) * nch * sg.bytes) : nullptr;
    if (agent && !tmp) return fail(STRATA_ERR_NOMEM, "reduce scratch");

    // Alone on its node (L == 1) the agent has no slots to go through: its own input
    // is sendbuf, children's sums fold into recvbuf on the root (scratch elsewhere),
    // and a leaf sends straight from sendbuf. The messages and tags are the same
    // either way, so nodes of several ranks on the same rail cannot tell.
    const size_t depth = std::min<uint64_t>(sg.n, Team::kSlotPairs);  // slots_free: g - kSlotPairs is done
    char *part = L == 1 && !is_root && !children.empty() ? c.scratch2(depth * sg.bytes) : nullptr;
    if (L == 1 && !is_root && !children.empty() && part == nullptr) return fail(STRATA_ERR_NOMEM, "reduce scratch");
    // Through the slots: a rank that only publishes returns before the agent reads.
    NodeInputs inputs(c, sbuf, a.bytes(), a.dtype, false);
    for (uint64_t k = 0; k < sg.n; ++k) {
        const uint64_t g = sg.first + k;
        const size_t off = sg.offset(k), cnt = sg.length(k);

        const StepId free = c.slots_free(g);
        if (!agent) {  // the agent's DONE guards this slot from here on
            s.signal(team.flag(j, kFlagDone), g + 1, {inputs.publish(g, off, cnt, free)});
            continue;
        }
        // The node's sum so far, and where the children's sums fold in.
        char *const out = is_root ? rbuf + off * es : nullptr;
        char *dst = L > 1 ? team.slot(j, g, 1) : is_root ? out : part + (g % depth) * sg.bytes;
        const char *sum = L > 1 ? dst : sbuf + off * es;
        StepId last = L > 1 ? inputs.reduce(dst, g, off, off, cnt, a.op, {inputs.ready(g, off, cnt, free)}) : free;

        // Fold in each child's partial sum (one tag per segment: the pair is unique).
        const int tag = c.tag(k);
        char *parity_tmp = tmp + (g % Team::kSlotPairs) * nch * sg.bytes;
        for (size_t ch = 0; ch < children.size(); ++ch) {
            char *t = parity_tmp + ch * sg.bytes;
            const StepId r = s.recv(t, cnt * es, member(children[ch]), tag, {free});
            last = s.reduce(dom, dst, {sum, t}, cnt, a.dtype, a.op, {last, r});
            sum = dst;
        }
        if (parent >= 0) last = s.send(sum, cnt * es, member(parent), tag, {last});
        if (is_root && sum != out) last = s.copy(dom, out, sum, cnt * es, {last});
        s.signal(team.flag(j, kFlagDone), g + 1, {last});
    }
    return STRATA_OK;
}

}  // namespace strata
