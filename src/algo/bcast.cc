// src/algo/bcast.cc - the bcast algorithms and the rule that picks one.
#include "algo/algo.h"

namespace strata {

// No algorithm yet: every call falls back to the previous component.
const AlgorithmTable &bcast_table() {
    static const AlgorithmTable t{nullptr, 0, nullptr};
    return t;
}

}  // namespace strata
