// SPDX-License-Identifier: BSD-3-Clause
// src/algo/reduce_scatter_hier_direct.cc - hierarchical reduce-scatter (and _block).
//
// The whole input (sum of counts elements) is cut into pipeline segments; each
// segment into Lmax slices, slice t owned by local rank t % L on every node (so
// uneven nodes line up on rail t). Per segment g (slot pair g % 2):
//
//   1. copy-in: every rank copies its input segment into its slot, raises READY
//   2. intra-node reduce-scatter: the owner of slice t sums slice t of every local
//      input into its result slot
//   3. rail t, direct reduce-scatter: the owner sends each other node's member of
//      rail t the parts of slice t that belong to that node's ranks, receives the
//      other nodes' sums of the parts that belong to its own node's ranks, and folds
//      them in; then raises SLICE
//   4. copy-out: every rank copies the part of its range in this segment from the
//      owners' result slots into recvbuf; DONE
//
// Only the destination node receives each element, so each rail moves (P-1)/P of
// the slice once. Message tags: one per (segment, slice, destination's local index).
// In place, the result lands at the start of recvbuf; it only ever overwrites input
// of segments already copied in.
//
// On a device team, when not in place and every rank of the node mapped its buffers
// through CUDA IPC (node_inputs.h), the slots go away. (In place stays on the slots:
// a rank's results would overwrite input its peers have yet to read.)
//
// Across nodes (build_spread), per segment the owner of slice t sums it from every
// local input into scratch with one kernel, sends the other nodes' parts as in step
// 3, and folds each local rank's part with the other nodes' sums of it straight into
// that rank's recvbuf, one kernel per part: no SLICE round and no copy-out, and up to
// kSpreadInFlight segments at once where the slot pairs allow 2. A node where not
// every rank mapped takes steps 1 to 4 (the same messages).
//
// On one node, steps 1 to 4 are fused: per segment, one kernel
// of each rank reads its own range's part of every local input where it lies and
// writes the reduction straight into its recvbuf (reads S, writes S/L per rank; no
// slot, no copy). A rank then waits for every local peer's DONE, after which no peer
// reads its send buffer (Call::done_together).
#include "algo/algo.h"
#include "algo/builders.h"
#include "algo/node_inputs.h"

namespace strata {

namespace {
struct Range {
    size_t lo, hi;  // elements [lo, hi)
};
Range meet(Range a, Range b) {
    const size_t lo = a.lo > b.lo ? a.lo : b.lo, hi = a.hi < b.hi ? a.hi : b.hi;
    return {lo, hi > lo ? hi : lo};
}

// The tag of segment k's slice t's part for the rank of local index `local` on its
// rail (one per segment, slice and destination), the same in both branches.
int part_tag(const Call &c, uint64_t k, int t, int local) {
    const uint64_t lmax = uint64_t(c.team().layout().max_local_size());
    return c.tag((k * lmax + uint64_t(t)) * lmax + uint64_t(local));
}

// Step 3's sends, in both branches: slice t of segment k (elements sl, its first at
// `at`) to every other node's member of rail t, the parts that belong to that node's
// ranks, once dep is done. The steps go to *steps.
void send_parts(Call &c, const std::vector<Range> &range, const std::vector<int> &rail, uint64_t k, int t,
                Range sl, const char *at, size_t es, StepId dep, std::vector<StepId> *steps) {
    const Layout &l = c.team().layout();
    for (int m = 0; m < l.nnodes(); ++m) {
        if (m == l.my_node()) continue;
        for (int r : l.members[size_t(m)]) {
            const Range p = meet(sl, range[size_t(r)]);
            if (p.hi > p.lo)
                steps->push_back(c.schedule().send(at + (p.lo - sl.lo) * es, (p.hi - p.lo) * es, rail[size_t(m)],
                                                   part_tag(c, k, t, l.local_of[size_t(r)]), {dep}));
        }
    }
}

// The fused branch (one node, every input mapped): per segment, this rank's range of
// it reduced from every local input into recvbuf, one kernel; then every rank's DONE.
void build_fused(Call &c, const CollArgs &a, NodeInputs &inputs, const Segments &sg, Range mine) {
    Schedule &s = c.schedule();
    const size_t es = strata_dtype_size(a.dtype);
    char *rbuf = static_cast<char *>(a.recvbuf);
    s.when(inputs.decided(), true);
    std::vector<StepId> reds;
    for (uint64_t k = 0; k < sg.n; ++k) {
        const Range part = meet({sg.offset(k), sg.offset(k) + sg.length(k)}, mine);
        if (part.hi > part.lo)
            reds.push_back(inputs.reduce_into(rbuf + (part.lo - mine.lo) * es, part.lo, part.hi - part.lo, a.op,
                                              {inputs.decided()}));
    }
    c.done_together(reds);
    s.always();
}

// Segments whose slices may be on the rails at once in the spread branch (which uses
// no slot: each has its part of the scratch).
constexpr size_t kSpreadInFlight = 8;

// The spread branch (several nodes, every input and output of the node mapped): per
// segment and owned slice t, one kernel sums slice t of every local input into the
// rank's scratch; the parts other nodes' ranks own go to them as in steps 3; and for
// each rank r of my node, one kernel folds r's part of my sum with the other nodes'
// sums of it straight into r's recvbuf. No slot, no SLICE round, no copy-out. The
// messages are the slots branch's (a node that did not map takes that one). A rank
// ends once every local rank's DONE says its kernels, which read this rank's input
// and write its output, are done (Call::done_together).
Status build_spread(Call &c, const CollArgs &a, NodeInputs &inputs, const Segments &sg,
                    const std::vector<Range> &range, const std::vector<std::vector<int>> &rails) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const int L = l.my_local_size(), j = l.my_local(), lmax = l.max_local_size();
    const int node = l.my_node(), nnodes = l.nnodes();
    const size_t es = strata_dtype_size(a.dtype);
    // Per segment in flight: my slices' sums, then each node's sums of my node's parts
    // of them, at the same places.
    // Segment k's messages use tags from k x lmax x lmax on, taken modulo
    // Team::kTagSubs: the segments in flight keep theirs apart.
    const size_t depth =
        std::min(kSpreadInFlight, std::max<size_t>(1, size_t(Team::kTagSubs) / (size_t(lmax) * size_t(lmax))));
    const size_t part = owned_slices_bytes(l, sg, es), stride = (1 + size_t(nnodes)) * part;
    char *area = c.scratch2(depth * stride);
    if (area == nullptr && stride > 0) return fail(STRATA_ERR_NOMEM, "reduce_scatter scratch");
    s.when(inputs.decided(), true);
    // What reads a local peer's input or writes its output: a slice whose parts all go
    // to other nodes has a sum but no fold, and the peers must not return before it.
    std::vector<StepId> used(depth, kNoStep), touched;
    for (uint64_t k = 0; k < sg.n; ++k) {
        const size_t off = sg.offset(k), cnt = sg.length(k);
        char *sums = area + (k % depth) * stride;
        const StepId free = s.join({inputs.decided(), used[k % depth]});
        std::vector<StepId> uses;
        size_t pos = 0;  // where slice t lies in sums (and in each node's area)
        for (int t = j; t < lmax; t += L) {
            const Split sp = split(cnt, size_t(lmax), size_t(t));
            const Range sl{off + sp.offset, off + sp.offset + sp.length};
            if (sl.hi == sl.lo) continue;
            char *sum = sums + pos;
            const StepId red = inputs.reduce_into(sum, sl.lo, sl.hi - sl.lo, a.op, {free});
            uses.push_back(red);
            touched.push_back(red);  // it reads every local input
            const std::vector<int> &rail = rails[size_t(t)];
            send_parts(c, range, rail, k, t, sl, sum, es, red, &uses);
            for (int r : l.members[size_t(node)]) {
                const Range p = meet(sl, range[size_t(r)]);
                if (p.hi == p.lo) continue;
                const int tag = part_tag(c, k, t, l.local_of[size_t(r)]);
                const size_t o = (p.lo - sl.lo) * es;
                std::vector<LateSrc> parts{LateSrc::fixed(sum + o)};
                Deps got{red};
                for (int m = 0; m < nnodes; ++m) {
                    if (m == node) continue;
                    char *t_m = sums + (1 + size_t(m)) * part + pos + o;
                    got.add(s.recv(t_m, (p.hi - p.lo) * es, rail[size_t(m)], tag, {free}));
                    parts.push_back(LateSrc::fixed(t_m));
                }
                const LateSrc to = c.peer_out(l.local_of[size_t(r)], (p.lo - range[size_t(r)].lo) * es);
                touched.push_back(s.reduce_multi_late(team.domain(), {to}, parts, p.hi - p.lo, a.dtype, a.op, got));
                uses.push_back(touched.back());
            }
            pos += (sl.hi - sl.lo) * es;
        }
        used[k % depth] = s.join(uses);
    }
    c.done_together(touched);
    s.always();
    return STRATA_OK;
}
}  // namespace

Status build_reduce_scatter_hier_direct(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const size_t es = strata_dtype_size(a.dtype);
    // A device team across nodes: segments of an eighth of the call (perf/MODEL.md).
    const Segments sg = take_segments(c, a.count, a.dtype, device_call_segment(team, a.count * es, 8));
    const int L = l.my_local_size(), j = l.my_local(), lmax = l.max_local_size();
    const int node = l.my_node(), nnodes = l.nnodes();
    MemDomain &dom = team.domain();
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    char *rbuf = static_cast<char *>(a.recvbuf);

    // Every rank's range of the reduced vector.
    std::vector<Range> range(size_t(team.size()));
    size_t at = 0;
    for (int r = 0; r < team.size(); ++r) {
        range[size_t(r)] = {at, at + a.counts[r]};
        at += a.counts[r];
    }
    const Range mine = range[size_t(team.rank())];
    std::vector<std::vector<int>> rails(static_cast<size_t>(lmax));
    for (int t = 0; t < lmax; ++t) rails[size_t(t)] = l.rail(t);

    // Receive space: per slot pair, one segment-sized area per node (indexed like the slot).
    char *tmp = c.scratch(size_t(Team::kSlotPairs) * size_t(nnodes) * sg.bytes);
    if (!tmp) return fail(STRATA_ERR_NOMEM, "reduce_scatter scratch");
    if (lmax == 1 && !a.in_place) {  // agreed (the layout is); a local choice would do too
        // Every rank alone on its node: no slot. The parts other ranks own go straight
        // from sendbuf, and this rank's part is summed from sendbuf and what arrived
        // straight into recvbuf: the same messages as below, without the copy-in, the
        // node sum of one input and the copy-out (4 x the vector of memory traffic).
        for (uint64_t k = 0; k < sg.n; ++k) {
            const uint64_t g = sg.first + k;
            const size_t off = sg.offset(k), cnt = sg.length(k);
            const Range seg{off, off + cnt};
            char *parity_tmp = tmp + (g % Team::kSlotPairs) * size_t(nnodes) * sg.bytes;
            const StepId free = c.slots_free(g);
            std::vector<StepId> done{free};
            for (int m = 0; m < nnodes; ++m) {
                if (m == node) continue;
                const int r = l.members[size_t(m)][0];
                const Range part = meet(seg, range[size_t(r)]);
                if (part.hi > part.lo)
                    done.push_back(s.send(sbuf + part.lo * es, (part.hi - part.lo) * es, rails[0][size_t(m)],
                                          c.tag(k), {free}));
            }
            const Range part = meet(seg, mine);
            if (part.hi > part.lo) {
                std::vector<const void *> parts{sbuf + part.lo * es};
                Deps got{free};
                for (int m = 0; m < nnodes; ++m) {
                    if (m == node) continue;
                    char *t_m = parity_tmp + size_t(m) * sg.bytes;
                    got.add(s.recv(t_m, (part.hi - part.lo) * es, rails[0][size_t(m)], c.tag(k), {free}));
                    parts.push_back(t_m);
                }
                done.push_back(s.reduce(dom, rbuf + (part.lo - mine.lo) * es, parts, part.hi - part.lo, a.dtype,
                                        a.op, got));
            }
            s.signal(team.flag(j, kFlagDone), g + 1, done);
        }
        return STRATA_OK;
    }
    // Agreed: the layout, in place (MPI: every rank or none) and zero_copy() are, and
    // so is whether every rank of the node mapped.
    const bool try_mapped = L > 1 && !a.in_place && team.zero_copy(a.bytes());
    // Across nodes the outputs are mapped too (the spread branch writes them).
    NodeInputs mapped(c, sbuf, a.bytes(), a.dtype, try_mapped, nnodes > 1 ? rbuf : nullptr);
    NodeInputs inputs(c, sbuf, a.bytes(), a.dtype, false);  // the slots' (below)
    if (try_mapped) {
        if (nnodes == 1)
            build_fused(c, a, mapped, sg, mine);
        else
            STRATA_CHECK(build_spread(c, a, mapped, sg, range, rails));
        s.when(mapped.decided(), false);  // the slots below
    }

    for (uint64_t k = 0; k < sg.n; ++k) {
        const uint64_t g = sg.first + k;
        const size_t off = sg.offset(k), cnt = sg.length(k);
        const Range seg{off, off + cnt};
        char *res = team.slot(j, g, 1);
        char *parity_tmp = tmp + (g % Team::kSlotPairs) * size_t(nnodes) * sg.bytes;
        auto slice = [&](int t) {
            const Split sp = split(cnt, size_t(lmax), size_t(t));
            return Range{off + sp.offset, off + sp.offset + sp.length};
        };

        const StepId free = c.slots_free(g);
        const StepId ready = inputs.ready(g, off, cnt, free);  // inputs readable, res writable

        std::vector<StepId> mine_done;
        for (int t = j; t < lmax; t += L) {
            const Range sl = slice(t);
            if (sl.hi == sl.lo) continue;
            const std::vector<int> &rail = rails[size_t(t)];
            // 2. node sum of the slice.
            const StepId red = inputs.reduce(res + (sl.lo - off) * es, g, off, sl.lo, sl.hi - sl.lo, a.op, {ready});
            mine_done.push_back(red);
            // 3. send every other node its ranks' parts of the slice.
            send_parts(c, range, rail, k, t, sl, res + (sl.lo - off) * es, es, red, &mine_done);
            // ... and fold in the other nodes' sums of my node's parts.
            for (int r : l.members[size_t(node)]) {
                const Range part = meet(sl, range[size_t(r)]);
                if (part.hi == part.lo || nnodes == 1) continue;
                const int tag = part_tag(c, k, t, l.local_of[size_t(r)]);
                const size_t o = (part.lo - off) * es;
                std::vector<const void *> parts{res + o};
                Deps got{red};
                for (int m = 0; m < nnodes; ++m) {
                    if (m == node) continue;
                    char *t_m = parity_tmp + size_t(m) * sg.bytes + o;
                    got.add(s.recv(t_m, (part.hi - part.lo) * es, rail[size_t(m)], tag,
                                   {free}));
                    parts.push_back(t_m);
                }
                mine_done.push_back(
                    s.reduce(dom, res + o, parts, part.hi - part.lo, a.dtype, a.op, got));
            }
        }
        // 4. copy-out of my range in this segment, slice by slice from its owner.
        const Range want = meet(seg, mine);
        gather_slices(c, g, off, cnt, want.lo, std::max(want.lo, want.hi), rbuf + (want.lo - mine.lo) * es, es,
                      mine_done);
    }
    s.always();
    return STRATA_OK;
}

}  // namespace strata
