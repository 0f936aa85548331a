/* SPDX-License-Identifier: BSD-3-Clause */
// src/algo/algo.h - what every algorithm shares: arguments, tables, rail phases.
//
// An algorithm builds its schedule into call.schedule() and never waits: the caller
// runs it. Segment numbers, flag values and tags are relative to the call (call.h).
// Contract for algorithms that use the shared-memory slots: take segment numbers
// with call.take_segments(), guard each segment's slot pair with call.slots_free(),
// and end every segment by signalling kFlagDone = segment + 1 on this rank.
#ifndef STRATA_ALGO_ALGO_H
#define STRATA_ALGO_ALGO_H

#include <algorithm>
#include <vector>

#include "args.h"
#include "call.h"
#include "engine.h"
#include "team.h"

namespace strata {


// The pipeline segments of one call over count elements: numbers first .. first+n-1,
// taken from the call (so the same on every rank of a node), of elems elements each
// but the last.
struct Segments {
    size_t count, elems, bytes;
    uint64_t n, first;
    size_t offset(uint64_t k) const { return k * elems; }  // elements
    size_t length(uint64_t k) const { return count - offset(k) < elems ? count - offset(k) : elems; }
};
// segment_bytes: the segment's size when it is not the team's (an algorithm that uses
// no shared-memory slot); it must be agreed by every rank that exchanges segments.
inline Segments take_segments(Call &call, size_t count, strata_dtype_t dtype, size_t segment_bytes = 0) {
    const size_t es = strata_dtype_size(dtype);
    const size_t elems = segment_bytes == 0 ? call.team().segment_elems(es) : std::max<size_t>(segment_bytes / es, 1);
    const uint64_t n = div_up(count, elems);
    return {count, elems, elems * es, n, call.take_segments(n)};
}

// The segment of a call of `bytes` on a device team across nodes: 1/parts of the call,
// at least 2 MiB, at most the team's segment (perf/MODEL.md, "segment per call"); 0
// (the team's segment) on other teams. Agreed: the call's size and the team are.
inline size_t device_call_segment(const Team &team, size_t bytes, size_t parts) {
    if (!team.device() || team.layout().nnodes() < 2) return 0;
    return std::min(team.segment_bytes(), std::max(size_t(2) << 20, bytes / parts));
}

// Bytes of this rank's slices of the largest segment (the first), one after another,
// where segments are cut into lmax slices and slice t is owned by local rank t % L
// (the spread branches' scratch per segment in flight).
inline size_t owned_slices_bytes(const Layout &l, const Segments &sg, size_t es) {
    size_t mine = 0;
    for (int t = l.my_local(); t < l.max_local_size(); t += l.my_local_size())
        mine += split(sg.n > 0 ? sg.length(0) : 0, size_t(l.max_local_size()), size_t(t)).length * es;
    return mine;
}

using BuildFn = Status (*)(Call &call, const CollArgs &args);

struct Algorithm {
    const char *name;
    const char *description;
    BuildFn build;
    // Its builder exchanges with peers (it waits): never chosen for a call that must
    // not wait (nonblocking, persistent).
    bool exchanges_at_build = false;
};

struct AlgorithmTable {
    const Algorithm *algorithms;
    int count;
    // Built-in rule: the name of the algorithm for these arguments. Must depend only
    // on what matches on every rank (arguments, layout, settings).
    const char *(*choose)(const Team &team, const CollArgs &args);
    // The position of the algorithm called name; -1 when there is none.
    int find(const char *name) const;
};

const AlgorithmTable &algorithm_table(strata_coll_t coll);
const AlgorithmTable &allreduce_table();
const AlgorithmTable &allgather_table();       // allgather and allgatherv
const AlgorithmTable &reduce_scatter_table();  // reduce_scatter and _block
const AlgorithmTable &bcast_table();
const AlgorithmTable &alltoall_table();        // alltoall and alltoallv
const AlgorithmTable &reduce_table();
const AlgorithmTable &gather_table();
const AlgorithmTable &scatter_table();

// Messages 0, 1, ... between one pair of ranks, message u on sub-tag u % kTagSubs:
// a step posts when its dependencies complete, in any order, so message u waits for
// message u - kTagSubs (same sub-tag, matched in posting order) to complete first.
// last(u) is that message's step; store message u's step there.
class TagOrder {
public:
    explicit TagOrder(uint64_t messages)
        : last_(size_t(std::min<uint64_t>(Team::kTagSubs, std::max<uint64_t>(messages, 1))), kNoStep) {}
    StepId &last(uint64_t u) { return last_[size_t(u % last_.size())]; }

private:
    std::vector<StepId> last_;
};

// Inter-node phases on a rail: members are the ranks of the rail in node order,
// pos is this rank's position in it. Each returns the step that completes the
// phase; buf holds count elements, tmp scratch for at least count elements.
// Message tags are call.tag(tag_sub + i) for i < rail_tag_span(members.size()).
uint64_t rail_tag_span(size_t members);
StepId rail_allreduce_ring(Call &call, const std::vector<int> &members, int pos,
                           char *buf, char *tmp, size_t count, strata_dtype_t dtype, strata_op_t op,
                           uint64_t tag_sub, const Deps &deps);
StepId rail_allreduce_rd(Call &call, const std::vector<int> &members, int pos,
                         char *buf, char *tmp, size_t count, strata_dtype_t dtype, strata_op_t op,
                         uint64_t tag_sub, const Deps &deps);
// The large-message rail allreduce: with two members on a device team, for a call of
// few segments (few, agreed by the caller), one exchange of the whole buffer (pair);
// else direct from 3 members where tmp holds its blocks, else the ring (rail.cc); the
// same choice on every member.
StepId rail_allreduce(Call &call, const std::vector<int> &members, int pos,
                      char *buf, char *tmp, size_t count, strata_dtype_t dtype, strata_op_t op,
                      uint64_t tag_sub, const Deps &deps, bool few = false);

}  // namespace strata

#endif
