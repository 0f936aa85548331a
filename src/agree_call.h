/* SPDX-License-Identifier: BSD-3-Clause */
// src/agree_call.h - coll_strata_check_args for calls that complete later.
//
// A blocking call agrees before it is numbered (agree_call in runner.h, waited for in the
// call). A nonblocking or persistent call must not wait in its start: a valid program
// may start an MPI_Ibcast and then wait in MPI_Recv for a peer that sends before it
// starts the same MPI_Ibcast. So its agreement is the same agree_call, run in a
// fiber (src/fiber.h: its waits give the thread back) when the call reaches the head
// of its team's queue, and advanced by every progress of that queue; the call is
// numbered and started only once the agreement passed.
//
// Why every rank decides alike: a team's queued calls reach its head in MPI's order of
// the communicator's collectives on every rank, and a blocking call drains the queue
// before its own agreement, so agreements are made in the same order everywhere (they
// are numbered: btl/exchange.h); each ends with the same values on every rank. A call
// whose agreement fails completes with that error on every rank, not numbered, nothing
// moved: the team stays as it was, as after a blocking call's failed agreement.
#ifndef STRATA_AGREE_CALL_H
#define STRATA_AGREE_CALL_H

#include <cstdint>

#include "call.h"

namespace strata {

// What the agreement compares (runner.cc: the call's signature): the size of the call,
// the rest that must match (type, op, root), and for alltoallv (pairs) this rank's
// part of the sum of pair hashes over all ranks.
struct CallSignature {
    strata_coll_t coll;
    uint64_t size_sig;
    uint32_t meta_sig;
    bool pairs;
    uint32_t all_pairs;
    size_t bytes;    // the call's size, agreed (runner.h, votes_host)
    bool host_here;  // this rank's buffers are host memory (or none)
};

// Gates a built nonblocking or persistent call on the agreement (Call::gate) where its
// team agrees calls (Team::agrees_calls; before setup, where it may), else clears the
// gate. The stack's own calls (stack_call: strata_start_t::internal, made alike on
// every rank while Open MPI builds a communicator) are never agreed: their arguments
// are Open MPI's, and one handed back after waiting at the head of the queue would
// need the team's own communicator, which a team set up at creation makes only later.
// The agreement takes the call's own verdict when it runs (CallInfo::local: bad arguments, a failed build, no memory
// for its request), so such a call fails on every rank with the team intact.
// A persistent call agrees at its first start and, once it passed, never again: its
// arguments are fixed at its init, so a later start would agree on the same values.
// One that failed agrees again at its next start, where it fails the same way on
// every rank: only a pass is worth remembering.
void agree_at_head(Team &team, Call &call, const CallSignature &sig, bool stack_call);

}  // namespace strata

#endif
