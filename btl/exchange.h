/* SPDX-License-Identifier: BSD-3-Clause */
// btl/exchange.h - small blocking exchanges among ranks: setup messages and agreements.
//
// Every wait here is strata's own loop: it tests its requests (which only looks),
// calls the waiter's idle() when a pass moved nothing (the stack's progress, other
// communicators' queued calls), and gives up with STRATA_ERR_TIMEOUT after `timeout`
// seconds without progress, naming what it waited for. It never enters the stack's
// own blocking wait: Open MPI sets strata up from inside its progress loop
// (communicator activation) and, with threads enabled, a blocking wait nested there
// sleeps for ever (only the outermost waiter of a process progresses).
//
// Agreements run over point-to-point messages that carry the agreement's number (the
// same on every rank: agreements are collective and ordered). A message of an earlier
// agreement that a rank gave up (its deadline) is dropped when it arrives late; one
// of a later agreement means its sender gave up this one (STRATA_ERR_PEER) and is kept
// for the agreement it belongs to. So no agreement ever reads another's values.
#ifndef STRATA_BTL_EXCHANGE_H
#define STRATA_BTL_EXCHANGE_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "btl/p2p.h"

namespace strata {

// How a blocking exchange waits: idle() between passes that moved nothing (nullptr:
// the channel's progress and a yield); timeout: seconds without progress before it
// fails (0: for ever).
struct Waiter {
    std::function<void()> idle;
    double timeout = 0;
    // Asked between passes that moved nothing (nullptr: never): true gives the wait up
    // at once with STRATA_ERR_PEER (a peer is known not to be coming).
    std::function<bool()> stop;
};

// One message of an exchange: buffer, bytes, peer.
struct Msg {
    void *buf;
    size_t bytes;
    int peer;
};

// Posts every receive and send with tag and waits for all of them. On failure nothing
// is left posted (receives cancelled, sends released) and *why says what was awaited
// ("no progress for 5 s (coll_strata_timeout): waiting for a message from rank 3").
Status exchange(P2PChannel &ch, int tag, const std::vector<Msg> &sends, const std::vector<Msg> &recvs,
                const Waiter &w, std::string *why);

// Waits for one request of ch that is not a message (the stack's own collective
// operation, say): on failure *why names what, and the request is left to the caller
// (nothing is cancelled).
Status wait_request(P2PChannel &ch, void *req, const Waiter &w, const char *what, std::string *why);

// The agreements of one team (rank of size), over ch with tags tag_base + 0 ..
// tag_base + kTags - 1 (the caller reserves them). Each call is collective: every rank
// makes the same calls in the same order. On failure *why names the agreement (what),
// the round and the rank waited for.
class Agreements {
public:
    // Round k of a min uses tag_base + k, of an allgather tag_base + kGatherTags + k.
    static constexpr int kGatherTags = 32;
    static constexpr int kTags = 2 * kGatherTags;
    Agreements(P2PChannel &ch, int rank, int size, int tag_base)
        : ch_(ch), rank_(rank), size_(size), tag_base_(tag_base) {}

    // values[i] = the minimum of values[i] over all ranks, i < n (dissemination:
    // ceil(log2 size) rounds, one message out and one in per round).
    Status min(int *values, int n, const Waiter &w, const char *what, std::string *why);
    // all[r] = rank r's value (Bruck: ceil(log2 size) rounds).
    Status allgather(int value, int *all, const Waiter &w, const char *what, std::string *why);
    // Agreements made so far (the same on every rank).
    uint64_t count() const { return seq_; }

private:
    // One round: send out[0..nout) to `to`, receive in[0..nin) from `from`, both
    // carrying this agreement's number.
    Status round(int tag, int to, const std::vector<int> &out, int from, std::vector<int> *in, const Waiter &w,
                 const char *what, int r, std::string *why);

    P2PChannel &ch_;
    int rank_, size_, tag_base_;
    uint64_t seq_ = 0;
    // Messages of a later agreement that arrived while this rank was in an earlier
    // one, by (peer, tag).
    std::map<std::pair<int, int>, std::vector<int>> early_;
};

}  // namespace strata

#endif
