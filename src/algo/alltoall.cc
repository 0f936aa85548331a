// SPDX-License-Identifier: BSD-3-Clause
// src/algo/alltoall.cc - the alltoall(v) algorithms and the rule that picks one.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

// In place (the "copy in"): copies every outgoing block (all but this rank's own) into tmp, back
// to back, and points from[] at the copies; otherwise copies the own block into
// place. Returns the step the sends must follow (kNoStep when nothing is copied in).
StepId alltoall_copy_in(Schedule &s, Team &team, const CollArgs &a, char *tmp,
                        std::vector<const char *> &from) {
    const int p = team.size(), me = team.rank();
    MemDomain &dom = team.domain();
    for (int r = 0; r < p; ++r) from[size_t(r)] = static_cast<const char *>(a.sendbuf) + a.send_displs[r];
    if (!a.in_place) {
        s.copy(dom, static_cast<char *>(a.recvbuf) + a.displs[me], from[size_t(me)], a.counts[me]);
        return kNoStep;
    }
    std::vector<StepId> copies;
    size_t at = 0;
    for (int r = 0; r < p; ++r) {
        if (r == me || a.send_counts[r] == 0) continue;
        copies.push_back(s.copy(dom, tmp + at, from[size_t(r)], a.send_counts[r]));
        from[size_t(r)] = tmp + at;
        at += a.send_counts[r];
    }
    return s.join(copies);
}

namespace {

const Algorithm kAlltoall[] = {
    {"pairwise",
     "direct point-to-point exchange with every rank, peers visited in node-shifted "
     "order (in place: input copied into scratch first)",
     build_alltoall_pairwise},
    {"hier_agg",
     "hierarchical: shared-memory exchange inside a node; across nodes, one message per "
     "(source node, destination rank) on the destination's rail, gathered through shared "
     "memory (node ranks first swap their send counts)",
     build_alltoall_hier_agg, true},
};

// Measured on one host (shared memory as the "network"), hier_agg's extra copy
// through the slots and its count swap cost more than the messages it saves
// (0.2-0.65x of pairwise's speed), so pairwise stays the default until hier_agg is
// measured across real nodes; coll_strata_alltoall_algorithm=hier_agg forces it.
const char *choose_alltoall(const Team &, const CollArgs &) { return "pairwise"; }

}  // namespace

const AlgorithmTable &alltoall_table() {
    static const AlgorithmTable t{kAlltoall, int(sizeof kAlltoall / sizeof kAlltoall[0]),
                                  choose_alltoall};
    return t;
}

}  // namespace strata
