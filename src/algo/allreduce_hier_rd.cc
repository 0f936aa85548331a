// SPDX-License-Identifier: BSD-3-Clause
// src/algo/allreduce_hier_rd.cc - hierarchical allreduce for small messages.
//
// Fewest synchronisations: every rank sums its whole node's input itself (one
// shared-memory round instead of reduce-scatter + allgather), then the ranks of
// each rail combine node sums by recursive doubling. Rail j has, on every node n,
// local rank j % L(n); a rank on a node with fewer ranks than the largest also
// serves the rails of the missing local indices, on a private copy.
//
//   copy-in -> READY -> reduce all local inputs into recvbuf -> rail RD -> DONE
#include "algo/algo.h"
#include "algo/builders.h"
#include "algo/node_inputs.h"

namespace strata {

Status build_allreduce_hier_rd(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    const size_t es = strata_dtype_size(a.dtype);
    const Segments sg = take_segments(c, a.count, a.dtype);
    const int L = l.my_local_size(), j = l.my_local(), lmax = l.max_local_size();
    const int node = l.my_node();
    const uint64_t span = rail_tag_span(size_t(l.nnodes()));
    MemDomain &dom = team.domain();
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    char *rbuf = static_cast<char *>(a.recvbuf);

    // Rails this rank serves: j, j + L, ... < lmax. Each needs a tmp; the extra
    // ones also a private copy of the node sum.
    const int nrails = (lmax - 1 - j) / L + 1;
    // Every rank reads every node peer's whole input, so through the slots only: in
    // place, a rank could return while a peer still reads its buffer.
    NodeInputs inputs(c, sbuf, a.bytes(), a.dtype, false);
    char *scratch = c.scratch(size_t(Team::kSlotPairs) * size_t(nrails) * 2 * sg.bytes);
    if (!scratch) return fail(STRATA_ERR_NOMEM, "allreduce scratch");

    for (uint64_t k = 0; k < sg.n; ++k) {
        const uint64_t g = sg.first + k;
        const size_t off = sg.offset(k), cnt = sg.length(k);
        char *out = rbuf + off * es;
        char *parity_scratch = scratch + (g % Team::kSlotPairs) * size_t(nrails) * 2 * sg.bytes;

        const StepId free = c.slots_free(g);
        StepId summed;
        if (L == 1) {  // alone on the node: the node sum is the input
            summed = s.copy(dom, out, sbuf + off * es, cnt * es, {free});
        } else {
            summed = inputs.reduce(out, g, off, off, cnt, a.op, {inputs.ready(g, off, cnt, free)});
        }

        // The extra rails take their copy of the node sum before this rank's own
        // rail starts folding remote data into it.
        std::vector<StepId> copies{summed};
        for (int i = 1; i < nrails; ++i) {
            char *buf = parity_scratch + size_t(i) * 2 * sg.bytes;
            copies.push_back(s.copy(dom, buf, out, cnt * es, {summed}));
        }
        std::vector<StepId> rails{summed};
        for (int i = 0; i < nrails; ++i) {
            const int t = j + i * L;
            char *buf = i == 0 ? out : parity_scratch + size_t(i) * 2 * sg.bytes;
            char *tmp = parity_scratch + size_t(i) * 2 * sg.bytes + sg.bytes;
            const Deps start = i == 0 ? Deps(copies) : Deps{copies[size_t(i)]};
            rails.push_back(rail_allreduce_rd(c, l.rail(t), node, buf, tmp, cnt, a.dtype,
                                              a.op, (k * uint64_t(lmax) + uint64_t(t)) * span,
                                              start));
        }
        s.signal(team.flag(j, kFlagDone), g + 1, rails);
    }
    return STRATA_OK;
}

// One node, host memory only, whatever the team's memory: each segment of
// host_call_bytes() is copied into this rank's host slot, READY raised, and every
// rank folds every slot in local rank order into its output (hier_rd's node sum, the
// same operands in the same order on every rank), then raises DONE. Return safety: a
// rank's buffers are read and written only by itself; its slot is reused only after
// every peer's DONE of the segment that used it (Call::slots_free).
Status build_allreduce_node_host(Call &c, const CollArgs &a) {
    Team &team = c.team();
    Schedule &s = c.schedule();
    const Layout &l = team.layout();
    if (l.nnodes() != 1) return fail(STRATA_ERR_INTERNAL, "the host slots serve one node");
    const size_t es = strata_dtype_size(a.dtype);
    const Segments sg = take_segments(c, a.count, a.dtype, team.host_call_bytes());
    const int L = l.my_local_size(), j = l.my_local();
    MemDomain &dom = host_domain();
    const char *sbuf = static_cast<const char *>(a.sendbuf);
    char *rbuf = static_cast<char *>(a.recvbuf);
    for (uint64_t k = 0; k < sg.n; ++k) {
        const uint64_t g = sg.first + k;
        const size_t off = sg.offset(k), cnt = sg.length(k);
        const StepId in = s.copy(dom, team.host_call_slot(j, g), sbuf + off * es, cnt * es, {c.slots_free(g)});
        const StepId ready = c.wait_all(kFlagReady, g + 1, j, {s.signal(team.flag(j, kFlagReady), g + 1, {in})});
        std::vector<const void *> slots;
        for (int r = 0; r < L; ++r) slots.push_back(team.host_call_slot(r, g));
        const StepId summed = s.reduce(dom, rbuf + off * es, slots, cnt, a.dtype, a.op, {ready});
        s.signal(team.flag(j, kFlagDone), g + 1, {summed});
    }
    return STRATA_OK;
}

}  // namespace strata
