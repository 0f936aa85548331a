// src/algo/reduce.cc - the reduce algorithms and the rule that picks one.
#include "algo/algo.h"

namespace strata {

// No algorithm yet: every call falls back to the previous component.
const AlgorithmTable &reduce_table() {
    static const AlgorithmTable t{nullptr, 0, nullptr};
    return t;
}

}  // namespace strata
