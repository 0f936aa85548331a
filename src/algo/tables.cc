// SPDX-License-Identifier: BSD-3-Clause
// src/algo/tables.cc - the algorithm table of each collective.
#include "algo/algo.h"

#include <cstring>

namespace strata {

int AlgorithmTable::find(const char *name) const {
    for (int i = 0; i < count && name != nullptr; ++i)
        if (strcmp(algorithms[i].name, name) == 0) return i;
    return -1;
}

const AlgorithmTable &algorithm_table(strata_coll_t coll) {
    static const AlgorithmTable none{nullptr, 0, nullptr};
    switch (coll) {
        case STRATA_COLL_ALLREDUCE: return allreduce_table();
        case STRATA_COLL_ALLGATHER: return allgather_table();
        case STRATA_COLL_REDUCE_SCATTER: return reduce_scatter_table();
        case STRATA_COLL_BCAST: return bcast_table();
        case STRATA_COLL_ALLTOALL: return alltoall_table();
        case STRATA_COLL_REDUCE: return reduce_table();
        case STRATA_COLL_GATHER: return gather_table();
        case STRATA_COLL_SCATTER: return scatter_table();
        default: return none;
    }
}

}  // namespace strata
