// SPDX-License-Identifier: BSD-3-Clause
// src/algo/allgather_hier_ring.cc - hierarchical allgather(v) for large messages.
//
// Rail t (local rank t % L(n) of every node n) carries the blocks of local rank t
// of every node around a ring of the nodes; each block moves in segment-sized
// messages that are forwarded as soon as they arrive, so the ring pipelines.
// Meanwhile every rank publishes its own block and the blocks its rails brought
// to its node peers through shared memory, segment by segment (allgather_share),
// each segment as soon as its bytes have arrived.
//
//   ring step s on a rail, position p:  send block of node p-s, receive block of
//   node p-s-1 (both into / out of recvbuf at the block's final place)
//
//   node 0 --rail0--> node 1 --rail0--> node 2 --rail0--> node 0   (same for rail 1..)
//      |  shm                |  shm               |  shm
//   local peers           local peers          local peers
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

Status build_allgather_hier_ring(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int me = team.rank(), m = l.my_node(), j = l.my_local(), L = l.my_local_size();
    const int N = l.nnodes(), lmax = l.max_local_size();
    const size_t chunk = team.segment_bytes();
    char *rbuf = static_cast<char *>(a.recvbuf);
    const char *sbuf = static_cast<const char *>(a.sendbuf);

    // The block rail t carries for node n (-1: node n has no local rank t).
    auto item = [&](int t, int n) { return t < l.local_size(n) ? l.rank_at(n, t) : -1; };
    auto chunks = [&](int r) -> uint64_t { return r < 0 ? 0 : div_up(a.counts[r], chunk); };
    // Message tags: rail t's messages get a range of their own, so that rails
    // joining the same pair of ranks never share a tag.
    std::vector<uint64_t> rail_base(size_t(lmax) + 1, 0);
    for (int t = 0; t < lmax; ++t) {
        uint64_t n_msgs = 0;
        for (int n = 0; n < N; ++n) n_msgs += chunks(item(t, n));
        rail_base[size_t(t) + 1] = rail_base[size_t(t)] + n_msgs;
    }

    std::vector<std::vector<StepId>> arrived(size_t(team.size()));
    for (int t = j; t < lmax && N > 1; t += L) {
        const std::vector<int> rail = l.rail(t);
        const int next = rail[size_t((m + 1) % N)], prev = rail[size_t((m + N - 1) % N)];
        uint64_t sent = 0, got = 0;  // message numbers on the links to next / from prev
        for (int st = 0; st < N - 1; ++st) {
            const int out = item(t, (m - st + N) % N), in = item(t, (m - st - 1 + 2 * N) % N);
            // Forward: chunk k of the block received in the previous step.
            for (uint64_t k = 0; k < chunks(out); ++k, ++sent) {
                const size_t off = k * chunk, len = std::min(chunk, a.counts[out] - off);
                const char *src = out == me ? sbuf + off : rbuf + a.displs[out] + off;
                const Deps d = out == me ? Deps{} : Deps{arrived[size_t(out)][k]};
                s.send(src, len, next, c.tag(rail_base[size_t(t)] + sent), d);
            }
            for (uint64_t k = 0; k < chunks(in); ++k, ++got) {
                const size_t off = k * chunk, len = std::min(chunk, a.counts[in] - off);
                arrived[size_t(in)].push_back(
                    s.recv(rbuf + a.displs[in] + off, len, prev, c.tag(rail_base[size_t(t)] + got)));
            }
        }
    }
    return allgather_share(c, a, arrived, chunk);
}

}  // namespace strata
