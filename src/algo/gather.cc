// SPDX-License-Identifier: BSD-3-Clause
// src/algo/gather.cc - the gather algorithms and the rule that picks one.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

const Algorithm kGather[] = {
    {"hier_direct",
     "each node gathers its ranks' blocks at its leader (the member of the root's rail) "
     "through shared memory, or reads them in place through CUDA IPC on a device team; "
     "the leaders send them straight to the root; pipelined by segment",
     build_gather_hier_direct},
};

const char *choose_gather(const Team &, const CollArgs &) { return "hier_direct"; }

}  // namespace

const AlgorithmTable &gather_table() {
    static const AlgorithmTable t{kGather, int(sizeof kGather / sizeof kGather[0]), choose_gather};
    return t;
}

}  // namespace strata
