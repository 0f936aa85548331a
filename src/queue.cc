// SPDX-License-Identifier: BSD-3-Clause
// src/queue.cc - a team's calls: numbered, run or queued, ended (queue.h).
//
// Why a call can never spoil the next one (its failures: src/team_calls.cc):
//  - Numbers. A call that runs a schedule has a number, the same on every rank
//    (begin_call is reached on one rank exactly when on all). Its segment numbers
//    start at number << 32 and its tags use slot number % kTagCalls, so what a call
//    signals or sends depends on the call, not on how many segments earlier calls
//    had on this rank. A rank that passed a different count cannot shift its peers'
//    next call.
//  - Ends. A rank whose schedule completed raises every flag to the last value of the
//    call (end_call), so a peer still waiting in the same call (for segments this
//    rank never had: a different count) is released, and finds the mismatch in the
//    signatures node peers publish (kFlagSig): STRATA_ERR_TRUNCATE, not a silent
//    wrong answer. A rank ends a call only once every node peer has published its
//    signature of it (begun it), so no rank of a node returns success from a call
//    that its node peers passed differently. A mismatch fails the call (Team::fail_call),
//    so that ranks of other nodes still in it fail too.
//    The next call starts once every node peer has ended this one.
#include "queue.h"

#include <chrono>
#include <string>

namespace strata {

namespace {
// Signatures of consecutive calls go to two flags, so that a rank one call ahead does
// not hide the signature of the call its slower peer is checking.
int sig_flag(uint64_t call) { return kFlagSig + int(call % 2); }
double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Call &CallQueue::blocking_call() {
    if (!blocking_) blocking_.reset(new Call(team_));
    return *blocking_;
}

Status CallQueue::begin_call(Call &call) {
    const uint64_t n = team_.number_call(call.info.coll);
    call.set_number(n);
    call.started_ = true;
    sig_ = call.info.sig & ~1u;  // bit 0: the vote below
    sums_pairs_ = call.info.sums_pairs;
    pairs_ = call.info.pairs;
    unsigned_since_ = 0;
    // With no queued call running anywhere in the process, the IPC mappings that this
    // thread's previous calls used may be closed for an overlapping allocation.
    if (!queued_calls_running()) IpcCache::thread_call_begins();
    const int me = team_.layout().my_local();
    // Bit 0 of a signature is the call's vote for the node's host decision (runner.cc,
    // build_call), not part of its hash. Not in a sum of pairs, which never votes.
    const uint32_t published = sums_pairs_ ? sig_ + pairs_ : sig_ | uint32_t(call.info.host_here);
    __atomic_store_n(team_.flag(me, sig_flag(n)), ((n & 0xffffffffu) << 32) | published, __ATOMIC_RELEASE);
    // A peer may have failed this call (or an earlier one it then never served).
    return team_.idle(call.schedule(), {}, 0);
}

Status CallQueue::run_call(Call &call) {
    Status st = call.start();
    bool finished = false, idle = false;
    while (st == STRATA_OK) {
        st = call.progress(&finished, &idle);
        if (st != STRATA_OK || finished) break;
        if (idle) call.p2p_->progress();  // the call's channel (not only the transport)
        if (idle) team_.progress_others();
    }
    if (st == STRATA_OK) st = await_signatures();
    call.started_ = false;
    return st;
}

void CallQueue::submit(Call &call) {
    call.pending_ = true;
    call.started_ = false;
    if (queue_.empty()) enlist(this);
    queue_.push_back(&call);
}

void CallQueue::kick() {
    if (queue_.empty() || queue_.front()->started_ || inside_pass()) return;
    InPass pass;
    Call &c = *queue_.front();
    bool waits = false;
    Status st = decide_head(c, &waits);
    if (st == STRATA_OK && !waits) st = start_head(c);
    if (st != STRATA_OK) complete(c, st);
}

// An undecided head (queued while setup ran in steps) waits for the setup to end, then
// is decided from the agreed outcome: served (built now) or handed back (st). A served
// head then waits for its gate (Call::gate), if it has one.
Status CallQueue::decide_head(Call &call, bool *waits) {
    *waits = false;
    if (call.started_) return STRATA_OK;
    if (call.decide) {
        if (!team_.advance_setup()) {
            *waits = true;
            return STRATA_OK;
        }
        if (call.asks_gpus) {  // after every earlier call and every earlier setup step
            call.asks_gpus = false;
            if (team_.start_asking_again() && !team_.advance_setup()) {
                *waits = true;
                return STRATA_OK;
            }
        }
        // A gate already here (coll_strata_check_args) agrees the call before it is
        // decided: the hand-backs look at its size, type and op, which only the
        // agreement makes the same everywhere. A team that is off decides alike
        // everywhere without it (the agreed outcome of setup).
        if (call.gate && team_.ready()) {
            bool done = false;
            const Status st = call.gate(&done);
            *waits = !done;
            if (st != STRATA_OK || !done) return st;
        }
        const Status st = call.decide();
        if (st != STRATA_OK) return st;
        call.decide = nullptr;  // a persistent call served once is served at every start
        return STRATA_OK;       // agreed above, or not gated: serve() gated it only where not
    }
    if (!call.gate) return STRATA_OK;
    bool done = false;
    const Status st = call.gate(&done);
    *waits = !done;
    return st;
}

Status CallQueue::start_head(Call &call) {
    if (team_.broken()) {
        team_.set_last_error(team_.first_failure());
        return STRATA_ERR_BROKEN;
    }
    // Counted as running whatever begin_call says: it marks the call started before its
    // last check (a peer's failure), and complete() uncounts every started call.
    const Status begun = begin_call(call);
    queued_call_begins();
    if (begun != STRATA_OK) return begun;
    if (call.info.local != STRATA_OK) return team_.fail_call(call.info.local, call.info.why);
    return call.start();
}

void CallQueue::complete(Call &call, Status st) {
    // A call that never began (refused at the head: a broken team, its gate, a hand-back)
    // has nothing for on_end to end: its failure is not the team's.
    if (call.on_end && call.started_) st = call.on_end(st);
    call.pending_ = false;
    if (call.started_) queued_call_ends();
    call.started_ = false;
    queue_.erase(queue_.begin());
    if (queue_.empty()) delist(this);
    if (call.on_complete) call.on_complete(st);  // may release the call: the last use
}

int CallQueue::progress_queue(bool *idle) {
    // Passes over the head while they move it, up to kPasses: one progress call (an
    // MPI_Test between two pieces of the application's work) takes a call as far as
    // it can go without waiting, not one step; a pass that moves nothing ends it.
    constexpr int kPasses = 64;
    int completed = 0;
    *idle = true;
    while (!queue_.empty()) {
        Call &c = *queue_.front();
        bool finished = false, call_idle = false, moved = true, waits = false;
        Status st = decide_head(c, &waits);
        if (st == STRATA_OK && waits) break;  // *idle stays: the setup's (or agreement's) waits gave the thread back
        if (st == STRATA_OK && !c.started_) st = start_head(c);
        for (int k = 0; st == STRATA_OK && !finished && moved && k < kPasses; ++k)
            st = c.progress(&finished, &call_idle, &moved);
        // Ended here: completed once every node peer has begun it (end_call compares
        // their signatures), never waited for inside a pass.
        if (st == STRATA_OK && finished && !signed_in()) {
            if (unsigned_since_ == 0) unsigned_since_ = now_seconds();
            bool in = false;
            st = check_signed_in(unsigned_since_, &in);
            if (st == STRATA_OK && !in) {
                *idle = true;
                break;
            }
        }
        if (st == STRATA_OK && !finished) {
            if (call_idle) c.p2p_->progress();  // the call's channel (not only the transport)
            *idle = call_idle;
            break;
        }
        complete(c, st);
        ++completed;
        *idle = false;
    }
    return completed;
}

void CallQueue::drain() {
    while (!queue_.empty()) {
        bool idle = true;
        // This team's own queue first (its owner holds its lock, which other threads'
        // passes then skip), as a pass: a transport's progress must not re-enter it.
        if (!inside_pass()) {
            InPass pass;
            progress_queue(&idle);
        }
        if (idle) team_.progress_others();
    }
    team_.finish_setup();  // begun by a persistent call not started yet: nothing queued waits for it
}

std::unique_ptr<Call> CallQueue::take_call() {
    if (pool_.empty()) return std::unique_ptr<Call>(new Call(team_));
    std::unique_ptr<Call> c = std::move(pool_.back());
    pool_.pop_back();
    return c;
}

void CallQueue::return_call(std::unique_ptr<Call> call) {
    constexpr size_t kPoolSize = 8;
    if (!call || call->pending()) return;  // a queued call is never dropped (the glue frees only completed requests)
    call->on_end = nullptr;
    call->on_complete = nullptr;
    call->decide = nullptr;
    call->gate = nullptr;
    if (pool_.size() < kPoolSize) pool_.push_back(std::move(call));
}

bool CallQueue::signed_in() const {
    const Layout &l = team_.layout();
    const uint64_t n = team_.call_number();
    const int me = l.my_local();
    for (int r = 0; r < l.my_local_size(); ++r) {
        if (r == me) continue;
        const uint64_t v = __atomic_load_n(team_.flag(r, sig_flag(n)), __ATOMIC_ACQUIRE);
        if ((v >> 32) != (n & 0xffffffffu)) return false;
    }
    return true;
}

Status CallQueue::node_on_host(double *since, bool *known, bool *yes) {
    if (*since == 0) *since = now_seconds();
    STRATA_CHECK(check_signed_in(*since, known));
    if (!*known) return STRATA_OK;
    const Layout &l = team_.layout();
    const uint64_t n = team_.call_number();
    bool all = true;
    for (int r = 0; r < l.my_local_size(); ++r) {
        const uint32_t v = uint32_t(__atomic_load_n(team_.flag(r, sig_flag(n)), __ATOMIC_ACQUIRE));
        // A peer that passed another size, type or op (end_call says so) may not have
        // built the decision at all: the node then stays on the GPU with it.
        all = all && (v & 1u) != 0 && (v & ~1u) == sig_;
    }
    *yes = all;
    return STRATA_OK;
}

Status CallQueue::signature_deadline(double waited) {
    const Layout &l = team_.layout();
    const uint64_t n = team_.call_number();
    const int me = l.my_local();
    int late = -1;
    for (int r = 0; r < l.my_local_size() && late < 0; ++r) {
        const uint64_t v = __atomic_load_n(team_.flag(r, sig_flag(n)), __ATOMIC_ACQUIRE);
        if (r != me && (v >> 32) != (n & 0xffffffffu)) late = l.rank_at(l.my_node(), r);
    }
    count(STRATA_STAT_DEADLINES);
    char b[160];
    snprintf(b, sizeof b, "no progress for %.0f s (coll_strata_timeout): waiting for rank %d to begin this call "
             "(its signature)", waited, late);
    return team_.fail_call(STRATA_ERR_TIMEOUT, b);
}

// Whether every node peer has begun this call (*in); if not, a node peer's failure, or
// past the deadline (counted from since) the deadline's error, else STRATA_OK.
Status CallQueue::check_signed_in(double since, bool *in) {
    *in = signed_in();
    if (*in) return STRATA_OK;
    uint64_t failed = 0;
    int who = -1;
    const char *how = "";
    if (team_.peer_failed(&failed, &who, &how)) return team_.peer_failure(failed, who, how, "");
    const double waited = now_seconds() - since;
    const double timeout = team_.config().timeout;
    if (timeout > 0 && waited >= timeout) return signature_deadline(waited);
    return STRATA_OK;
}

Status CallQueue::await_signatures() {
    const double t0 = now_seconds();
    for (;;) {
        bool in = false;
        const Status st = check_signed_in(t0, &in);
        if (st != STRATA_OK || in) return st;
        team_.progress_others();
    }
}

Status CallQueue::end_call() {
    team_.close_call();
    const Layout &l = team_.layout();
    const uint64_t n = team_.call_number();
    const int me = l.my_local(), node = l.my_node();
    int differs = -1;      // a node peer whose signature differs
    uint32_t sum = 0;      // alltoallv: the node's per-pair sums, and L x the signature
    bool all = true;       // every node peer's signature is of this call (signed_in)
    for (int r = 0; r < l.my_local_size(); ++r) {
        const uint64_t v = __atomic_load_n(team_.flag(r, sig_flag(n)), __ATOMIC_ACQUIRE);
        if ((v >> 32) != (n & 0xffffffffu)) {
            all = false;
            continue;
        }
        sum += uint32_t(v) - sig_;
        if (r != me && !sums_pairs_ && (uint32_t(v) & ~1u) != sig_ && differs < 0) differs = l.rank_at(node, r);
    }
    if (differs < 0 && !(sums_pairs_ && all && sum != 0)) return STRATA_OK;
    const std::string why =
        differs >= 0 ? "rank " + std::to_string(differs) + " passed a different count, datatype, op or root than this rank"
                     : std::string("the ranks of this node passed send and receive counts that differ by pair");
    // A failure, as any other: ranks of other nodes may still be in the call (or wait
    // for what a node peer never sends) and hear of it; a node peer may have failed it
    // already (it received more than it expected) and hands the next call back, so
    // every rank of the node must (a nonblocking call cannot follow it there later).
    return team_.fail_call(STRATA_ERR_TRUNCATE, why);
}

void CallQueue::leave() {
    // Requests keep their communicator alive until they completed: nothing is queued.
    if (queued())
        warn("internal error", "internal: a communicator freed with %zu collective call(s) still queued",
             queue_.size());
    delist(this);
    queue_.clear();
}

void CallQueue::abandon_memory() {
    if (blocking_) blocking_->abandon_memory();
    for (auto &c : pool_) c->abandon_memory();
}

}  // namespace strata
