// SPDX-License-Identifier: BSD-3-Clause
// src/algo/reduce_hier_chain.cc - hierarchical reduce over a chain of nodes ending at the root's node (schedule in reduce_hier.cc).
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

Status build_reduce_hier_chain(Call &c, const CollArgs &a) { return build_reduce_hier(c, a, true); }

}  // namespace strata
