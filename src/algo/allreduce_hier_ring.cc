// SPDX-License-Identifier: BSD-3-Clause
// src/algo/allreduce_hier_ring.cc - hierarchical allreduce for large messages.
//
// Per pipeline segment (slot pair = segment % 2, so segment k+1 fills while k moves):
//
//   node n:  rank0 rank1 rank2        1. copy-in: each rank copies its segment into its slot
//            [in]  [in]  [in]            and raises READY
//              \     |     /          2. reduce-scatter: the owner of slice t sums slice t
//            [s0]  [s1]  [s2]            of every local input into its result slot
//              |     |     |          3. rail: slice t is allreduced (rail_allreduce) among the owners
//           ===rail0=rail1=rail2===      of slice t on every node, then SLICE is raised
//              |     |     |          4. allgather: every rank copies every slice from its
//            [out] [out] [out]           owner's result slot into the user buffer; DONE
//
// Slices are split Lmax ways (Lmax = most ranks on any node); on a node with L
// ranks, slice t belongs to local rank t % L, so uneven nodes line up on rails.
// A rank alone on its node skips the slots and runs the rails on recvbuf.
//
// On a device team the copy-in and copy-out go away where they can: the ranks of a
// node map each other's send and receive buffers through CUDA IPC (node_inputs.h).
// On one node the node phase is then fused (NodeInputs::reduce_into_all): per
// segment, local rank j's one kernel reads slice j of every input and writes the sum
// into every rank's output, 2 x S device bytes per rank instead of (3L+1)/L x S, and
// one launch per segment instead of L + 1. Across nodes (build_spread) the owner of
// slice t reduces it from every local input into its own output's part of the slice
// (one kernel), the rail allreduces it there, and one copy kernel writes it into every
// other local rank's output; then DONE: no SLICE round, no copy-out of L slices per
// rank, and no slot, so up to kSpreadInFlight segments are on the rails at once
// (through the slots, 2: their slot pairs). Return safety, both
// ways: a rank's input is read, and its output written, only by its node peers' steps
// that end before they raise DONE of the segment; every rank ends with a wait for
// every local rank's DONE of the last segment (DONE is raised in segment order), after
// which no peer touches its buffers, so in place is safe too. Where a buffer cannot be
// mapped (host memory), the slots as above.
#include "algo/algo.h"
#include "algo/builders.h"
#include "algo/node_inputs.h"

namespace strata {

namespace {
constexpr size_t kAloneSegmentBytes = size_t(4) << 20;
constexpr uint64_t kFewSegments = 4;
// Segments whose rails may be in flight at once in the spread branch (build_spread),
// which uses no slot: each has its part of the scratch (spread_scratch_bytes).
constexpr size_t kSpreadInFlight = 8;

// The fused branch (one node, every buffer mapped): one kernel per segment, then a
// wait for every local rank's DONE of the last segment (return safety, node_inputs.h).
void build_fused(Call &c, const CollArgs &a, NodeInputs &inputs, const Segments &sg) {
    Schedule &s = c.schedule();
    const Layout &l = c.team().layout();
    const int L = l.my_local_size(), j = l.my_local();
    s.when(inputs.decided(), true);
    StepId done = kNoStep;
    for (uint64_t k = 0; k < sg.n; ++k) {
        const Split sp = split(sg.length(k), size_t(L), size_t(j));
        done = inputs.reduce_into_all(sg.first + k, sg.offset(k) + sp.offset, sp.length, a.op, {inputs.decided()});
    }
    if (done != kNoStep) c.wait_all(kFlagDone, sg.first + sg.n, j, {done});
    s.always();
}

// The rails' scratch of the spread branch: for each of kSpreadInFlight segments, room
// for this rank's slices of the largest one (the first), one after another.
size_t spread_scratch_bytes(const Layout &l, const Segments &sg, size_t es) {
    return kSpreadInFlight * owned_slices_bytes(l, sg, es);
}

// The spread branch (several nodes, every buffer of the node mapped; above). tmp: the
// rails' scratch (spread_scratch_bytes).
void build_spread(Call &c, const CollArgs &a, NodeInputs &inputs, const Segments &sg,
                  const std::vector<std::vector<int>> &rails_of, char *tmp) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int L = l.my_local_size(), j = l.my_local(), lmax = l.max_local_size(), node = l.my_node();
    const size_t es = strata_dtype_size(a.dtype);
    const uint64_t span = rail_tag_span(size_t(l.nnodes()));
    const bool few = sg.n <= kFewSegments;  // as the slot branch decides (the same messages)
    char *rbuf = static_cast<char *>(a.recvbuf);
    s.when(inputs.decided(), true);
    // The rails that last used each part of tmp: segment k's rails start once
    // segment k - depth's are done with it. The depth also keeps the tags of the
    // segments in flight apart: segment k's rails use tags from k x lmax x span on,
    // taken modulo Team::kTagSubs, so at most kTagSubs / (lmax x span) segments may
    // be in flight (one when even one does not fit, as the slots' two would not).
    const size_t per_segment = size_t(lmax) * size_t(span);
    const size_t depth = std::min(kSpreadInFlight, std::max<size_t>(1, size_t(Team::kTagSubs) / per_segment));
    std::vector<StepId> used(depth, kNoStep);
    const size_t part = spread_scratch_bytes(l, sg, es) / kSpreadInFlight;
    for (uint64_t k = 0; k < sg.n; ++k) {
        const uint64_t g = sg.first + k;
        const size_t off = sg.offset(k), cnt = sg.length(k);
        char *tmp_k = tmp + (k % depth) * part;
        std::vector<StepId> outs{inputs.decided()}, rails;
        for (int t = j; t < lmax; t += L) {
            const Split sp = split(cnt, size_t(lmax), size_t(t));
            // My output's part of the slice holds its sum as it builds up: no one else
            // reads or writes it (in place, I alone read that part of my input).
            char *mine = rbuf + (off + sp.offset) * es;
            const StepId red = inputs.reduce_into(mine, off + sp.offset, sp.length, a.op, {inputs.decided()});
            const StepId rail = rail_allreduce(c, rails_of[t], node, mine, tmp_k, sp.length, a.dtype, a.op,
                                               (k * uint64_t(lmax) + uint64_t(t)) * span,
                                               {red, used[k % depth]}, few);
            tmp_k += sp.length * es;
            rails.push_back(rail);
            outs.push_back(s.reduce_multi_late(team.domain(), c.peer_outs((off + sp.offset) * es, false),
                                               {LateSrc::fixed(mine)}, sp.length, a.dtype, a.op,
                                               {rail}));
        }
        used[k % depth] = s.join(rails);
        s.signal(team.flag(j, kFlagDone), g + 1, outs);
    }
    c.wait_all(kFlagDone, sg.first + sg.n, j);
    s.always();
}
}  // namespace

Status build_allreduce_hier_ring(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const size_t es = strata_dtype_size(a.dtype);
    const int L = l.my_local_size(), j = l.my_local(), lmax = l.max_local_size();
    // Every rank alone on its node, in host memory: no slot is used, and the segments
    // only cut the rail's messages. Each message over the PML costs a rendezvous (a
    // CMA read between processes of one host), so fewer, larger ones win there
    // (perf/strata_bench, README "Measured"). On a GPU team the segments also pipeline
    // staging copies with the network: the team's size stays. Agreed: lmax and the
    // team's memory are.
    const bool alone_on_host = lmax == 1 && !team.device();
    // A device team across nodes cuts a call to its size: in halves on two nodes, where
    // the rails swap whole slices for a call of at most kFewSegments, in eighths on more
    // (the cost model's best on 2 and 4 x 8 H100, perf/MODEL.md).
    const size_t seg_bytes = alone_on_host ? std::max(kAloneSegmentBytes, team.segment_bytes())
                                           : device_call_segment(team, a.bytes(), l.nnodes() == 2 ? 2 : 8);
    const Segments sg = take_segments(c, a.count, a.dtype, seg_bytes);
    const bool few = sg.n <= kFewSegments;
    const int node = l.my_node();
    const uint64_t span = rail_tag_span(size_t(l.nnodes()));
    MemDomain &dom = team.domain();
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    char *rbuf = static_cast<char *>(a.recvbuf);

    std::vector<std::vector<int>> rails_of(static_cast<size_t>(lmax));
    for (int t = 0; t < lmax; ++t) rails_of[t] = l.rail(t);
    char *tmp = c.scratch(std::max(size_t(Team::kSlotPairs) * sg.bytes, spread_scratch_bytes(l, sg, es)));
    if (!tmp) return fail(STRATA_ERR_NOMEM, "allreduce scratch");
    const bool in_place = L > 1 && team.zero_copy(a.bytes());
    // Agreed: the layout and zero_copy() are, and so is whether every rank mapped.
    NodeInputs mapped(c, sbuf, a.bytes(), a.dtype, in_place, in_place ? rbuf : nullptr);
    NodeInputs slots(c, sbuf, a.bytes(), a.dtype, false);
    NodeInputs &inputs = in_place ? slots : mapped;
    if (in_place) {
        if (l.nnodes() == 1)
            build_fused(c, a, mapped, sg);
        else
            build_spread(c, a, mapped, sg, rails_of, tmp);
        s.when(mapped.decided(), false);  // the slots below
    }

    for (uint64_t k = 0; k < sg.n; ++k) {
        const uint64_t g = sg.first + k;
        const size_t off = sg.offset(k), cnt = sg.length(k);
        char *res = team.slot(j, g, 1);
        char *tmp_g = tmp + (g % Team::kSlotPairs) * sg.bytes;

        const StepId free = c.slots_free(g);
        if (L == 1) {
            // Alone on the node: no shared slots; the rails work on the result in place.
            const StepId copied = s.copy(dom, rbuf + off * es, sbuf + off * es, cnt * es, {free});
            std::vector<StepId> rails{copied};
            for (int t = 0; t < lmax; ++t) {
                const Split sp = split(cnt, size_t(lmax), size_t(t));
                rails.push_back(rail_allreduce(c, rails_of[t], node,
                                                    rbuf + (off + sp.offset) * es,
                                                    tmp_g + sp.offset * es, sp.length, a.dtype,
                                                    a.op, (k * uint64_t(lmax) + uint64_t(t)) * span,
                                                    {copied}, few));
            }
            s.signal(team.flag(j, kFlagDone), g + 1, rails);
            continue;
        }
        // every input of segment g can be read (and res written)
        const StepId ready = inputs.ready(g, off, cnt, free);

        std::vector<StepId> mine;
        for (int t = j; t < lmax; t += L) {
            const Split sp = split(cnt, size_t(lmax), size_t(t));
            const StepId red = inputs.reduce(res + sp.offset * es, g, off, off + sp.offset, sp.length, a.op, {ready});
            mine.push_back(rail_allreduce(c, rails_of[t], node, res + sp.offset * es,
                                               tmp_g + sp.offset * es, sp.length, a.dtype, a.op,
                                               (k * uint64_t(lmax) + uint64_t(t)) * span, {red}, few));
        }
        gather_slices(c, g, off, cnt, off, off + cnt, rbuf + off * es, es, mine);
    }
    s.always();
    return STRATA_OK;
}

}  // namespace strata
