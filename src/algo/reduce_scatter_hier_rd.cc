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

Status build_reduce_scatter_hier_rd(Call &c, const CollArgs &a) {
    Team &team = c.team();
    const size_t es = strata_dtype_size(a.dtype);
    char *whole = c.scratch2(a.count * es);
    if (!whole) return fail(STRATA_ERR_NOMEM, "reduce_scatter staging buffer");
    CollArgs all = a;
    all.recvbuf = whole;
    all.in_place = false;
    STRATA_CHECK(build_allreduce_hier_rd(c, all));

    // The rank's range starts after every lower rank's count.
    size_t offset = 0;
    for (int r = 0; r < team.rank(); ++r) offset += a.counts[r];
    Schedule &s = c.schedule();
    std::vector<StepId> everything(s.size());
    for (size_t i = 0; i < everything.size(); ++i) everything[i] = StepId(i);
    s.copy(team.domain(), a.recvbuf, whole + offset * es, a.counts[team.rank()] * es,
           everything);
    return STRATA_OK;
}

// The host form (build_allreduce_node_host, in host scratch), then this rank's range,
// after every step of the branch.
Status build_reduce_scatter_node_host(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const size_t es = strata_dtype_size(a.dtype);
    char *whole = c.host_scratch(a.count * es);
    if (!whole) return fail(STRATA_ERR_NOMEM, "reduce_scatter host staging buffer");
    CollArgs all = a;
    all.recvbuf = whole;
    all.in_place = false;
    const size_t first = s.size();
    STRATA_CHECK(build_allreduce_node_host(c, all));
    size_t offset = 0;
    for (int r = 0; r < team.rank(); ++r) offset += a.counts[r];
    std::vector<StepId> branch;
    for (size_t i = first; i < s.size(); ++i) branch.push_back(StepId(i));
    s.copy(host_domain(), a.recvbuf, whole + offset * es, a.counts[team.rank()] * es, branch);
    return STRATA_OK;
}

BuildFn node_host_builder(strata_coll_t coll, BuildFn alg) {
    if (coll == STRATA_COLL_ALLREDUCE && alg == build_allreduce_hier_rd) return build_allreduce_node_host;
    if (coll == STRATA_COLL_REDUCE_SCATTER && alg == build_reduce_scatter_hier_rd) return build_reduce_scatter_node_host;
    return nullptr;
}

}  // namespace strata
