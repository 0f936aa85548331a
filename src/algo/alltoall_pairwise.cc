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

Status build_alltoall_pairwise(Team &team, const CollArgs &a) {
    Schedule &s = team.schedule();
    const int p = team.size(), me = team.rank();
    MemDomain &dom = team.domain_for(a.recvbuf);
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    char *rbuf = static_cast<char *>(a.recvbuf);
    const int tag = team.tag(0);  // one message per ordered pair

    StepId staged = kNoStep;
    std::vector<const char *> from(size_t(p), nullptr);  // where each outgoing block is read
    for (int r = 0; r < p; ++r) from[size_t(r)] = sbuf + a.send_displs[r];
    if (a.in_place) {
        size_t total = 0;
        for (int r = 0; r < p; ++r) total += r == me ? 0 : a.send_counts[r];
        char *tmp = total ? team.scratch(total) : nullptr;
        if (total && !tmp) return fail(STRATA_ERR_NOMEM, "alltoall scratch");
        std::vector<StepId> copies;
        size_t at = 0;
        for (int r = 0; r < p; ++r) {
            if (r == me || a.send_counts[r] == 0) continue;
            copies.push_back(s.copy(dom, tmp + at, from[size_t(r)], a.send_counts[r]));
            from[size_t(r)] = tmp + at;
            at += a.send_counts[r];
        }
        staged = s.join(copies);
    } else {
        s.copy(dom, rbuf + a.displs[me], from[size_t(me)], a.counts[me]);
    }
    for (int i = 1; i < p; ++i) {
        const int to = (me + i) % p, fr = (me - i + p) % p;
        s.send(from[size_t(to)], a.send_counts[to], to, tag, {staged});
        s.recv(rbuf + a.displs[fr], a.counts[fr], fr, tag, {staged});
    }
    return STRATA_OK;
}

}  // namespace strata
