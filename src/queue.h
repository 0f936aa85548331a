/* SPDX-License-Identifier: BSD-3-Clause */
// src/queue.h - a team's calls, in MPI's order: numbered, run (blocking) or queued
// (nonblocking, persistent), ended on the node.
//
// The runner (runner.h) decides and builds a call; CallQueue gives it its number, runs
// it to the end or queues it, and ends it (node peers' signatures compared). Every
// Team owns one (Team::adopt_calls), which the runner made; Team itself knows only the
// TeamCalls interface (progress.h), so Team and Call do not know each other's headers
// the wrong way round: call.h includes team.h, queue.h includes call.h.
#ifndef STRATA_QUEUE_H
#define STRATA_QUEUE_H

#include <memory>
#include <mutex>
#include <vector>

#include "call.h"
#include "progress.h"
#include "team.h"

namespace strata {

class CallQueue final : public TeamCalls {
public:
    explicit CallQueue(Team &team) : team_(team) {}
    CallQueue(const CallQueue &) = delete;
    CallQueue &operator=(const CallQueue &) = delete;

    // ---- one call
    // Every call that runs a schedule has a number, the same on every rank: calls are
    // collective and ordered, and a call reaches begin_call on one rank exactly when it
    // does on all (every decision before it is agreed). call.info.sig hashes what MPI
    // requires to match (size, type, op, root); node peers compare it at end_call.
    // Numbers the next call and begins `call` as that call (call.info: its collective
    // and signature): the schedule built in it, or about to be, runs as that call.
    Status begin_call(Call &call);
    // The call object of this team's blocking calls, kept between calls with its memory.
    Call &blocking_call();
    // Runs a begun call's schedule to completion (blocking), progressing this thread's
    // other teams' queued calls whenever it waits (MPI's progress rule: a blocked rank
    // still advances its nonblocking collectives).
    Status run_call(Call &call);
    // The schedule ran to completion: raises this rank's flags to the end of the call
    // and returns STRATA_ERR_TRUNCATE when a node peer passed a different size, type,
    // op or root (or, alltoallv, pair sizes inside the node that differ), and fails
    // the call (Team::fail_call), so that every rank hands the next one back.
    // Called once every node peer has begun the call (signed_in).
    Status end_call();
    // Every node peer has published its signature of the current call (begun it), so
    // that end_call compares them all: a rank that needs nothing from its peers (a
    // bcast root) cannot end a mismatched call unchecked.
    bool signed_in() const;
    // The node's host decision of the current call (runner.cc, build_call), polled:
    // *known stays false while a node peer has not begun the call; then *yes: every
    // rank of the node voted for it (its buffers are host memory: bit 0 of its
    // signature) with this rank's signature. The same on every rank of the node once
    // known: the signatures of a call stay published until every rank of the node has
    // begun the call after it. *since: 0 at the first poll of a run (set then). A node
    // peer's failure, or the deadline counted from *since (which names the rank that
    // never began the call), is returned as the call's error.
    Status node_on_host(double *since, bool *known, bool *yes);

    // ---- calls that complete later (nonblocking and persistent collectives)
    // A team runs one call at a time, in the order they were submitted: MPI's order of
    // the communicator's collectives, the same on every rank. (The node's flags and
    // slots serve one call at a time.) A submitted call is numbered when it reaches the
    // head of the queue, so numbers follow that order too; its on_end and on_complete
    // are called when it ends. Any number may be queued.
    void submit(Call &call);
    // Starts the head of the queue if it has not started (one pass: its transfers are
    // posted, what needs no peer runs), and nothing more: the rest is left to progress
    // (MPI calls, a progress thread), so that starting a call returns at once.
    void kick();
    bool queued() const { return !queue_.empty(); }
    // Waits until every call this team queued has completed (a blocking call comes
    // after them, and decides nothing before they are done).
    void drain();  // (and ends a setup in steps)
    // Call objects for nonblocking and persistent calls: from the team's pool (their
    // memory kept), and back when the request is freed.
    std::unique_ptr<Call> take_call();
    void return_call(std::unique_ptr<Call> call);

    // TeamCalls
    std::recursive_mutex &mutex() override { return team_.mutex(); }
    int progress_queue(bool *idle) override;
    void leave() override;
    void abandon_memory() override;

private:
    // Blocking: waits for signed_in() (peers' failures, the deadline).
    Status check_signed_in(double since, bool *in);
    Status await_signatures();
    Status signature_deadline(double waited);  // fails the call: which node peer never began it
    Status start_head(Call &call);
    Status decide_head(Call &call, bool *waits);
    void complete(Call &call, Status st);

    Team &team_;
    uint32_t sig_ = 0;           // CallInfo::sig of the current call
    bool sums_pairs_ = false;    // CallInfo::sums_pairs
    uint32_t pairs_ = 0;         // CallInfo::pairs
    double unsigned_since_ = 0;  // a queued call's schedule ended before its peers signed in
    std::unique_ptr<Call> blocking_;
    std::vector<Call *> queue_;                // submitted, in order; the head runs
    std::vector<std::unique_ptr<Call>> pool_;  // call objects to reuse
};

}  // namespace strata

#endif
