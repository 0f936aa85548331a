// src/algo/node_inputs.cc - see node_inputs.h.
#include "algo/node_inputs.h"

namespace strata {

NodeInputs::NodeInputs(Call &c, const void *buf, size_t bytes, strata_dtype_t dtype, bool try_in_place)
    : c_(c), buf_(static_cast<const char *>(buf)), dtype_(dtype), es_(strata_dtype_size(dtype)) {
    if (try_in_place) decided_ = c.map_peers(buf, bytes);
}

StepId NodeInputs::publish(uint64_t g, size_t off, size_t cnt, StepId free) {
    Schedule &s = c_.schedule();
    Team &team = c_.team();
    const int j = team.layout().my_local();
    if (decided_ != kNoStep) s.when(decided_, false);
    const StepId copied = s.copy(team.domain(), team.slot(j, g, 0), buf_ + off * es_, cnt * es_, {free});
    const StepId raised = s.signal(team.flag(j, kFlagReady), g + 1, {copied});
    s.always();
    return decided_ == kNoStep ? raised : s.join({raised, free, decided_});
}

StepId NodeInputs::ready(uint64_t g, size_t off, size_t cnt, StepId free) {
    Schedule &s = c_.schedule();
    const int j = c_.team().layout().my_local();
    const StepId published = publish(g, off, cnt, free);
    if (decided_ != kNoStep) s.when(decided_, false);
    const StepId slots = c_.wait_all(kFlagReady, g + 1, j, {published});
    s.always();
    return decided_ == kNoStep ? slots : s.join({slots, published});
}

StepId NodeInputs::reduce(char *dst, uint64_t g, size_t off, size_t lo, size_t n, strata_op_t op,
                          const Deps &deps) {
    Schedule &s = c_.schedule();
    Team &team = c_.team();
    const int L = team.layout().my_local_size();
    std::vector<const void *> slots;
    for (int r = 0; r < L; ++r) slots.push_back(team.slot(r, g, 0) + (lo - off) * es_);
    if (decided_ == kNoStep) return s.reduce(team.domain(), dst, slots, n, dtype_, op, deps);
    s.when(decided_, false);
    const StepId through_slots = s.reduce(team.domain(), dst, slots, n, dtype_, op, deps);
    s.when(decided_, true);
    std::vector<LateSrc> peers;
    for (int r = 0; r < L; ++r) peers.push_back(c_.peer(r, lo * es_));
    const StepId in_place = s.reduce_late(team.domain(), dst, peers, n, dtype_, op, deps);
    s.always();
    return s.join({through_slots, in_place});
}

}  // namespace strata
