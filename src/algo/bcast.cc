// SPDX-License-Identifier: BSD-3-Clause
// src/algo/bcast.cc - the bcast algorithms and the rule that picks one.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

const Algorithm kBcast[] = {
    {"hier_chain",
     "root's node through shared memory, a pipelined chain of the nodes on the root's rail, "
     "then each node through shared memory; all phases overlap by segment (large messages)",
     build_bcast_hier_chain},
    {"hier_tree",
     "as hier_chain, but the nodes form a binomial tree on the root's rail (small messages, "
     "many nodes)",
     build_bcast_hier_tree},
};

const char *choose_bcast(const Team &team, const CollArgs &a) {
    return a.count <= team.config().small_msg_size ? "hier_tree" : "hier_chain";
}

}  // namespace

const AlgorithmTable &bcast_table() {
    static const AlgorithmTable t{kBcast, int(sizeof kBcast / sizeof kBcast[0]), choose_bcast};
    return t;
}

}  // namespace strata
