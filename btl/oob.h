/* SPDX-License-Identifier: BSD-3-Clause */
// btl/oob.h - a team's out-of-band messages: its agreements and its failure notices.
//
// Both go over the glue's transport (the wire: Team::wire()) in the team's control
// tag slot, never over the channel a call's schedule sends on: they must reach a peer
// whatever that channel is doing (a failed call may have left it mid-transfer), and
// setup agrees on which channel to use before there is one. The team asks this
// interface; only it and the channels call the transport.
#ifndef STRATA_BTL_OOB_H
#define STRATA_BTL_OOB_H

#include <cstdint>
#include <vector>

#include "btl/exchange.h"
#include "btl/p2p.h"
#include "strata.h"

namespace strata {

// Failure notices. A rank that fails call n tells every rank on another node (its
// node peers read its flag in the shared segment); each rank keeps one receive from
// any rank posted for them. Errors of the transport are not said here: a notice that
// cannot go or come leaves the wait to coll_strata_timeout, as a silent peer does.
class FailureNotices {
public:
    FailureNotices(const strata_transport_t &tp, int tag) : tp_(tp), tag_(tag) {}
    FailureNotices(const FailureNotices &) = delete;
    FailureNotices &operator=(const FailureNotices &) = delete;

    // Posts the receive, unless it is posted or the transport cannot cancel it (then
    // none is kept: closing the team could not take it back). False: posting failed.
    bool listen();
    bool listening() const { return inbox_req_ != nullptr; }
    // Sends `rank failed call` to peer (left in flight; close() releases it).
    void tell(uint64_t call, int rank, int peer);
    // One notice that arrived since the last look (the receive is posted again): true
    // with its call and rank; false when none did.
    bool arrived(uint64_t *call, int *rank);
    // Cancels the receive and releases the sends.
    void close();

private:
    struct Notice {
        uint64_t call;
        int64_t rank;
    };
    strata_transport_t tp_;
    int tag_;
    Notice inbox_{};
    void *inbox_req_ = nullptr;
    Notice outgoing_{};
    std::vector<void *> out_;
};

// What a team sends out of band: its agreements (btl/exchange.h: setup, the GPU path,
// coll_strata_check_args) over the wire, and its failure notices.
struct OutOfBand {
    OutOfBand(P2PChannel &wire, const strata_transport_t &tp, int rank, int size, int agree_tag, int notice_tag)
        : agreements(wire, rank, size, agree_tag), notices(tp, notice_tag) {}
    Agreements agreements;
    FailureNotices notices;
};

}  // namespace strata

#endif
