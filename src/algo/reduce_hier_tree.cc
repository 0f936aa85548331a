// SPDX-License-Identifier: BSD-3-Clause
// src/algo/reduce_hier_tree.cc - hierarchical reduce over a binomial tree of nodes (schedule in reduce_hier.cc).
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

Status build_reduce_hier_tree(Call &c, const CollArgs &a) { return build_reduce_hier(c, a, false); }

}  // namespace strata
