// SPDX-License-Identifier: BSD-3-Clause
// src/algo/allgather_hier_direct.cc - hierarchical allgather(v) for small messages.
//
// One network round: rank (n, j) sends its block straight to (m, j % L(m)) on
// every other node m, its peer on rail j; every block thus reaches exactly one
// rank per node, which shares it through shared memory (allgather_share).
//
//   node n: (n,0) (n,1) (n,2)          1. send own block to the rail-j peer of every
//             |  \   |     |              other node; receive the blocks whose rail
//   node m: (m,0) (m,1)                   I serve into recvbuf
//             [shm slots]              2. own block -> recvbuf (unless in place), and
//                                         publish own + received blocks per segment
//                                         (allgather_share)
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

Status build_allgather_hier_direct(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int me = team.rank(), m = l.my_node(), j = l.my_local(), L = l.my_local_size();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const int tag = c.tag(0);  // one message per (sender, receiver) pair

    std::vector<std::vector<StepId>> arrived(size_t(team.size()));
    for (int n = 0; n < l.nnodes(); ++n) {
        if (n == m) continue;
        s.send(a.sendbuf, a.counts[me], l.rank_at(n, j % l.local_size(n)), tag);
        for (int t = j; t < l.local_size(n); t += L) {
            const int r = l.rank_at(n, t);
            arrived[size_t(r)].push_back(s.recv(rbuf + a.displs[r], a.counts[r], r, tag));
        }
    }
    size_t chunk = 1;
    for (int r = 0; r < team.size(); ++r) chunk = a.counts[r] > chunk ? a.counts[r] : chunk;
    return allgather_share(c, a, arrived, chunk);
}

}  // namespace strata
