// SPDX-License-Identifier: BSD-3-Clause
// src/algo/allreduce.cc - the allreduce algorithms and the rule that picks one.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

const Algorithm kAllreduce[] = {
    {"hier_ring",
     "intra-node reduce-scatter, ring allreduce of each slice on its rail, intra-node "
     "allgather; pipelined by segment (large messages)",
     build_allreduce_hier_ring},
    {"hier_rd",
     "each rank reduces its whole node's data, recursive doubling on the rail (small "
     "messages)",
     build_allreduce_hier_rd},
};

const char *choose_allreduce(const Team &team, const CollArgs &a) {
    return a.bytes() <= team.config().small_msg_size ? "hier_rd" : "hier_ring";
}

}  // namespace

const AlgorithmTable &allreduce_table() {
    static const AlgorithmTable t{kAllreduce, int(sizeof kAllreduce / sizeof kAllreduce[0]),
                                  choose_allreduce};
    return t;
}

}  // namespace strata
