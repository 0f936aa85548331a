// src/algo/alltoall_pairwise.cc - alltoall(v) by direct exchange.
//
// Step i (1 <= i < P) sends to rank + i and receives from rank - i, so that every
// rank talks to a different peer at once; all steps are posted together and the
// transport overlaps them. A message's size is known to its two ends only (sbytes
// here, rbytes there), which is all alltoallv guarantees. Own block: a local copy.
// In place: every outgoing block is first copied to scratch, and receives into
// recvbuf start only once all of those copies are done.
//
// On a device team, plain alltoall (every block the same size, at the same place on
// every rank) not in place: the ranks of a node map each other's send buffers through
// CUDA IPC (call.map_local_buffers) and each copies its blocks from its node peers
// straight out of theirs, instead of a send and a receive; a rank returns once every
// local peer is done reading its buffer.
#include "algo/algo.h"

namespace strata {

StepId alltoall_stage_input(Schedule &s, Team &team, const CollArgs &a, char *tmp,
                            std::vector<const char *> &from);

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
    const StepId staged = alltoall_stage_input(s, team, a, tmp, from);

    const Layout &l = team.layout();
    std::vector<const char *> peers;  // local rank i's send buffer, when mapped
    bool mapped = false;
    const size_t total = a.send_counts[me] * size_t(p);  // uniform: the same on every rank
    if (a.uniform && !a.in_place && team.zero_copy(total))
        STRATA_CHECK(c.map_local_buffers(a.sendbuf, total, &peers, &mapped));
    auto local = [&](int r) { return mapped && l.node_of[size_t(r)] == l.my_node(); };
    std::vector<StepId> copies;
    for (int i = 1; i < p; ++i) {
        const int to = (me + i) % p, fr = (me - i + p) % p;
        if (!local(to)) s.send(from[size_t(to)], a.send_counts[to], to, tag, {staged});
        if (!local(fr)) {
            s.recv(rbuf + a.displs[fr], a.counts[fr], fr, tag, {staged});
        } else {  // uniform: fr's block for me is at send_displs[me] in fr's buffer, as in every rank's
            copies.push_back(s.copy(team.domain(), rbuf + a.displs[fr],
                                    peers[size_t(l.local_of[size_t(fr)])] + a.send_displs[me], a.counts[fr]));
        }
    }
    if (mapped) c.done_together(copies);
    return STRATA_OK;
}

}  // namespace strata
