// src/algo/alltoall.cc - the alltoall(v) algorithms and the rule that picks one.
#include "algo/algo.h"

namespace strata {

Status build_alltoall_pairwise(Team &team, const CollArgs &a);
Status build_alltoall_hier_agg(Team &team, const CollArgs &a);

namespace {

const Algorithm kAlltoall[] = {
    {"pairwise",
     "direct point-to-point exchange with every rank, peers visited in node-shifted "
     "order (in place: input staged through scratch first)",
     build_alltoall_pairwise},
    {"hier_agg",
     "hierarchical: shared-memory exchange inside a node; across nodes, one message per "
     "(source node, destination rank) on the destination's rail, gathered through shared "
     "memory (node ranks first swap their send counts)",
     build_alltoall_hier_agg},
};

// Measured on one host (shared memory as the "network"), hier_agg's extra copy
// through the slots and its count swap cost more than the messages it saves
// (0.2-0.65x of pairwise's speed), so pairwise stays the default until hier_agg is
// measured across real nodes; coll_strata_alltoall_algorithm=hier_agg forces it.
int choose_alltoall(const Team &, const CollArgs &) { return 0; }

}  // namespace

const AlgorithmTable &alltoall_table() {
    static const AlgorithmTable t{kAlltoall, int(sizeof kAlltoall / sizeof kAlltoall[0]),
                                  choose_alltoall};
    return t;
}

}  // namespace strata
