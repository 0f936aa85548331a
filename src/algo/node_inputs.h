/* SPDX-License-Identifier: BSD-3-Clause */
// src/algo/node_inputs.h - a node phase: node peers' buffers in place or not (NodePeers),
// a reduction's inputs (NodeInputs) and its slices.
//
// Every node phase that can read node peers' buffers where they are (a reduction's
// inputs, bcast's node root, allgather's and alltoall's blocks) makes the choice the
// same way, through NodePeers: on a device team above coll_strata_zero_copy_size the
// call maps the peers' buffers (Call::map_peers), and whether every rank of the node
// mapped is decided while the schedule runs (a peer's buffer may not be shareable), so
// both ways are built and the decision picks one (Schedule::when). The other way is
// the slots (below) or, for alltoall, point-to-point messages. Return safety in place:
// a rank must not return while a peer still reads its buffer; each phase ends with a
// wait that says every peer is done with it (done_together, or the owner's wait for
// every peer's DONE), built under in_place().
//
// A hierarchical reduction first combines, on each node, every local rank's part of
// a pipeline segment. There are two ways to reach a node peer's part, and this is the
// one place that chooses between them:
//  - in place: on a device team above coll_strata_zero_copy_size, the call maps node
//    peers' buffers (Call::map_peers) and reads them where they are;
//  - through the slots: each rank copies its segment into its slot (half 0)
//    and raises READY; the others read the slot once they see it.
// Mapping is decided while the schedule runs (a peer's buffer may not be shareable),
// so both ways are built and the call's decision picks one (Schedule::when).
//
// Return safety, argued once: in place, a peer's input is read by the reduction of
// the slice's owner, and every rank waits for the owner's SLICE of a segment before
// it ends that segment; so a rank whose node peers still read its buffer cannot have
// passed its own end of the call (the builder must keep that wait: SLICE before DONE,
// and after the last segment a wait for every local rank's last SLICE where the
// rank's results do not already depend on it).
//
// The fused node phase (reduce_into_all; a call of one node whose outputs are mapped
// too): local rank j reduces slice j of every local input once and stores it into
// every local rank's output, one kernel per segment, then raises DONE of the segment.
// No slot is used and segments touch disjoint elements, so nothing orders one
// segment after another. Return safety: a rank's input is read, and its output
// written, only by its peers' kernels, each of which ends before that peer raises
// DONE of its segment; DONE is raised in segment order, so the builder ends the call
// with a wait for every local rank's DONE of the last segment, after which no peer
// touches this rank's buffers.
#ifndef STRATA_ALGO_NODE_INPUTS_H
#define STRATA_ALGO_NODE_INPUTS_H

#include "algo/algo.h"

namespace strata {

// The choice above, for one call's node phase: the peers' buffers mapped in place, or
// the other way. Steps built inside in_place() run only where every rank of the node
// mapped; inside otherwise(), only where not (every step, when mapping was not tried).
class NodePeers {
public:
    // buf: this rank's buffer of the call, bytes long; try_in_place: whether to map
    // (team.zero_copy() said so, the same on the node); source >= 0: only that local
    // rank's buffer is read; out: this rank's output, mapped for peers that write it.
    NodePeers(Call &c, const void *buf, size_t bytes, bool try_in_place, int source = -1, void *out = nullptr);

    template <class Fn>
    void in_place(Fn &&fn) {
        if (decided_ == kNoStep) return;
        s_.when(decided_, true);
        fn();
        s_.always();
    }
    template <class Fn>
    void otherwise(Fn &&fn) {
        if (decided_ == kNoStep) return fn();
        s_.when(decided_, false);
        fn();
        s_.always();
    }
    // dst <- len bytes of local rank `local`'s mapped buffer from byte off, after deps
    // (inside in_place()).
    StepId copy_from(char *dst, int local, size_t off, size_t len, const Deps &deps = {});
    // Whether peers may be read in place (the decision is made while the call runs).
    bool maybe_in_place() const { return decided_ != kNoStep; }
    // The step that decides it (its outcome: every rank of the node mapped), or kNoStep.
    StepId decided() const { return decided_; }

private:
    Call &c_;
    Schedule &s_;
    StepId decided_ = kNoStep;
};

class NodeInputs {
public:
    // buf: this rank's input of the call (count elements of dtype). try_in_place:
    // whether to map peers (team.zero_copy() said so, the same on the node). out
    // (the same choice on every rank of the node): this rank's output, mapped for
    // reduce_into_all too.
    NodeInputs(Call &c, const void *buf, size_t bytes, strata_dtype_t dtype, bool try_in_place,
               void *out = nullptr);

    // Publishes this rank's elements [off, off + cnt) of segment g for its node
    // peers once `free` (the slot pair of g is free) completes: through the slots, a copy
    // into its slot and READY; in place, nothing (its buffer is read where it is).
    // Returns the step that ends it.
    StepId publish(uint64_t g, size_t off, size_t cnt, StepId free);
    // publish(), then the step after which every local rank's elements of segment g
    // can be read (through the slots: every peer's READY is seen).
    StepId ready(uint64_t g, size_t off, size_t cnt, StepId free);
    // dst <- op over every local rank's elements [lo, lo + n) (lo >= off, the
    // segment's first element), after deps.
    StepId reduce(char *dst, uint64_t g, size_t off, size_t lo, size_t n, strata_op_t op, const Deps &deps);
    // Whether peers may be read in place (the decision is made while the call runs).
    bool maybe_in_place() const { return peers_.maybe_in_place(); }
    // The step that decides it (its outcome: every rank of the node mapped), or kNoStep.
    StepId decided() const { return peers_.decided(); }
    // The fused node phase (above; only where out was mapped, under
    // when(decided(), true)): elements [lo, lo + n) of every local input reduced once
    // into the same elements of every local output, after deps; then DONE of g.
    // Returns the DONE signal.
    StepId reduce_into_all(uint64_t g, size_t lo, size_t n, strata_op_t op, const Deps &deps);
    // The same with one destination, this rank's own memory (a reduce-scatter's part):
    // elements [lo, lo + n) of every local input reduced once into dst, after deps,
    // one launch (under when(decided(), true)). Returns the reduction.
    StepId reduce_into(char *dst, size_t lo, size_t n, strata_op_t op, const Deps &deps);

private:
    // Every local rank's mapped input from element lo, in local rank order.
    std::vector<LateSrc> mapped_inputs(size_t lo) const;

    Call &c_;
    NodePeers peers_;
    const char *buf_;
    strata_dtype_t dtype_;
    size_t es_;
};

// The other end of a node phase: the node's reduced slices of segment g, slice t
// (split(cnt, lmax, t) of the segment's cnt elements from element off) held by local
// rank t % L in half 1 of its slot. Raises this rank's SLICE once `mine` (its own
// slices' work) completes, copies elements [lo, hi) of the call (within the segment)
// from their owners' slots into dst (which holds element lo), each once its owner's
// SLICE is seen, and raises DONE after the copies: the owners' slots stay untouched
// until every local rank's DONE of g says it has read them (Call::slots_free).
// Returns the DONE signal.
StepId gather_slices(Call &c, uint64_t g, size_t off, size_t cnt, size_t lo, size_t hi, char *dst, size_t es,
                     const Deps &mine);

}  // namespace strata

#endif
