// SPDX-License-Identifier: BSD-3-Clause
// src/algo/reduce_scatter_hier_rd.cc - reduce_scatter for small messages.
//
// Composition: the whole vector is allreduced with hier_rd (one shared-memory
// round, recursive doubling on the rails) into a private buffer, then each rank
// keeps its own range. It moves P times more data than needed, which is cheaper
// than the extra synchronisations of a true reduce-scatter while messages are small.
#include "algo/algo.h"
#include "algo/builders.h"

namespace strata {

namespace {
// The whole vector allreduced by `allreduce` into whole (memory of dom), then this
// rank's range copied out after every step that built (the rank's range starts after
// every lower rank's count).
Status keep_my_range(Call &c, const CollArgs &a, char *whole, MemDomain &dom, BuildFn allreduce) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const size_t es = strata_dtype_size(a.dtype);
    CollArgs all = a;
    all.recvbuf = whole;
    all.in_place = false;
    const size_t first = s.size();
    STRATA_CHECK(allreduce(c, all));
    size_t offset = 0;
    for (int r = 0; r < team.rank(); ++r) offset += a.counts[r];
    std::vector<StepId> built;
    for (size_t i = first; i < s.size(); ++i) built.push_back(StepId(i));
    s.copy(dom, a.recvbuf, whole + offset * es, a.counts[team.rank()] * es, built);
    return STRATA_OK;
}
}  // namespace

Status build_reduce_scatter_hier_rd(Call &c, const CollArgs &a) {
    char *whole = c.scratch2(a.count * strata_dtype_size(a.dtype));
    if (!whole) return fail(STRATA_ERR_NOMEM, "reduce_scatter staging buffer");
    return keep_my_range(c, a, whole, c.team().domain(), build_allreduce_hier_rd);
}

// The host form: build_allreduce_node_host into host scratch, then this rank's range.
Status build_reduce_scatter_node_host(Call &c, const CollArgs &a) {
    char *whole = c.host_scratch(a.count * strata_dtype_size(a.dtype));
    if (!whole) return fail(STRATA_ERR_NOMEM, "reduce_scatter host staging buffer");
    return keep_my_range(c, a, whole, host_domain(), build_allreduce_node_host);
}

}  // namespace strata
