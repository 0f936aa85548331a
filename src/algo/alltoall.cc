// src/algo/alltoall.cc - the alltoall(v) algorithms and the rule that picks one.
#include "algo/algo.h"

namespace strata {

Status build_alltoall_pairwise(Team &team, const CollArgs &a);

namespace {

const Algorithm kAlltoall[] = {
    {"pairwise",
     "direct point-to-point exchange with every rank, peers visited in node-shifted "
     "order (in place: input staged through scratch first)",
     build_alltoall_pairwise},
};

int choose_alltoall(const Team &, const CollArgs &) { return 0; }

}  // namespace

const AlgorithmTable &alltoall_table() {
    static const AlgorithmTable t{kAlltoall, int(sizeof kAlltoall / sizeof kAlltoall[0]),
                                  choose_alltoall};
    return t;
}

}  // namespace strata
