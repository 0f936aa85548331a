/* SPDX-License-Identifier: BSD-3-Clause */
// src/stats.h - the process-wide counters behind strata_stat() (strata.h): what the
// glue's MPI_T performance variables read.
//
// One relaxed atomic add per event: calls of different communicators may run on
// different threads (the progress thread among them), and a count that is read only
// from outside needs no ordering with anything else.
#ifndef STRATA_STATS_H
#define STRATA_STATS_H

#include <atomic>
#include <cstdint>

#include "strata.h"

namespace strata {

constexpr int kMaxAlgorithms = 8;  // the most algorithms any collective's table has

struct Stats {
    std::atomic<uint64_t> served[STRATA_COLL_COUNT][kMaxAlgorithms];
    std::atomic<uint64_t> handed_back[STRATA_HANDBACK_COUNT];
    std::atomic<uint64_t> stat[STRATA_STAT_COUNT];
};

Stats &stats();

inline void count(std::atomic<uint64_t> &c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
inline void count(strata_stat_t which, uint64_t n = 1) { count(stats().stat[which], n); }

}  // namespace strata

#endif
