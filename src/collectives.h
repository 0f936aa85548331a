/* SPDX-License-Identifier: BSD-3-Clause */
// src/collectives.h - what the core knows of each collective: one row per collective.
//
// Every decision that depends on which collective a call is, outside its algorithms
// (src/algo/tables.cc), reads this table: what must match on every rank (the call's
// signature, agreed under coll_strata_check_args and summed at each call's end), its
// size as every rank sees it (the rules look at it), the size its log line gives, the
// byte ranges it reads and writes (copies of a rank's buffers), and whether a call
// that failed half-way can still run in the replaced component. Adding a collective
// adds a row here and its algorithms; nothing else in the core switches on it.
#ifndef STRATA_COLLECTIVES_H
#define STRATA_COLLECTIVES_H

#include <vector>

#include "args.h"

namespace strata {

// A byte range of a buffer: what a collective reads or writes there.
struct Block {
    size_t offset, bytes;
};

// What a collective's call carries besides its buffers and counts.
enum CollectiveTrait : unsigned {
    // Type and op are part of the call (they must match; the GPU needs a kernel).
    kReduces = 1u << 0,
    // A root is part of the call.
    kRooted = 1u << 1,
    // Every rank's count (a.counts[r]) must match everywhere: allgather(v),
    // reduce_scatter. Otherwise one count does (a.count; alltoall's a.counts[0]).
    kPerRankCounts = 1u << 2,
    // Sizes go by pair (alltoall): uniform, a.counts[0] per pair; alltoallv's per-pair
    // sizes are agreed apart (runner.cc's pair_sig).
    kPairs = 1u << 3,
    // The call's size is the root's buffer, a rank's block per rank (gather, scatter).
    kRootBuffer = 1u << 4,
    // After a failure half-way, what the replaced component needs of this rank's
    // buffers is intact even in place (bcast's root only reads; scatter's root in place
    // writes nothing), so the call can run there.
    kReplayableInPlace = 1u << 5,
};

struct Collective {
    strata_coll_t coll;
    unsigned traits;  // CollectiveTrait
    // The size of a call as every rank sees it (0 where it differs: alltoallv).
    size_t (*call_bytes)(const CollArgs &a, int size);
    // The size its log line gives: what the call moves as MPI counts it.
    size_t (*log_bytes)(const CollArgs &a, int size);
    // What it reads from a.sendbuf (*in) and writes to a.recvbuf (*out) on `rank` of
    // `size`, in any order (empty blocks left out).
    void (*blocks)(const CollArgs &a, int rank, int size, std::vector<Block> *in, std::vector<Block> *out);

    bool is(CollectiveTrait t) const { return (traits & t) != 0; }
};

// coll's row; coll must be a valid strata_coll_t.
const Collective &collective(strata_coll_t coll);

}  // namespace strata

#endif
