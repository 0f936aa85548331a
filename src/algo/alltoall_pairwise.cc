// SPDX-License-Identifier: BSD-3-Clause
// src/algo/alltoall_pairwise.cc - alltoall(v) by direct exchange.
//
// Step i (1 <= i < P) sends to rank + i and receives from rank - i, so that every
// rank talks to a different peer at once; all steps are posted together and the
// transport overlaps them. A message's size is known to its two ends only (sbytes
// here, rbytes there), which is all alltoallv guarantees; every pair exchanges one,
// empty blocks included, so that ends that disagree on a size fail the call (the
// receive checks the bytes it got) instead of leaving a message for a later call.
// Own block: a local copy.
// In place: every outgoing block is first copied to scratch, and receives into
// recvbuf start only once all of those copies are done.
//
// On a device team, plain alltoall (every block the same size, at the same place on
// every rank) not in place: the ranks of a node map each other's send buffers through
// CUDA IPC (Call::map_peers) and each copies its blocks from its node peers
// straight out of theirs, instead of a send and a receive; a rank returns once every
// local peer is done reading its buffer.
#include "algo/algo.h"
#include "algo/builders.h"
#include "algo/node_inputs.h"

namespace strata {

Status build_alltoall_pairwise(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const int p = team.size(), me = team.rank();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const int tag = c.tag(0);  // one message per ordered pair

    std::vector<const char *> from(size_t(p), nullptr);  // where each outgoing block is read
    char *tmp = nullptr;
    if (a.in_place) {
        size_t total = 0;
        for (int r = 0; r < p; ++r) total += r == me ? 0 : a.send_counts[r];
        tmp = total ? c.scratch(total) : nullptr;
        if (total && !tmp) return fail(STRATA_ERR_NOMEM, "alltoall scratch");
    }
    const StepId copied_in = alltoall_copy_in(s, team, a, tmp, from);

    const Layout &l = team.layout();
    const size_t total = a.send_counts[me] * size_t(p);  // uniform: the same on every rank
    // Node peers' blocks read in place (their send buffers mapped), or point to point
    // as every other block.
    NodePeers peers(c, a.sendbuf, total, a.uniform && !a.in_place && team.zero_copy(total));
    auto local = [&](int r) { return l.node_of[size_t(r)] == l.my_node(); };
    auto by_message = [&](int r, auto &&fn) {  // fn() adds the message to or from r
        if (local(r)) {
            peers.otherwise(fn);
        } else {
            fn();
        }
    };
    std::vector<StepId> copies;
    for (int i = 1; i < p; ++i) {
        const int to = (me + i) % p, fr = (me - i + p) % p;
        // Empty blocks are messages too, as in Open MPI's own alltoallv: a peer that
        // passed another count is then caught (a size check), never left unmatched.
        by_message(to, [&] { s.send(from[size_t(to)], a.send_counts[to], to, tag, {copied_in}, true); });
        by_message(fr, [&] { s.recv(rbuf + a.displs[fr], a.counts[fr], fr, tag, {copied_in}, true); });
        // Mapped: fr's block for me is at send_displs[me] in fr's buffer, as in every rank's.
        if (local(fr))
            peers.in_place([&] {
                copies.push_back(
                    peers.copy_from(rbuf + a.displs[fr], l.local_of[size_t(fr)], a.send_displs[me], a.counts[fr]));
            });
    }
    peers.in_place([&] { c.done_together(copies); });
    return STRATA_OK;
}

}  // namespace strata
