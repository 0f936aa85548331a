// SPDX-License-Identifier: BSD-3-Clause
// src/stats.cc - the process-wide counters and their names.
#include "stats.h"

namespace strata {

Stats &stats() {
    static Stats s{};  // zero-initialised: counters start at 0
    return s;
}

namespace {
struct Named {
    const char *name, *words;
};
// In the order of strata_handback_t.
constexpr Named kHandBacks[STRATA_HANDBACK_COUNT] = {
    {"unsupported", "arguments strata does not take"},
    {"off", "strata is off on this communicator"},
    {"lazy_calls", "a small call before setup (coll_strata_lazy_calls)"},
    {"not_set_up", "a call Open MPI makes itself (numbering a new communicator) on a communicator not set up yet"},
    {"setting", "the collective is set to base"},
    {"rules_file", "a line of the rules file says base"},
    {"host_rules", "the built-in host rules (coll_strata_host_handback)"},
    {"no_kernel", "no GPU kernel for the type and op"},
    {"no_algorithm", "none of strata's schedules fits the call (a nonblocking one)"},
    {"failed", "an earlier call on this communicator failed"},
    {"stack_call", "Open MPI's own call (host memory) on a communicator whose schedules run in GPU memory"},
    {"host_call", "a small call on host buffers on every rank of a communicator whose schedules run in GPU memory"},
};
// In the order of strata_stat_t.
constexpr Named kStats[STRATA_STAT_COUNT] = {
    {"bytes_in_place", "Bytes of served calls in which node peers' GPU buffers were read in place (CUDA IPC)"},
    {"bytes_slots", "Bytes of served calls on a node of more than one rank whose node part went through "
                    "strata's shared-memory or GPU slots"},
    {"bytes_staged", "Bytes of served calls whose buffers on this rank were staged between host and GPU memory"},
    {"bytes_sent", "Bytes this rank's schedules sent through the point-to-point layer (to other nodes; "
                   "alltoall's pairwise also inside a node)"},
    {"ipc_cache_hits", "Node peers' GPU buffers found already mapped in the CUDA IPC cache"},
    {"ipc_cache_misses", "Node peers' GPU buffers mapped anew through CUDA IPC"},
    {"ipc_cache_evictions", "CUDA IPC mappings closed to make room (coll_strata_ipc_cache_size, _bytes)"},
    {"deadline_expiries", "Calls (or setup exchanges) this rank failed because they made no progress for "
                          "coll_strata_timeout seconds"},
};
}  // namespace

}  // namespace strata

using namespace strata;

extern "C" {

uint64_t strata_stat(strata_stat_t which) {
    return which >= 0 && which < STRATA_STAT_COUNT ? stats().stat[which].load(std::memory_order_relaxed) : 0;
}

uint64_t strata_stat_served(strata_coll_t coll, int alg) {
    if (coll < 0 || coll >= STRATA_COLL_COUNT || alg >= kMaxAlgorithms) return 0;
    uint64_t n = 0;
    for (int a = alg < 0 ? 0 : alg; a < (alg < 0 ? kMaxAlgorithms : alg + 1); ++a)
        n += stats().served[coll][a].load(std::memory_order_relaxed);
    return n;
}

uint64_t strata_stat_handed_back(strata_handback_t why) {
    return why >= 0 && why < STRATA_HANDBACK_COUNT ? stats().handed_back[why].load(std::memory_order_relaxed) : 0;
}

const char *strata_handback_name(strata_handback_t why) {
    return why >= 0 && why < STRATA_HANDBACK_COUNT ? kHandBacks[why].name : nullptr;
}

const char *strata_handback_words(strata_handback_t why) {
    return why >= 0 && why < STRATA_HANDBACK_COUNT ? kHandBacks[why].words : nullptr;
}

const char *strata_stat_name(strata_stat_t which) {
    return which >= 0 && which < STRATA_STAT_COUNT ? kStats[which].name : nullptr;
}

const char *strata_stat_description(strata_stat_t which) {
    return which >= 0 && which < STRATA_STAT_COUNT ? kStats[which].words : nullptr;
}

}  // extern "C"
