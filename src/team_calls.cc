// SPDX-License-Identifier: BSD-3-Clause
// src/team_calls.cc - a team's side of its calls: their failures, the notices that
// tell peers, the watch while a schedule waits (RunWatch), schedule dumps. (A call's
// number, run and end: src/queue.cc.)
//
// Why a call never hangs on a rank that gave up:
//  - Failures. A rank that cannot finish a call (bad argument, out of memory, driver
//    error, deadline) does not raise its flags: it writes the call's number into its
//    kFlagFailed, which node peers read whenever they wait, and sends a notice to
//    every rank on another node, which each rank keeps a receive posted for. A failed
//    rank serves no later call (its peers may have left messages of the failed call
//    in flight), so a notice of call n ends every call >= n on the rank that reads it.
//    Nothing needs the deadline but a rank that stops without telling (a hung peer,
//    or a different count across nodes): coll_strata_timeout bounds that wait.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sched.h>

#include "progress.h"
#include "team.h"

namespace strata {

namespace {
const int kRaised[] = {kFlagReady, kFlagSlice, kFlagDone, kFlagPosted};
}  // namespace

std::string Team::where() const {
    char b[96];
    snprintf(b, sizeof b, "%s call %" PRIu64, strata_coll_name(coll_), call_seq_);
    return b;
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

uint64_t Team::number_call(strata_coll_t coll) {
    ++call_seq_;
    coll_ = coll;
    last_error_.clear();
    return call_seq_;
}

void Team::close_call() {
    node_.ipc().end_call();  // this call reads no mapped peer buffer any more
    raise_flags(call_base() + kCallSpan - 1);
}

void Team::raise_flags(uint64_t value) {
    const int me = layout_.my_local();
    for (int which : kRaised) __atomic_store_n(flag(me, which), value, __ATOMIC_RELEASE);
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
        for (int r = 0; r < size_; ++r)
            if (layout_.node_of[size_t(r)] != layout_.my_node()) oob_.notices.tell(call, rank_, r);
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
    if (layout_.nnodes() < 2) return;
    if (!oob_.notices.listen())
        log(1, "cannot post the receive of failure notices: a failure on another node is only "
               "bounded by coll_strata_timeout");
}

void Team::poll_inbox() {
    uint64_t call = 0;
    int rank = -1;
    while (oob_.notices.arrived(&call, &rank)) {
        if (noticed_call_ == 0 || flag_reached(noticed_call_, call + 1)) {
            noticed_call_ = call;
            noticed_rank_ = rank;
        }
        post_inbox();
    }
}

void Team::close_inbox() { oob_.notices.close(); }

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
// Built, not yet run: flag values and tags are relative to the call (call.h). A step
// that a run chained on the team's lane queues there says "lane" (engine.h); its flag
// signals and waits are the stream's ("swrite", "swait").
void Team::dump_schedule(Schedule &s, strata_coll_t coll, const char *alg, size_t bytes) {
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
    const std::vector<uint8_t> on_lane = s.lane_plan(device() ? &domain() : nullptr, lane(), flag_kinds(), lane_waits());
    for (size_t id = 0; id < s.size(); ++id) {
        const StepInfo i = s.info(StepId(id));
        const char *kind = i.kind;
        if (on_lane[id] && i.flag != nullptr) kind = strcmp(kind, "wait") == 0 ? "swait" : "swrite";
        fprintf(f, "%s{\"kind\":\"%s\"", id ? "," : "", kind);
        if (on_lane[id]) fprintf(f, ",\"lane\":true");
        if (i.peer >= 0) fprintf(f, ",\"peer\":%d,\"tag\":%d", i.peer, i.tag & (kTagSubs - 1));
        if (i.bytes) fprintf(f, ",\"bytes\":%zu", i.bytes);
        if (i.srcs) fprintf(f, ",\"srcs\":%d", i.srcs);
        if (i.dsts) fprintf(f, ",\"dsts\":%d", i.dsts);  // one kernel writing every node peer's output
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

void Team::giving_up() {
    // Already told (this rank failed, or passed on a peer's failure): that call stays.
    if (setup_ != Setup::Ready || broken()) return;
    __atomic_store_n(flag(layout_.my_local(), kFlagFailed), call_seq_, __ATOMIC_RELEASE);
}

Status Team::check_chained_run() {
    uint64_t failed = 0;
    int who = -1;
    const char *how = "";
    if (!peer_failed(&failed, &who, &how)) return STRATA_OK;
    return peer_failure(failed, who, how, "this rank's stream may have read what that rank never wrote");
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

}  // namespace strata
