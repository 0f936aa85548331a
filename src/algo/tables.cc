// src/algo/tables.cc - the algorithm table of each collective.
#include "algo/algo.h"

namespace strata {

const AlgorithmTable &algorithm_table(strata_coll_t coll) {
    static const AlgorithmTable none{nullptr, 0, nullptr};
    switch (coll) {
        case STRATA_COLL_ALLREDUCE: return allreduce_table();
        default: return none;
    }
}

}  // namespace strata
