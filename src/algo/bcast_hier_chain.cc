// SPDX-License-Identifier: BSD-3-Clause
// src/algo/bcast_hier_chain.cc - hierarchical bcast over a chain of nodes (schedule in bcast_hier.cc).
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

Status build_bcast_hier_chain(Call &c, const CollArgs &a) { return build_bcast_hier(c, a, true); }

}  // namespace strata
