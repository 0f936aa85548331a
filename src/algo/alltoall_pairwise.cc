// src/algo/alltoall_pairwise.cc - alltoall(v) by direct exchange.
//
// Step i (1 <= i < P) sends to rank + i and receives from rank - i, so that every
// rank talks to a different peer at once; all steps are posted together and the
// transport overlaps them. A message's size is known to its two ends only (sbytes
// here, rbytes there), which is all alltoallv guarantees. Own block: a local copy.
// In place: every outgoing block is first copied to scratch, and receives into
// recvbuf start only once all of those copies are done.
#include "algo/algo.h"

namespace strata {

StepId alltoall_stage_input(Schedule &s, Team &team, const CollArgs &a, char *tmp,
                            std::vector<const char *> &from);

Status build_alltoall_pairwise(Team &team, const CollArgs &a) {
    Schedule &s = team.schedule();
    const int p = team.size(), me = team.rank();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const int tag = team.tag(0);  // one message per ordered pair

    std::vector<const char *> from(size_t(p), nullptr);  // where each outgoing block is read
    char *tmp = nullptr;
    if (a.in_place) {
        size_t total = 0;
        for (int r = 0; r < p; ++r) total += r == me ? 0 : a.send_counts[r];
        tmp = total ? team.scratch(total) : nullptr;
        if (total && !tmp) return fail(STRATA_ERR_NOMEM, "alltoall scratch");
    }
    const StepId staged = alltoall_stage_input(s, team, a, tmp, from);
    for (int i = 1; i < p; ++i) {
        const int to = (me + i) % p, fr = (me - i + p) % p;
        s.send(from[size_t(to)], a.send_counts[to], to, tag, {staged});
        s.recv(rbuf + a.displs[fr], a.counts[fr], fr, tag, {staged});
    }
    return STRATA_OK;
}

}  // namespace strata
