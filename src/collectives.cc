// SPDX-License-Identifier: BSD-3-Clause
// src/collectives.cc - the table of collectives (see the header).
#include "collectives.h"

namespace strata {

namespace {

void add(std::vector<Block> *v, size_t offset, size_t bytes) {
    if (bytes > 0) v->push_back({offset, bytes});
}

size_t sum(const size_t *counts, int size) {
    size_t total = 0;
    for (int r = 0; r < size; ++r) total += counts[r];
    return total;
}

size_t vector_bytes(const CollArgs &a, int) { return a.bytes(); }

// ---- one row each ------------------------------------------------------------------

void allreduce_blocks(const CollArgs &a, int, int, std::vector<Block> *in, std::vector<Block> *out) {
    add(in, 0, a.bytes());
    add(out, 0, a.bytes());
}

void reduce_blocks(const CollArgs &a, int rank, int, std::vector<Block> *in, std::vector<Block> *out) {
    add(in, 0, a.bytes());
    if (rank == a.root) add(out, 0, a.bytes());
}

void reduce_scatter_blocks(const CollArgs &a, int rank, int, std::vector<Block> *in, std::vector<Block> *out) {
    add(in, 0, a.bytes());
    add(out, 0, a.counts[rank] * strata_dtype_size(a.dtype));
}

size_t allgather_bytes(const CollArgs &a, int size) { return sum(a.counts, size); }

void allgather_blocks(const CollArgs &a, int, int size, std::vector<Block> *in, std::vector<Block> *out) {
    add(in, 0, a.count);
    for (int r = 0; r < size; ++r) add(out, a.displs[r], a.counts[r]);
}

void bcast_blocks(const CollArgs &a, int rank, int, std::vector<Block> *in, std::vector<Block> *out) {
    add(rank == a.root ? in : out, 0, a.count);
}

// alltoall(v): what every rank sees alike only when uniform.
size_t alltoall_bytes(const CollArgs &a, int size) { return a.uniform ? a.counts[0] * size_t(size) : 0; }
// What this rank receives.
size_t alltoall_log_bytes(const CollArgs &a, int size) { return sum(a.counts, size); }

void alltoall_blocks(const CollArgs &a, int, int size, std::vector<Block> *in, std::vector<Block> *out) {
    for (int r = 0; r < size; ++r) {
        add(in, a.send_displs[r], a.send_counts[r]);
        add(out, a.displs[r], a.counts[r]);
    }
}

// gather, scatter: the root's buffer, a.count bytes per rank.
size_t root_buffer_bytes(const CollArgs &a, int size) { return a.count * size_t(size); }

// recvbuf: the root's only (size x count); in place, its block is in it.
void gather_blocks(const CollArgs &a, int rank, int size, std::vector<Block> *in, std::vector<Block> *out) {
    add(in, 0, a.count);
    if (rank == a.root) add(out, 0, a.count * size_t(size));
}

// sendbuf: the root's only; in place, the root writes nothing.
void scatter_blocks(const CollArgs &a, int rank, int size, std::vector<Block> *in, std::vector<Block> *out) {
    if (rank == a.root) add(in, 0, a.count * size_t(size));
    if (!a.in_place) add(out, 0, a.count);
}

// In strata_coll_t's order.
constexpr Collective kCollectives[STRATA_COLL_COUNT] = {
    {STRATA_COLL_ALLREDUCE, kReduces, vector_bytes, vector_bytes, allreduce_blocks},
    {STRATA_COLL_ALLGATHER, kPerRankCounts, allgather_bytes, allgather_bytes, allgather_blocks},
    {STRATA_COLL_REDUCE_SCATTER, kReduces | kPerRankCounts, vector_bytes, vector_bytes, reduce_scatter_blocks},
    {STRATA_COLL_BCAST, kRooted | kReplayableInPlace, vector_bytes, vector_bytes, bcast_blocks},
    {STRATA_COLL_ALLTOALL, kPairs, alltoall_bytes, alltoall_log_bytes, alltoall_blocks},
    {STRATA_COLL_REDUCE, kReduces | kRooted, vector_bytes, vector_bytes, reduce_blocks},
    {STRATA_COLL_GATHER, kRooted | kRootBuffer, root_buffer_bytes, root_buffer_bytes, gather_blocks},
    {STRATA_COLL_SCATTER, kRooted | kRootBuffer | kReplayableInPlace, root_buffer_bytes, root_buffer_bytes,
     scatter_blocks},
};

constexpr bool in_order() {
    for (int c = 0; c < STRATA_COLL_COUNT; ++c)
        if (kCollectives[c].coll != c) return false;
    return true;
}
static_assert(in_order(), "one row per collective, in strata_coll_t's order");

}  // namespace

const Collective &collective(strata_coll_t coll) { return kCollectives[coll]; }

}  // namespace strata
