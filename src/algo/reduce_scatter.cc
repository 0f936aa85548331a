// src/algo/reduce_scatter.cc - the reduce_scatter algorithms and the rule that picks one.
#include "algo/algo.h"

namespace strata {

Status build_reduce_scatter_hier_direct(Team &team, const CollArgs &a);

namespace {

const Algorithm kReduceScatter[] = {
    {"hier_direct",
     "intra-node reduce-scatter in shared memory, direct reduce-scatter of each slice on "
     "its rail (each node receives only its ranks' ranges), intra-node copy-out; "
     "pipelined by segment",
     build_reduce_scatter_hier_direct},
};

int choose_reduce_scatter(const Team &, const CollArgs &) { return 0; }

}  // namespace

const AlgorithmTable &reduce_scatter_table() {
    static const AlgorithmTable t{kReduceScatter,
                                  int(sizeof kReduceScatter / sizeof kReduceScatter[0]),
                                  choose_reduce_scatter};
    return t;
}

}  // namespace strata
