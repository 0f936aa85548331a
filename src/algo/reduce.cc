// SPDX-License-Identifier: BSD-3-Clause
// src/algo/reduce.cc - the reduce algorithms and the rule that picks one.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

const Algorithm kReduce[] = {
    {"hier_tree",
     "one agent per node sums its node's input in shared memory, binomial tree on the "
     "root's rail toward the root's node; pipelined by segment (small messages)",
     build_reduce_hier_tree},
    {"hier_chain",
     "as hier_tree, but the node agents form a pipelined chain ending at the root's node, "
     "so every link carries the data once and all links work at once (large messages)",
     build_reduce_hier_chain},
};

const char *choose_reduce(const Team &team, const CollArgs &a) {
    return a.bytes() <= team.config().small_msg_size ? "hier_tree" : "hier_chain";
}

}  // namespace

const AlgorithmTable &reduce_table() {
    static const AlgorithmTable t{kReduce, int(sizeof kReduce / sizeof kReduce[0]), choose_reduce};
    return t;
}

}  // namespace strata
