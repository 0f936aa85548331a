// src/algo/reduce.cc - the reduce algorithms and the rule that picks one.
#include "algo/algo.h"

namespace strata {

Status build_reduce_hier_tree(Team &team, const CollArgs &a);

namespace {

const Algorithm kReduce[] = {
    {"hier_tree",
     "one agent per node sums its node's input in shared memory, binomial tree on the "
     "root's rail toward the root's node; pipelined by segment",
     build_reduce_hier_tree},
};

int choose_reduce(const Team &, const CollArgs &) { return 0; }

}  // namespace

const AlgorithmTable &reduce_table() {
    static const AlgorithmTable t{kReduce, int(sizeof kReduce / sizeof kReduce[0]), choose_reduce};
    return t;
}

}  // namespace strata
