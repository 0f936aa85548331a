/* SPDX-License-Identifier: BSD-3-Clause */
// src/engine.h - schedules and the progress engine that runs them.
//
// An algorithm is a list of steps (copy, reduce, send, recv, signal, wait) with
// dependencies on earlier steps. The engine starts every step whose dependencies
// are complete and polls started ones; it never blocks inside a step. run()
// progresses until every step is complete, yielding the CPU when nothing moves;
// start() and progress() do the same in pieces, for the calls that complete later
// (nonblocking and persistent collectives: CallQueue::submit, src/queue.h).
//
// Work chained on the stream (chain()): on a device team whose GPU has stream memory
// operations, a schedule without sends or receives (a node's work) puts its device
// steps, flag signals and flag waits, and joins of them, on one stream of the team's
// own (a lane), in build order, each as soon as what it depends on is done or queued
// before it; the host learns of their completion from one event per batch queued
// together (MemDomain::mark), not one per step. A schedule whose every step can be
// queued at its start is queued whole there and completes with no further host work:
// its request's test polls one event. The stream runs those steps one after another,
// so build order must be one they can run in, one at a time, on every rank: a wait is
// queued only after a signal of the same schedule of at least its value (a rank
// publishes before it waits for its peers; the other waits stay with the host).
// A schedule with sends or receives chains too, without waits on the lane: its device
// steps, the signals after them and their joins are queued in the order they become
// ready (what they depend on done, or queued before them), as the host would have
// issued them one by one, so a node's next segment still overlaps the network's
// transfer of the one before. Nothing on the lane then waits for anything outside
// it, so the stream always runs dry; the host keeps the flag waits, the sends and the
// receives, and polls one event per batch instead of one per kernel. A receive whose
// channel copies it into device memory itself (the bounce channel) has that copy
// queued on the lane once the message arrived, and joins the batch as a lane step.
// Where the channel can queue a send's copy too (P2PChannel::queues_sends), a send
// counts its lane dependencies as met once they are queued: its copy out of device
// memory goes on the lane behind them, joins the batch, and the transfer starts when
// the batch completes, so the host polls no event for the kernels that wrote it.
// A team may also chain without waits on the lane everywhere (chain()'s waits false,
// coll_strata_stream_flags writes): a node's work is then queued in ready order too,
// the stream writes the flags and the host waits for the peers'. Two rules keep the
// host's waits to one per call there. A host flag wait that depends on lane steps
// counts them as met once queued, not done (it only reads a peer's flag, and what is
// queued runs without the host), where nothing the host does after it needs them done
// (every step after it is a lane step or such a wait). And a batch gets its event only
// when a host step needs its steps done, or when the lane has nothing left to queue;
// until then its steps join the next batch (the stream runs them in order).
#ifndef STRATA_ENGINE_H
#define STRATA_ENGINE_H

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "btl/p2p.h"
#include "common.h"
#include "mem/domain.h"

namespace strata {

using StepId = uint32_t;

// Shared-memory flags are serial numbers: holds has reached value when it is at most
// 2^63 ahead of it, so flag values may wrap around.
inline bool flag_reached(uint64_t holds, uint64_t value) { return int64_t(holds - value) >= 0; }
constexpr StepId kNoStep = UINT32_MAX;  // "no dependency": ignored wherever deps go

// A dependency list; kNoStep entries are dropped, so optional deps can be passed.
class Deps {
public:
    Deps() = default;
    Deps(std::initializer_list<StepId> ids) { for (StepId s : ids) add(s); }
    Deps(const std::vector<StepId> &ids) { for (StepId s : ids) add(s); }  // NOLINT
    void add(StepId s) { if (s != kNoStep) ids_.push_back(s); }
    const std::vector<StepId> &ids() const { return ids_; }
private:
    std::vector<StepId> ids_;
};

class Schedule;

// A source address known only when the schedule runs: *base + offset, read when the
// step starts (a node peer's buffer, mapped by an earlier step of the same schedule).
// base nullptr: offset is the address itself, known when building (fixed()).
struct LateSrc {
    const char *const *base;
    size_t offset;
    static LateSrc fixed(const void *p) { return LateSrc{nullptr, reinterpret_cast<size_t>(p)}; }
};

// Where a schedule's relative numbers land when it runs: flag values (signal, wait)
// are shifted by base, tags are or'ed with tag_base. A call's builder numbers from 0
// (call.h); setup schedules use absolute values and the default {0, 0}.
struct Numbering {
    uint64_t base = 0;
    int tag_base = 0;
};

// What a schedule waits for when it stalls, for the watch's message.
struct StepInfo {
    const char *kind;        // "send", "recv", "wait", "copy", ...
    int peer;                // send/recv: the rank; else -1
    int tag;
    size_t bytes;
    const uint64_t *flag;    // wait, signal: the flag, its value and what it holds
    uint64_t value, holds;
    int srcs = 0;            // reduce: operands (bytes: of each, and of the result)
    int dsts = 0;            // reduce into several outputs (reduce_multi): how many; else 0
    const StepId *deps = nullptr;  // the steps it depends on
    uint32_t ndeps = 0;
    StepId when = kNoStep;   // runs only if step `when` decided `want` (Schedule::when)
    bool want = false;
};

// Looks over a run while it makes no progress: the team's failure notices and its
// deadline. idle() is called each time the engine yields; an error it returns ends
// the run (the engine then gives up its outstanding requests).
class RunWatch {
public:
    virtual ~RunWatch() = default;
    virtual Status idle(const Schedule &s, const std::vector<StepId> &waiting, double stalled_seconds) = 0;
    // A chained run is being given up and its lane is about to be drained, which raises
    // peers' flags (Schedule::drain_lane): tell the peers first that this call failed,
    // so that whoever those flags let through learns that what it read is no result.
    virtual void giving_up() {}
};

// Next to each node flag, in its own cache line (btl/shm.h: a line per flag), the
// highest value its owner has queued on its lane: a stream write that may not have run
// yet. Written by the owner's host as it queues the write; a peer's lane waits for a
// value only once it is noted here (or already in the flag), where the schedule asks
// so (chain: queued_only).
inline uint64_t *queued_note(const uint64_t *flag) { return const_cast<uint64_t *>(flag) + 1; }

// Which flags are of one kind (every local rank's READY, say): those whose addresses
// differ from base by the same remainder modulo stride. stride 0: each flag is a kind
// of its own. The lane's choice of waits compares a wait with the signals of its kind.
struct FlagKinds {
    uintptr_t base = 0;
    size_t stride = 0;
    uintptr_t of(const uint64_t *flag) const {
        const uintptr_t a = reinterpret_cast<uintptr_t>(flag);
        return stride == 0 || a < base ? a : (a - base) % stride;
    }
};

class Schedule {
public:
    void clear();
    size_t size() const { return steps_.size(); }
    // From now on every step added without dependencies depends on `entry`: what is
    // built next starts after what was built before (a builder composes after another).
    void start_after(StepId entry) { entry_ = entry; }
    // A step that completes when every step so far has: the end of what was built.
    StepId join_all();

    StepId copy(MemDomain &dom, void *dst, const void *src, size_t bytes, const Deps &deps = {});
    StepId reduce(MemDomain &dom, void *dst, const std::vector<const void *> &srcs, size_t count,
                  strata_dtype_t dtype, strata_op_t op, const Deps &deps = {});
    // Zero-byte transfers are no-ops on both sides (both sides know the size).
    // A transfer of 0 bytes is no message, unless even_empty: then both ends still
    // exchange one (alltoallv: a peer that passed another count is caught).
    StepId send(const void *buf, size_t bytes, int peer, int tag, const Deps &deps = {}, bool even_empty = false);
    StepId recv(void *buf, size_t bytes, int peer, int tag, const Deps &deps = {}, bool even_empty = false);
    // Shared-memory flags: signal stores value (release), after every earlier
    // signal of the same flag in this schedule; wait completes once the flag
    // holds at least value (acquire), compared as serial numbers (flag - value as a
    // signed 64-bit number >= 0), so values may wrap.
    StepId signal(uint64_t *flag, uint64_t value, const Deps &deps = {});
    // signal(), written by the lane where the run is chained (chain()), even with no
    // device work before it: behind the application's work the lane follows and what
    // the run queued there before it. Unchained, the host writes it.
    StepId signal_on_stream(uint64_t *flag, uint64_t value, const Deps &deps = {});
    StepId wait(const uint64_t *flag, uint64_t value, const Deps &deps = {});
    // Completes when its dependencies do: a join point.
    StepId join(const Deps &deps);
    // Reads of an address known only at run time (LateSrc).
    StepId copy_late(MemDomain &dom, void *dst, LateSrc src, size_t bytes, const Deps &deps = {});
    StepId reduce_late(MemDomain &dom, void *dst, const std::vector<LateSrc> &srcs, size_t count,
                       strata_dtype_t dtype, strata_op_t op, const Deps &deps = {});
    // The fused node kernel (MemDomain::reduce_multi): srcs folded once and stored into
    // every one of dsts, all of them addresses known at run time (a LateSrc names
    // where a destination lies too: a node peer's output, mapped by an earlier step).
    StepId reduce_multi_late(MemDomain &dom, const std::vector<LateSrc> &dsts, const std::vector<LateSrc> &srcs,
                             size_t count, strata_dtype_t dtype, strata_op_t op, const Deps &deps = {});

    // Work of the caller's as a step: fn is called once its dependencies are done,
    // then again each time the engine polls it, until it sets *done; it may set
    // *outcome (false when never set) for steps built on when().
    using PollFn = std::function<Status(bool *done, bool *outcome)>;
    StepId poll(PollFn fn, const Deps &deps = {});
    // Branches: every step added from now until always() runs only if step decider
    // (a poll step) ended with outcome == want; otherwise it completes without doing
    // anything as soon as its dependencies are done, so that what depends on either
    // branch goes on. Both branches of a decision are built; one of them runs.
    void when(StepId decider, bool want) {
        cond_ = decider;
        cond_want_ = want;
    }
    void always() { cond_ = kNoStep; }
    // The decision the steps added now depend on (when), or kNoStep.
    StepId branch() const { return cond_; }
    // Each signal follows the flag's previous one (signal()). A decision's last branch
    // may be built as if the branches before it were not (they never run with it): take
    // the order before the first, and give it back before the last. Nothing may be built
    // after that branch, since it would not follow the others' signals.
    using SignalOrder = std::vector<std::pair<uint64_t *, StepId>>;
    SignalOrder signal_order() const { return last_signal_; }
    void restore_signal_order(SignalOrder order) { last_signal_ = std::move(order); }

    // Runs every step to completion, sends and receives over channel ch. On an error
    // (a step failed, or watch said to stop) started receives are cancelled, started
    // copies are waited for, and started sends are waited for up to a second (a peer
    // may still pull their data) before they are left to ch.cancel, so nothing of the
    // run touches memory after it returns unless a send's receiver never matches it.
    // Values and tags are those given at build, shifted by num. Steps completed by an
    // earlier run are not run again (see rewind).
    Status run(P2PChannel &ch, RunWatch *watch = nullptr, Numbering num = {});
    // The same run in pieces, for a call that completes later (a nonblocking or
    // persistent collective): start() prepares it and starts what can start;
    // progress() makes one pass over the started steps and returns at once. *finished:
    // every step completed; *idle: several passes moved nothing (the caller may yield
    // the CPU); *moved (optional): this pass moved something. On an error the run is
    // given up as run() does.
    Status start(P2PChannel &ch, RunWatch *watch = nullptr, Numbering num = {});
    Status progress(bool *finished, bool *idle, bool *moved = nullptr);
    // Chains the next runs' work on lane (see the top): copies and reductions of dom go
    // to lane instead, flags are signalled and waited for there. nullptr: off.
    // kinds: which flags are of one kind (FlagKinds). waits false: no flag waits on the
    // lane even in a schedule without sends or receives (the stream only writes).
    // queued_only: a wait goes on the lane only once the flag's owner has queued the value
    // on its own lane (queued_note), so that work on the lane never waits for a peer's host.
    void chain(MemDomain *dom, MemDomain *lane, FlagKinds kinds = {}, bool waits = true, bool queued_only = false) {
        chain_dom_ = dom;
        chain_lane_ = lane;
        flag_kinds_ = kinds;
        chain_waits_ = waits;
        chain_queued_only_ = queued_only;
    }
    // Whether the current (or last) run was chained on a lane.
    bool chained() const { return run_.chained; }
    // Which steps a run chained on lane would queue there (1) and which stay with the
    // host (0), for schedule dumps; all 0 without a lane. Sets chain(dom, lane).
    std::vector<uint8_t> lane_plan(MemDomain *dom, MemDomain *lane, FlagKinds kinds = {}, bool waits = true);
    // Makes every step pending again, so that the schedule runs anew (a persistent
    // collective's next start, with its own numbering).
    void rewind();
    StepInfo info(StepId id) const;

private:
    enum class Kind : uint8_t { Nop, Copy, Reduce, Send, Recv, Signal, Wait, Poll };
    enum class State : uint8_t { Waiting, Started, Done };
    struct Step {
        Kind kind;
        State state;
        strata_dtype_t dtype;
        strata_op_t op;
        int peer;
        int tag;
        MemDomain *dom;
        void *dst;
        const void *src;
        size_t n;          // bytes (copy/send/recv) or element count (reduce)
        uint64_t *flag;
        uint64_t value;
        bool on_stream;  // signal: on the lane where chained (signal_on_stream)
        uint32_t dep_begin, dep_count;
        uint32_t src_begin, src_count;
        uint32_t dst_count;       // reduce: 0, one destination (dst); else that many in srcs_ after the sources
        const char *const *late;  // copy: src is an offset from *late (LateSrc)
        StepId cond;              // runs only if step cond's outcome is want (when())
        bool want, outcome;
        void *req;
        Ticket ticket;
    };
    StepId add(Step s, const Deps &deps);
    Status follow();
    StepId transfer(Kind kind, void *buf, size_t bytes, int peer, int tag, const Deps &deps, bool even_empty);
    Status advance(Step &s, P2PChannel &ch, bool *moved);
    Status pass(bool *moved);
    void abandon(P2PChannel &ch);
    void build_graph();
    void plan_lane(bool queued_sends = false);
    void choose_lane_steps();
    void choose_relaxed_waits(bool queued_sends);
    bool mark_due() const;
    bool queued_or_done(const Step &s) const;
    bool peer_queued(const Step &s) const;
    // A step of a branch its decision did not take (Schedule::when): it runs as a no-op.
    bool skipped_branch(const Step &s) const { return s.cond != kNoStep && steps_[s.cond].outcome != s.want; }
    bool host_needs(size_t from) const;
    Status queue(StepId id, bool *moved);
    Status issue_reduce(const Step &s, MemDomain &dom, Ticket *t);
    Status issue_chained(bool *moved);
    Status poll_batches(bool *moved);
    void release(StepId id);
    void lane_dep_met(StepId id);
    void lane_queued(StepId id);
    void queued_by_channel(StepId id);
    Status send_onto_lane(Step &s, P2PChannel &ch, bool *queued);
    void lane_step_done(StepId id);
    void drain_lane();
    void report_stall(const std::vector<StepId> &active) const;

    std::vector<Step> steps_;
    std::vector<StepId> deps_;
    std::vector<const void *> srcs_;
    std::vector<const char *const *> src_bases_;  // per srcs_ entry: LateSrc base or nullptr
    std::vector<PollFn> polls_;
    std::vector<const void *> late_srcs_;         // reduce operands resolved at start
    std::vector<void *> late_dsts_;               // reduce_multi_late destinations resolved at start
    StepId cond_ = kNoStep;
    bool cond_want_ = false;
    std::vector<std::pair<uint64_t *, StepId>> last_signal_;
    StepId entry_ = kNoStep;
    MemDomain *chain_dom_ = nullptr, *chain_lane_ = nullptr;
    bool chain_waits_ = true;
    bool chain_queued_only_ = false;
    FlagKinds flag_kinds_;
    Numbering num_;  // of the current run
    // The current run: its channel and watch, dependency counts, the steps started or
    // ready, how many are done, and how long it has made no progress.
    struct Run {
        P2PChannel *ch = nullptr;
        RunWatch *watch = nullptr;
        std::vector<uint32_t> pending, first_dependent, dependents, fill;  // kept: a rerun allocates nothing
        size_t graph_steps = SIZE_MAX, graph_deps = SIZE_MAX;  // first_dependent, dependents are of these
        std::vector<StepId> active, next;
        // Per pass: each flag a wait found below its value, with the least such value.
        std::vector<std::pair<const uint64_t *, uint64_t>> unreached;
        bool surely_unreached(const uint64_t *flag, uint64_t value) const {
            for (const auto &u : unreached)
                if (u.first == flag) return flag_reached(value, u.second);
            return false;
        }
        void note_unreached(const uint64_t *flag, uint64_t value) {
            for (auto &u : unreached)
                if (u.first == flag) {
                    if (!flag_reached(value, u.second)) u.second = value;  // value < u.second
                    return;
                }
            unreached.emplace_back(flag, value);
        }
        // Chained work (chain()): which steps go on the lane, the next one in build order
        // to queue, and the batches queued together, each with the ticket of its end.
        // lane_waits: no sends or receives, so flag waits may go on the lane and steps are
        // queued in build order (cursor); else in the order they become ready: unqueued
        // counts a lane step's dependencies neither done nor queued, lane_ready[lane_head,
        // end) are the lane steps ready to queue.
        bool chained = false, lane_waits = false;
        bool followed = false;  // the lane follows the application's stream (before its first work)
        std::vector<uint8_t> on_lane;
        // Without waits on the lane: the host steps that count a lane dependency as met
        // once it is queued (relaxed, see the top), and the lane steps not queued yet.
        std::vector<uint8_t> relaxed;
        // Sends whose copy the channel queued on the lane (P2PChannel::isend_queued):
        // out of the active steps until the batch after it completes. lane_sends in
        // queue order, [0, sends_batched) in a batch.
        std::vector<uint8_t> copy_queued;
        std::vector<StepId> lane_sends;
        size_t sends_batched = 0;
        bool sends_coming = false;  // a send became ready as its dependency was queued (mark_due)
        size_t lane_left = 0;
        size_t cursor = 0;
        std::vector<uint32_t> unqueued;
        std::vector<StepId> lane_ready;
        size_t lane_head = 0;
        struct Batch {
            Ticket end;
            size_t first, last;  // its steps: queued[first, last)
            size_t sends_first, sends_last;  // the sends whose copies it covers: lane_sends[...)
        };
        std::vector<StepId> queued;
        std::vector<Batch> batches;
        size_t batched = 0;  // queued[0, batched) are in a batch
        bool batch_works = false;  // queued[batched, end) or a send's copy gives the stream work (not only joins)
        bool batch_due = false;    // and a host step needs some of it done (mark_due)
        size_t done = 0;
        int idle = 0;
        double last_progress = 0;
        bool reported = false;
    } run_;
};

}  // namespace strata

#endif
