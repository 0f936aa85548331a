// SPDX-License-Identifier: BSD-3-Clause
// src/algo/reduce_scatter.cc - the reduce_scatter algorithms and the rule that picks one.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

const Algorithm kReduceScatter[] = {
    {"hier_direct",
     "intra-node reduce-scatter in shared memory, direct reduce-scatter of each slice on "
     "its rail (each node receives only its ranks' ranges), intra-node copy-out; "
     "pipelined by segment (large messages)",
     build_reduce_scatter_hier_direct},
    {"hier_rd",
     "allreduce of the whole vector with hier_rd (one shared-memory round, recursive "
     "doubling on the rails), then each rank keeps its range (small messages)",
     build_reduce_scatter_hier_rd},
};

// The total count is the same on every rank, so the choice is too.
const char *choose_reduce_scatter(const Team &team, const CollArgs &a) {
    return a.bytes() <= team.config().small_msg_size ? "hier_rd" : "hier_direct";
}

}  // namespace

const AlgorithmTable &reduce_scatter_table() {
    static const AlgorithmTable t{kReduceScatter,
                                  int(sizeof kReduceScatter / sizeof kReduceScatter[0]),
                                  choose_reduce_scatter};
    return t;
}

}  // namespace strata
