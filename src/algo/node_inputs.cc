// SPDX-License-Identifier: BSD-3-Clause
// src/algo/node_inputs.cc - see node_inputs.h.
#include "algo/node_inputs.h"

#include <algorithm>

namespace strata {

NodePeers::NodePeers(Call &c, const void *buf, size_t bytes, bool try_in_place, int source, void *out)
    : c_(c), s_(c.schedule()) {
    if (try_in_place) decided_ = c.map_peers(buf, bytes, source, out);
}

StepId NodePeers::copy_from(char *dst, int local, size_t off, size_t len, const Deps &deps) {
    return s_.copy_late(c_.team().domain(), dst, c_.peer(local, off), len, deps);
}

NodeInputs::NodeInputs(Call &c, const void *buf, size_t bytes, strata_dtype_t dtype, bool try_in_place, void *out)
    : c_(c), peers_(c, buf, bytes, try_in_place, -1, out), buf_(static_cast<const char *>(buf)), dtype_(dtype),
      es_(strata_dtype_size(dtype)) {}

StepId NodeInputs::publish(uint64_t g, size_t off, size_t cnt, StepId free) {
    Schedule &s = c_.schedule();
    Team &team = c_.team();
    const int j = team.layout().my_local();
    StepId raised = kNoStep;
    peers_.otherwise([&] {
        const StepId copied = s.copy(team.domain(), team.slot(j, g, 0), buf_ + off * es_, cnt * es_, {free});
        raised = s.signal(team.flag(j, kFlagReady), g + 1, {copied});
    });
    return peers_.maybe_in_place() ? s.join({raised, free, peers_.decided()}) : raised;
}

StepId NodeInputs::ready(uint64_t g, size_t off, size_t cnt, StepId free) {
    Schedule &s = c_.schedule();
    const int j = c_.team().layout().my_local();
    const StepId published = publish(g, off, cnt, free);
    StepId slots = kNoStep;
    peers_.otherwise([&] { slots = c_.wait_all(kFlagReady, g + 1, j, {published}); });
    return peers_.maybe_in_place() ? s.join({slots, published}) : slots;
}

StepId NodeInputs::reduce(char *dst, uint64_t g, size_t off, size_t lo, size_t n, strata_op_t op,
                          const Deps &deps) {
    Schedule &s = c_.schedule();
    Team &team = c_.team();
    const int L = team.layout().my_local_size();
    std::vector<const void *> slots;
    for (int r = 0; r < L; ++r) slots.push_back(team.slot(r, g, 0) + (lo - off) * es_);
    StepId through_slots = kNoStep, in_place = kNoStep;
    peers_.otherwise([&] { through_slots = s.reduce(team.domain(), dst, slots, n, dtype_, op, deps); });
    peers_.in_place([&] { in_place = reduce_into(dst, lo, n, op, deps); });
    return peers_.maybe_in_place() ? s.join({through_slots, in_place}) : through_slots;
}

std::vector<LateSrc> NodeInputs::mapped_inputs(size_t lo) const {
    std::vector<LateSrc> ins;
    for (int r = 0; r < c_.team().layout().my_local_size(); ++r) ins.push_back(c_.peer(r, lo * es_));
    return ins;
}

StepId NodeInputs::reduce_into(char *dst, size_t lo, size_t n, strata_op_t op, const Deps &deps) {
    return c_.schedule().reduce_late(c_.team().domain(), dst, mapped_inputs(lo), n, dtype_, op, deps);
}

StepId NodeInputs::reduce_into_all(uint64_t g, size_t lo, size_t n, strata_op_t op, const Deps &deps) {
    Schedule &s = c_.schedule();
    Team &team = c_.team();
    const int j = team.layout().my_local();
    const StepId red = s.reduce_multi_late(team.domain(), c_.peer_outs(lo * es_, true), mapped_inputs(lo), n, dtype_,
                                           op, deps);
    return s.signal(team.flag(j, kFlagDone), g + 1, {red});
}

StepId gather_slices(Call &c, uint64_t g, size_t off, size_t cnt, size_t lo, size_t hi, char *dst, size_t es,
                     const Deps &mine) {
    Schedule &s = c.schedule();
    Team &team = c.team();
    const Layout &l = team.layout();
    const int L = l.my_local_size(), j = l.my_local(), lmax = l.max_local_size();
    const StepId sliced = s.signal(team.flag(j, kFlagSlice), g + 1, mine);
    std::vector<StepId> seen(size_t(L), kNoStep);  // local rank r's SLICE of g
    seen[size_t(j)] = sliced;
    std::vector<StepId> outs{sliced};
    for (int t = 0; t < lmax; ++t) {
        const Split sp = split(cnt, size_t(lmax), size_t(t));
        const size_t from = std::max(lo, off + sp.offset), to = std::min(hi, off + sp.offset + sp.length);
        if (to <= from) continue;
        const int owner = t % L;
        if (seen[size_t(owner)] == kNoStep) seen[size_t(owner)] = s.wait(team.flag(owner, kFlagSlice), g + 1);
        outs.push_back(s.copy(team.domain(), dst + (from - lo) * es, team.slot(owner, g, 1) + (from - off) * es,
                              (to - from) * es, {seen[size_t(owner)]}));
    }
    return s.signal(team.flag(j, kFlagDone), g + 1, outs);
}

}  // namespace strata
