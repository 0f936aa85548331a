/* SPDX-License-Identifier: BSD-3-Clause */
// src/args.h - the arguments of one collective call, as the core passes them on.
#ifndef STRATA_ARGS_H
#define STRATA_ARGS_H

#include <cstddef>

#include "common.h"

namespace strata {

struct CollArgs {
    const void *sendbuf = nullptr;  // == recvbuf when in place
    void *recvbuf = nullptr;
    size_t count = 0;               // elements (reductions) or bytes (data movement)
    strata_dtype_t dtype = STRATA_BYTE;
    strata_op_t op = STRATA_OP_SUM;
    int root = 0;
    bool in_place = false;          // sendbuf was MPI_IN_PLACE (see strata.h per collective)
    const size_t *counts = nullptr; // per-rank counts: elements (reduce_scatter) or bytes (*v)
    const size_t *displs = nullptr; // per-rank byte offsets in recvbuf (*v)
    const size_t *send_counts = nullptr;  // alltoallv: bytes to each rank
    const size_t *send_displs = nullptr;  // alltoallv: byte offsets in sendbuf
    bool uniform = false;           // allgather, alltoall (not v): every block the same size at r * size, on every rank
    // A bad argument of this rank (a NULL buffer with bytes to move): the call still
    // goes as far as every rank goes, then fails here and tells the peers.
    Status local = STRATA_OK;
    const char *why = nullptr;
    size_t bytes() const { return count * strata_dtype_size(dtype); }
};

}  // namespace strata

#endif
