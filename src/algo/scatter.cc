// SPDX-License-Identifier: BSD-3-Clause
// src/algo/scatter.cc - the scatter algorithms and the rule that picks one.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {

const Algorithm kScatter[] = {
    {"hier_direct",
     "the root sends each node's blocks straight to its leader (the member of the root's "
     "rail), which hands them to its ranks through shared memory; on the root's node of "
     "a device team the ranks read theirs in place through CUDA IPC; pipelined by "
     "segment",
     build_scatter_hier_direct},
};

const char *choose_scatter(const Team &, const CollArgs &) { return "hier_direct"; }

}  // namespace

const AlgorithmTable &scatter_table() {
    static const AlgorithmTable t{kScatter, int(sizeof kScatter / sizeof kScatter[0]), choose_scatter};
    return t;
}

}  // namespace strata
