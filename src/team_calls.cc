// SPDX-License-Identifier: BSD-3-Clause
// src/team_calls.cc - one call of a team: its number, its end, its failure.
//
// Why a call can never spoil the next one, or hang on a rank that gave up:
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
//    that its node peers passed differently. A mismatch fails the call (below), so
//    that ranks of other nodes still in it fail too.
//    The next call starts once every node peer has ended this one.
//  - Failures. A rank that cannot finish a call (bad argument, out of memory, driver
//    error, deadline) does not raise its flags: it writes the call's number into its
//    kFlagFailed, which node peers read whenever they wait, and sends a notice to
//    every rank on another node, which each rank keeps a receive posted for. A failed
//    rank serves no later call (its peers may have left messages of the failed call
//    in flight), so a notice of call n ends every call >= n on the rank that reads it.
//    Nothing needs the deadline but a rank that stops without telling (a hung peer,
//    or a different count across nodes): coll_strata_timeout bounds that wait.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <mutex>
#include <cstdio>
#include <cstdlib>

#include <sched.h>

#include "call.h"
#include "team.h"

namespace strata {

namespace {
constexpr int kNoticeSub = 0;
const int kRaised[] = {kFlagReady, kFlagSlice, kFlagDone, kFlagPosted};
// Signatures of consecutive calls go to two flags, so that a rank one call ahead does
// not hide the signature of the call its slower peer is checking.
int sig_flag(uint64_t call) { return kFlagSig + int(call % 2); }
double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string Team::where() const {
    char b[96];
    snprintf(b, sizeof b, "%s call %" PRIu64, strata_coll_name(coll_), call_seq_);
    return b;
}

namespace {
// The teams with calls queued, in this process. A pass over them holds g_teams_mu
// throughout and takes each team's lock only if it is free (try_lock), so a team's
// owner, which holds its team's lock whenever it is inside strata and takes
// g_teams_mu only after it, never waits for a pass that waits for it. A team leaves
// the list (when its queue empties, or at its destruction) under g_teams_mu, so no
// pass sees a team that is gone.
std::recursive_mutex g_teams_mu;
std::vector<Team *> g_teams;
// g_teams.size(), read without the lock: a progress call with nothing queued anywhere
// (most of Open MPI's progress loop) returns at once.
std::atomic<size_t> g_queued_teams{0};
// Queued calls begun and not yet ended, in any team.
std::atomic<int> g_running{0};
// Whether this thread is inside a pass (a transport's progress calling back).
thread_local bool tl_in_pass = false;
}  // namespace

Status Team::begin_call(Call &call) {
    ++call_seq_;
    call.set_number(call_seq_);
    call.started_ = true;
    coll_ = call.info.coll;
    sig_ = call.info.sig;
    sums_pairs_ = call.info.sums_pairs;
    pairs_ = call.info.pairs;
    unsigned_since_ = 0;
    last_error_.clear();
    // With no queued call running anywhere in the process, the IPC mappings that this
    // thread's previous calls used may be closed for an overlapping allocation.
    if (g_running.load() == 0) IpcCache::thread_call_begins();
    const int me = layout_.my_local();
    const uint32_t published = sums_pairs_ ? sig_ + pairs_ : sig_;
    __atomic_store_n(flag(me, sig_flag(call_seq_)), ((call_seq_ & 0xffffffffu) << 32) | published, __ATOMIC_RELEASE);
    // A peer may have failed this call (or an earlier one it then never served).
    return idle(call.schedule(), {}, 0);
}

Status Team::run_call(Call &call) {
    Status st = call.start();
    bool finished = false, idle = false;
    while (st == STRATA_OK) {
        st = call.progress(&finished, &idle);
        if (st != STRATA_OK || finished) break;
        if (idle) call.p2p_->progress();  // the call's channel (not only the transport)
        if (idle) progress_others();
    }
    if (st == STRATA_OK) st = await_signatures();
    call.started_ = false;
    return st;
}

void Team::submit(Call &call) {
    call.pending_ = true;
    call.started_ = false;
    if (queue_.empty()) {
        std::lock_guard<std::recursive_mutex> g(g_teams_mu);
        g_teams.push_back(this);
        g_queued_teams.store(g_teams.size());
    }
    queue_.push_back(&call);
}

void Team::kick() {
    if (queue_.empty() || queue_.front()->started_ || tl_in_pass) return;
    tl_in_pass = true;
    Call &c = *queue_.front();
    bool waits = false;
    Status st = decide_head(c, &waits);
    if (st == STRATA_OK && !waits) st = start_head(c);
    if (st != STRATA_OK) complete(c, st);
    tl_in_pass = false;
}

// An undecided head (queued while setup ran in steps) waits for the setup to end, then
// is decided from the agreed outcome: served (built now) or handed back (st). A served
// head then waits for its gate (Call::gate), if it has one.
Status Team::decide_head(Call &call, bool *waits) {
    *waits = false;
    if (call.started_) return STRATA_OK;
    if (call.decide) {
        if (!advance_setup()) {
            *waits = true;
            return STRATA_OK;
        }
        const Status st = call.decide();
        if (st != STRATA_OK) return st;
        call.decide = nullptr;  // a persistent call served once is served at every start
    }
    if (!call.gate) return STRATA_OK;
    bool done = false;
    const Status st = call.gate(&done);
    *waits = !done;
    return st;
}

Status Team::start_head(Call &call) {
    if (broken()) {
        last_error_ = failure_;
        return STRATA_ERR_BROKEN;
    }
    STRATA_CHECK(begin_call(call));
    g_running.fetch_add(1);
    if (call.info.local != STRATA_OK) return fail_call(call.info.local, call.info.why);
    return call.start();
}

void Team::complete(Call &call, Status st) {
    // A call that never began (refused at the head: a broken team, its gate, a hand-back)
    // has nothing for on_end to end: its failure is not the team's.
    if (call.on_end && call.started_) st = call.on_end(st);
    call.pending_ = false;
    if (call.started_) g_running.fetch_sub(1);
    call.started_ = false;
    queue_.erase(queue_.begin());
    if (queue_.empty()) {
        std::lock_guard<std::recursive_mutex> g(g_teams_mu);
        g_teams.erase(std::find(g_teams.begin(), g_teams.end(), this));
        g_queued_teams.store(g_teams.size());
    }
    if (call.on_complete) call.on_complete(st);  // may release the call: the last use
}

int Team::progress_queue(bool *idle) {
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

int Team::progress_all(bool *idle) {
    *idle = true;
    if (g_queued_teams.load(std::memory_order_relaxed) == 0 || tl_in_pass) return 0;
    std::unique_lock<std::recursive_mutex> reg(g_teams_mu, std::try_to_lock);
    if (!reg.owns_lock() || g_teams.empty()) return 0;  // another thread's pass is on it
    tl_in_pass = true;
    // A pass may complete a team's last call (it leaves g_teams): walk a copy.
    static thread_local std::vector<Team *> teams;
    teams = g_teams;
    int completed = 0;
    for (Team *t : teams) {
        std::unique_lock<std::recursive_mutex> held(t->mu_, std::try_to_lock);
        if (!held.owns_lock()) continue;  // its owner is inside strata: it progresses it
        bool team_idle = true;
        completed += t->progress_queue(&team_idle);
        *idle = *idle && team_idle;
    }
    tl_in_pass = false;
    return completed;
}

bool Team::anything_queued() { return g_queued_teams.load() != 0; }

void Team::forget_queue() {
    std::lock_guard<std::recursive_mutex> g(g_teams_mu);
    auto it = std::find(g_teams.begin(), g_teams.end(), this);
    if (it != g_teams.end()) g_teams.erase(it);
    g_queued_teams.store(g_teams.size());
    queue_.clear();
}

void Team::drain() {
    while (!queue_.empty()) {
        bool idle = true;
        // This team's own queue first (its owner holds its lock, which other threads'
        // passes then skip), as a pass: a transport's progress must not re-enter it.
        if (!tl_in_pass) {
            tl_in_pass = true;
            progress_queue(&idle);
            tl_in_pass = false;
        }
        if (idle) progress_others();
    }
    finish_setup();  // begun by a persistent call not started yet: nothing queued waits for it
}

// A rank waiting in a blocking call moves its own requests on (the transport's test
// only looks), and advances its other communicators' queued calls and the stack's
// own nonblocking collectives: a peer may wait for either before it can reach this
// call (MPI's progress rule). Whether to give up the core while waiting is the
// stack's policy where it has one: Open MPI's progress loop yields when nothing
// happened if mpi_yield_when_idle is set (by itself when the node is
// oversubscribed), and spins otherwise, as its own collectives do. Without a stack
// loop strata yields: ranks may share cores, and the peer waited for must run.
void Team::progress_others() {
    if (tp_.progress) {
        tp_.progress(tp_.ctx);  // Open MPI's loop runs strata_progress too
        return;
    }
    bool idle = false;
    progress_all(&idle);
    sched_yield();
}

std::unique_ptr<Call> Team::take_call() {
    if (pool_.empty()) return std::unique_ptr<Call>(new Call(*this));
    std::unique_ptr<Call> c = std::move(pool_.back());
    pool_.pop_back();
    return c;
}

void Team::return_call(std::unique_ptr<Call> call) {
    constexpr size_t kPoolSize = 8;
    if (!call || call->pending()) return;  // a queued call is never dropped (the glue frees only completed requests)
    call->on_end = nullptr;
    call->on_complete = nullptr;
    call->decide = nullptr;
    call->gate = nullptr;
    if (pool_.size() < kPoolSize) pool_.push_back(std::move(call));
}

void Team::raise_flags(uint64_t value) {
    const int me = layout_.my_local();
    for (int which : kRaised) __atomic_store_n(flag(me, which), value, __ATOMIC_RELEASE);
}

bool Team::signed_in() const {
    const int me = layout_.my_local();
    for (int r = 0; r < layout_.my_local_size(); ++r) {
        if (r == me) continue;
        const uint64_t v = __atomic_load_n(flag(r, sig_flag(call_seq_)), __ATOMIC_ACQUIRE);
        if ((v >> 32) != (call_seq_ & 0xffffffffu)) return false;
    }
    return true;
}

Status Team::signature_deadline(double waited) {
    const int me = layout_.my_local();
    int late = -1;
    for (int r = 0; r < layout_.my_local_size() && late < 0; ++r) {
        const uint64_t v = __atomic_load_n(flag(r, sig_flag(call_seq_)), __ATOMIC_ACQUIRE);
        if (r != me && (v >> 32) != (call_seq_ & 0xffffffffu)) late = layout_.rank_at(layout_.my_node(), r);
    }
    count(STRATA_STAT_DEADLINES);
    char b[160];
    snprintf(b, sizeof b, "no progress for %.0f s (coll_strata_timeout): waiting for rank %d to begin this call "
             "(its signature)", waited, late);
    return fail_call(STRATA_ERR_TIMEOUT, b);
}

// Whether every node peer has begun this call (*in); if not, a node peer's failure, or
// past the deadline (counted from since) the deadline's error, else STRATA_OK.
Status Team::check_signed_in(double since, bool *in) {
    *in = signed_in();
    if (*in) return STRATA_OK;
    uint64_t failed = 0;
    int who = -1;
    const char *how = "";
    if (peer_failed(&failed, &who, &how)) return peer_failure(failed, who, how, "");
    const double waited = now_seconds() - since;
    if (cfg_.timeout > 0 && waited >= cfg_.timeout) return signature_deadline(waited);
    return STRATA_OK;
}

Status Team::await_signatures() {
    const double t0 = now_seconds();
    for (;;) {
        bool in = false;
        const Status st = check_signed_in(t0, &in);
        if (st != STRATA_OK || in) return st;
        progress_others();
    }
}

Status Team::end_call() {
    node_.ipc().end_call();  // this call reads no mapped peer buffer any more
    raise_flags(call_base() + kCallSpan - 1);
    const int me = layout_.my_local(), node = layout_.my_node();
    int differs = -1;      // a node peer whose signature differs
    uint32_t sum = 0;      // alltoallv: the node's per-pair sums, and L x the signature
    bool all = true;       // every node peer's signature is of this call (signed_in)
    for (int r = 0; r < layout_.my_local_size(); ++r) {
        const uint64_t v = __atomic_load_n(flag(r, sig_flag(call_seq_)), __ATOMIC_ACQUIRE);
        if ((v >> 32) != (call_seq_ & 0xffffffffu)) {
            all = false;
            continue;
        }
        sum += uint32_t(v) - sig_;
        if (r != me && !sums_pairs_ && uint32_t(v) != sig_ && differs < 0) differs = layout_.rank_at(node, r);
    }
    if (differs < 0 && !(sums_pairs_ && all && sum != 0)) return STRATA_OK;
    const std::string why =
        differs >= 0 ? "rank " + std::to_string(differs) + " passed a different count, datatype, op or root than this rank"
                     : std::string("the ranks of this node passed send and receive counts that differ by pair");
    // A failure, as any other: ranks of other nodes may still be in the call (or wait
    // for what a node peer never sends) and hear of it; a node peer may have failed it
    // already (it received more than it expected) and hands the next call back, so
    // every rank of the node must (a nonblocking call cannot follow it there later).
    return fail_call(STRATA_ERR_TRUNCATE, why);
}

Status Team::fail_call(Status st, const std::string &why, uint64_t call) {
    last_error_ = where() + ": " + why;
    log(1, "%s", last_error_.c_str());
    if (broken()) return st;
    if (call == 0) call = call_seq_;
    failed_call_ = call;
    failure_ = last_error_;
    if (setup_ == Setup::Ready) {
        __atomic_store_n(flag(layout_.my_local(), kFlagFailed), call, __ATOMIC_RELEASE);
        // Every rank on another node hears of it; node peers read the flag.
        outgoing_ = Notice{call, rank_};
        for (int r = 0; r < size_; ++r) {
            if (layout_.node_of[size_t(r)] == layout_.my_node()) continue;
            void *req = nullptr;
            if (tp_.isend(tp_.ctx, &outgoing_, sizeof outgoing_, r, control_tag(kNoticeSub), &req) == 0)
                notices_out_.push_back(req);
        }
    }
    return st;
}

Status Team::peer_failure(uint64_t call, int rank, const char *how, const std::string &stuck) {
    char b[160];
    snprintf(b, sizeof b, "rank %d (%s) failed in %s (%" PRIu64 "): this call ends with an error", rank, how,
             call == call_seq_ ? "this call" : "an earlier call", call);
    last_error_ = where() + ": " + b + (stuck.empty() ? "" : "; here, " + stuck);
    log(1, "%s", last_error_.c_str());
    if (!broken()) {
        failed_call_ = call_seq_;
        failure_ = last_error_;
        if (call != call_seq_) behind_call_ = call_seq_;
        // Tell node peers too (the origin may be on another node), with the call that
        // failed: a peer already in a later one then does what this rank does (it runs
        // that call in the previous component where it can, as the broken ranks do).
        __atomic_store_n(flag(layout_.my_local(), kFlagFailed), call, __ATOMIC_RELEASE);
    }
    return STRATA_ERR_PEER;
}

bool Team::peer_failed(uint64_t *failed, int *who, const char **how) {
    *failed = 0;
    const int L = layout_.my_local_size(), me = layout_.my_local(), node = layout_.my_node();
    for (int r = 0; r < L; ++r) {
        if (r == me) continue;
        const uint64_t f = __atomic_load_n(flag(r, kFlagFailed), __ATOMIC_ACQUIRE);
        if (f != 0 && flag_reached(call_seq_, f) && (*failed == 0 || f < *failed)) {
            *failed = f;
            *who = layout_.rank_at(node, r);
            *how = "on this node";
        }
    }
    poll_inbox();
    if (noticed_call_ != 0 && flag_reached(call_seq_, noticed_call_) && (*failed == 0 || noticed_call_ < *failed)) {
        *failed = noticed_call_;
        *who = noticed_rank_;
        *how = "on another node";
    }
    return *failed != 0;
}

bool Team::check_broken() {
    if (broken()) return true;
    if (setup_ != Setup::Ready || call_seq_ == 0) return false;
    uint64_t failed = 0;
    int who = -1;
    const char *how = "";
    if (!peer_failed(&failed, &who, &how)) return false;
    char b[200];
    snprintf(b, sizeof b, "rank %d (%s) failed call %" PRIu64 ", which ended without an error on this rank", who, how,
             failed);
    failure_ = where() + ": " + b;
    failed_call_ = failed;
    warn("peer call failed", "rank %d: %s; this and every later call on this communicator go to the previous "
                             "collective component, as on its peers", rank_, failure_.c_str());
    return true;
}

void Team::post_inbox() {
    if (inbox_req_ != nullptr || layout_.nnodes() < 2 || tp_.cancel == nullptr) return;
    if (tp_.irecv(tp_.ctx, &inbox_, sizeof inbox_, STRATA_ANY_SOURCE, control_tag(kNoticeSub), &inbox_req_) != 0) {
        inbox_req_ = nullptr;
        log(1, "cannot post the receive of failure notices: a failure on another node is only "
               "bounded by coll_strata_timeout");
    }
}

void Team::poll_inbox() {
    while (inbox_req_ != nullptr) {
        int done = 0;
        if (tp_.test(tp_.ctx, inbox_req_, &done, nullptr) != 0) {
            inbox_req_ = nullptr;
            return;
        }
        if (!done) return;
        inbox_req_ = nullptr;
        if (noticed_call_ == 0 || flag_reached(noticed_call_, inbox_.call + 1)) {
            noticed_call_ = inbox_.call;
            noticed_rank_ = int(inbox_.rank);
        }
        post_inbox();
    }
}

void Team::close_inbox() {
    if (inbox_req_ != nullptr && tp_.cancel) tp_.cancel(tp_.ctx, inbox_req_, 1);
    inbox_req_ = nullptr;
    for (void *r : notices_out_)
        if (tp_.cancel) tp_.cancel(tp_.ctx, r, 0);
    notices_out_.clear();
}

namespace {
const char *const kFlagNames[kFlagCount] = {"ready", "slice", "done", "posted", "sig", "sig", "failed", "closed"};
}  // namespace

bool Team::flag_owner(const uint64_t *f, int *local, int *which) const {
    for (int r = 0; r < layout_.my_local_size(); ++r)
        for (int w = 0; w < kFlagCount; ++w)
            if (flag(r, w) == f) {
                *local = r;
                *which = w;
                return true;
            }
    return false;
}

// One line of JSON per schedule: the layout, then every step with its dependencies.
// Built, not yet run: flag values and tags are relative to the call (call.h).
void Team::dump_schedule(const Schedule &s, strata_coll_t coll, const char *alg, size_t bytes) {
    static const char *const dir = getenv("STRATA_SCHEDULE_DUMP");
    if (dir == nullptr || *dir == '\0') return;
    const std::string key = std::string(strata_coll_name(coll)) + "/" + alg + "/" + std::to_string(bytes);
    for (const std::string &k : dumped_)
        if (k == key) return;
    dumped_.push_back(key);
    const std::string path = std::string(dir) + "/schedule." + std::to_string(rank_) + ".jsonl";
    FILE *f = fopen(path.c_str(), "a");
    if (f == nullptr) return;
    fprintf(f,
            "{\"coll\":\"%s\",\"alg\":\"%s\",\"bytes\":%zu,\"rank\":%d,\"size\":%d,\"nodes\":%d,"
            "\"node\":%d,\"local\":%d,\"local_size\":%d,\"device\":%s,\"segment\":%zu,\"steps\":[",
            strata_coll_name(coll), alg, bytes, rank_, size_, layout_.nnodes(), layout_.my_node(),
            layout_.my_local(), layout_.my_local_size(), device() ? "true" : "false", segment_bytes());
    for (size_t id = 0; id < s.size(); ++id) {
        const StepInfo i = s.info(StepId(id));
        fprintf(f, "%s{\"kind\":\"%s\"", id ? "," : "", i.kind);
        if (i.peer >= 0) fprintf(f, ",\"peer\":%d,\"tag\":%d", i.peer, i.tag & (kTagSubs - 1));
        if (i.bytes) fprintf(f, ",\"bytes\":%zu", i.bytes);
        if (i.srcs) fprintf(f, ",\"srcs\":%d", i.srcs);
        int local = 0, which = 0;
        if (i.flag != nullptr && flag_owner(i.flag, &local, &which))
            fprintf(f, ",\"owner\":%d,\"flag\":\"%s\",\"value\":%" PRId64, layout_.rank_at(layout_.my_node(), local),
                    kFlagNames[which], int64_t(i.value));
        if (i.when != kNoStep) fprintf(f, ",\"when\":[%u,%s]", unsigned(i.when), i.want ? "true" : "false");
        fprintf(f, ",\"deps\":[");
        for (uint32_t d = 0; d < i.ndeps; ++d) fprintf(f, "%s%u", d ? "," : "", unsigned(i.deps[d]));
        fprintf(f, "]}");
    }
    fprintf(f, "]}\n");
    fclose(f);
}

// What this rank waits for: the step and the rank that would release it.
std::string Team::describe_wait(const Schedule &s, const std::vector<StepId> &waiting, double stalled,
                                const char *setting) const {
    const int node = layout_.my_node();
    StepId id = waiting.empty() ? kNoStep : waiting[0];
    for (StepId w : waiting) {
        const StepInfo i = s.info(w);
        if (i.flag != nullptr || i.peer >= 0) {
            id = w;
            break;
        }
    }
    const StepInfo i = s.info(id);
    char b[256];
    if (i.flag != nullptr) {
        int owner = -1, which = 0;
        if (flag_owner(i.flag, &owner, &which)) owner = layout_.rank_at(node, owner);
        // Flag values are (call << 32) + segment + 1: say them that way.
        snprintf(b, sizeof b,
                 "no progress for %.0f s%s: waiting in step %u for rank %d (its shared-memory flag '%s' is at call "
                 "%" PRIu64 " step %" PRIu64 ", this rank needs call %" PRIu64 " step %" PRIu64 ")",
                 stalled, setting, unsigned(id), owner, kFlagNames[which], i.holds >> 32, i.holds & 0xffffffffu, i.value >> 32,
                 i.value & 0xffffffffu);
    } else {
        snprintf(b, sizeof b, "no progress for %.0f s%s: waiting in step %u (%s of %zu bytes) for rank %d", stalled,
                 setting, unsigned(id), i.kind, i.bytes, i.peer);
    }
    return b;
}

Status Team::idle(const Schedule &s, const std::vector<StepId> &waiting, double stalled) {
    // A peer's failure: when this rank had been stuck too, it says on what, since the
    // peer that failed first (its deadline, say) may only wait for the same culprit.
    uint64_t failed = 0;
    int who = -1;
    const char *how = "";
    if (peer_failed(&failed, &who, &how))
        return peer_failure(failed, who, how, stalled >= 1 ? describe_wait(s, waiting, stalled, "") : std::string());
    if (cfg_.timeout <= 0 || stalled < cfg_.timeout) return STRATA_OK;
    // The deadline: name the step waited in and the rank it waits for.
    count(STRATA_STAT_DEADLINES);
    return fail_call(STRATA_ERR_TIMEOUT, describe_wait(s, waiting, stalled, " (coll_strata_timeout)"));
}

Status Team::agree_call(strata_coll_t coll, uint64_t size_sig, uint32_t meta_sig, bool pairs,
                        uint32_t all_pairs, Status local, const std::string &why) {
    // min of x and of ~x give min and max: all equal exactly where they agree.
    const int hi = int(uint32_t(size_sig >> 32)), lo = int(uint32_t(size_sig)), meta = int(meta_sig);
    int v[7] = {local == STRATA_OK ? 1 : 0, hi, lo, meta, ~hi, ~lo, ~meta};
    std::string waited;
    // A peer that failed an earlier call (one that ended without an error here) hands
    // this call back and never joins the agreement: this rank then hands it back too
    // (nothing has moved yet), so every rank runs it in the previous component.
    Waiter w = waiter();
    w.stop = [this] { return check_broken(); };
    // A failed agreement leaves the team as it was: numbered messages keep the next
    // one from reading this one's (btl/exchange.h).
    if (const Status st = agree_.min(v, 7, w, "coll_strata_check_args", &waited); st != STRATA_OK) {
        if (broken()) return STRATA_FALLBACK;
        last_error_ = std::string(strata_coll_name(coll)) + ": " + waited;
        log(1, "%s", last_error_.c_str());
        return st;
    }
    char b[160];
    if (local != STRATA_OK) {
        snprintf(b, sizeof b, "%s: %s", strata_coll_name(coll), why.c_str());
        last_error_ = b;
        return local;
    }
    if (!v[0]) {
        snprintf(b, sizeof b, "%s: another rank passed an invalid argument (coll_strata_check_args)",
                 strata_coll_name(coll));
        last_error_ = b;
        return STRATA_ERR_PEER;
    }
    if (v[1] != ~v[4] || v[2] != ~v[5]) {
        snprintf(b, sizeof b, "%s: ranks passed different sizes (count x datatype) (coll_strata_check_args)",
                 strata_coll_name(coll));
        last_error_ = b;
        return STRATA_ERR_TRUNCATE;
    }
    if (v[3] != ~v[6]) {
        snprintf(b, sizeof b, "%s: ranks passed different datatypes, ops or roots (coll_strata_check_args)",
                 strata_coll_name(coll));
        last_error_ = b;
        return STRATA_ERR_ARG;
    }
    if (!pairs) return STRATA_OK;
    // alltoallv (agreed above: sizes hash whether it is): the sum over all ranks.
    std::vector<int> all(size_t(size_), 0);
    if (const Status st = agree_.allgather(int(all_pairs), all.data(), w, "coll_strata_check_args (alltoallv pairs)",
                                           &waited);
        st != STRATA_OK) {
        if (broken()) return STRATA_FALLBACK;
        last_error_ = std::string(strata_coll_name(coll)) + ": " + waited;
        log(1, "%s", last_error_.c_str());
        return st;
    }
    uint32_t sum = 0;
    for (int x : all) sum += uint32_t(x);
    if (sum != 0) {
        snprintf(b, sizeof b, "%s: a rank sends a peer another size than the peer receives from it "
                 "(coll_strata_check_args)", strata_coll_name(coll));
        last_error_ = b;
        return STRATA_ERR_TRUNCATE;
    }
    return STRATA_OK;
}

}  // namespace strata
