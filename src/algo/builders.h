/* SPDX-License-Identifier: BSD-3-Clause */
// src/algo/builders.h - the builders each collective's table names, and the phases
// two builders share: declared once here so the compiler checks every definition
// (src/algo/<collective>_<algorithm>.cc) against its use in the tables.
#ifndef STRATA_ALGO_BUILDERS_H
#define STRATA_ALGO_BUILDERS_H

#include <vector>

#include "algo/algo.h"
#include "args.h"
#include "call.h"
#include "engine.h"
#include "team.h"

namespace strata {

Status build_allreduce_hier_ring(Call &c, const CollArgs &a);
Status build_allreduce_hier_rd(Call &c, const CollArgs &a);
// hier_rd's one-node form in the team's host slots (Team::host_call_slot), for a GPU
// team's small call on host buffers on every rank of its node (runner.cc).
Status build_allreduce_node_host(Call &c, const CollArgs &a);
// The same for reduce_scatter's hier_rd: the whole vector so, then this rank's range.
Status build_reduce_scatter_node_host(Call &c, const CollArgs &a);
// bcast's hier_tree, allgather's hier_direct and alltoall's pairwise so: blocks through
// the host slots (algo/node_move.cc).
Status build_bcast_node_host(Call &c, const CollArgs &a);
Status build_allgather_node_host(Call &c, const CollArgs &a);
Status build_alltoall_node_host(Call &c, const CollArgs &a);
// The host form (above) of a collective's algorithm, for a GPU team's small call on
// host buffers on every rank of its one node; nullptr where it has none (runner.cc,
// decides_on_host), or where the algorithm itself branches: on reading node peers'
// buffers in place (zero_copy: Team::zero_copy of the call's bytes).
BuildFn node_host_builder(strata_coll_t coll, BuildFn alg, bool zero_copy);
Status build_allgather_hier_ring(Call &c, const CollArgs &a);
Status build_allgather_hier_direct(Call &c, const CollArgs &a);
Status build_reduce_scatter_hier_direct(Call &c, const CollArgs &a);
Status build_reduce_scatter_hier_rd(Call &c, const CollArgs &a);
Status build_bcast_hier_chain(Call &c, const CollArgs &a);
Status build_bcast_hier_tree(Call &c, const CollArgs &a);
Status build_alltoall_pairwise(Call &c, const CollArgs &a);
Status build_alltoall_hier_agg(Call &c, const CollArgs &a);
Status build_reduce_hier_tree(Call &c, const CollArgs &a);
Status build_reduce_hier_chain(Call &c, const CollArgs &a);
Status build_gather_hier_direct(Call &c, const CollArgs &a);
Status build_scatter_hier_direct(Call &c, const CollArgs &a);

// The intra-node phase of both allgathers (src/algo/allgather_share.cc).
// arrived[r]: steps after which rank r's block is in recvbuf, one per `chunk`
// bytes of it (empty: already there, or this rank's own block, read from sendbuf).
Status allgather_share(Call &c, const CollArgs &a, const std::vector<std::vector<StepId>> &arrived,
                       size_t chunk);

// Both alltoalls' copy in (src/algo/alltoall.cc): in place, every outgoing block
// into tmp first; from[] points at each block to send.
StepId alltoall_copy_in(Schedule &s, Team &team, const CollArgs &a, char *tmp, std::vector<const char *> &from);

// The schedules two builders share, over a chain of nodes or a binomial tree
// (src/algo/bcast_hier.cc, src/algo/reduce_hier.cc).
Status build_bcast_hier(Call &c, const CollArgs &a, bool chain);
Status build_reduce_hier(Call &c, const CollArgs &a, bool chain);

}  // namespace strata

#endif  // STRATA_ALGO_BUILDERS_H
