// SPDX-License-Identifier: BSD-3-Clause
// src/algo/allgather.cc - the allgather(v) algorithms and the rule that picks one.
//
// Allgather is the uniform case of allgatherv: both arrive with per-rank byte
// counts and displacements (CollArgs::counts/displs), so one implementation
// serves both.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

const Algorithm kAllgather[] = {
    {"hier_ring",
     "ring allgather on each rail of the blocks of one local index, forwarded segment by "
     "segment, overlapped with the intra-node distribution through shared memory (large "
     "messages)",
     build_allgather_hier_ring},
    {"hier_direct",
     "every rank sends its block straight to its rail peer on every other node, then the "
     "node shares everything through shared memory (small messages)",
     build_allgather_hier_direct},
};

// The total is the same on every rank (a.count is only this rank's block).
const char *choose_allgather(const Team &team, const CollArgs &a) {
    size_t total = 0;
    for (int r = 0; r < team.size(); ++r) total += a.counts[r];
    return total <= team.config().small_msg_size ? "hier_direct" : "hier_ring";
}

}  // namespace

const AlgorithmTable &allgather_table() {
    static const AlgorithmTable t{kAllgather, int(sizeof kAllgather / sizeof kAllgather[0]),
                                  choose_allgather};
    return t;
}

}  // namespace strata
