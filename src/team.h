/* SPDX-License-Identifier: BSD-3-Clause */
// src/team.h - a communicator as the core sees it: layout, channels, sequence numbers.
//
// Every rank of a communicator has one Team. Everything in it that drives a
// schedule (layout, call and segment numbers, settings) is identical on all
// ranks or on all ranks of a node, which is what keeps schedules matching.
#ifndef STRATA_TEAM_H
#define STRATA_TEAM_H

#include <algorithm>
#include <atomic>
#include <climits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "btl/channels.h"
#include "btl/exchange.h"
#include "btl/node_channel.h"
#include "btl/oob.h"
#include "btl/p2p.h"
#include "common.h"
#include "engine.h"
#include "fiber.h"
#include "mem/domain.h"
#include "progress.h"
#include "stats.h"
#include "topo/layout.h"

struct strata_team {};  // the C handle; the real object derives from it

namespace strata {

class Team : public strata_team, public RunWatch {
public:
    Team(int rank, int size, int node_key, const strata_transport_t &tp, const strata_config_t &cfg);

    // Collective: learns the layout and sets up shared memory, once. Returns
    // STRATA_OK when strata can run, STRATA_FALLBACK when every rank has agreed it
    // cannot (the reason was logged once), or an error. blocking_call: called inside a
    // blocking collective of the application (not from the communicator's creation),
    // where the team's own communicator can be made (open_private).
    Status ensure_setup(bool blocking_call);
    // ---- asking again which ranks have a GPU. A team on which not every rank had one
    // (made before the application chose its GPUs, as MPI_COMM_WORLD is) asks again at
    // its 2nd, 4th, 8th, ... call. count_call() counts one call, blocking or not (the
    // same calls on every rank: calls are collective and ordered) and says whether it
    // is one of those; asks_again() whether the team still has a question (agreed).
    bool count_call();
    bool asks_again() const { return recheck_gpus_ && setup_ != Setup::Failed; }
    // A nonblocking or persistent call must not wait at its start for the allgather:
    // the team goes to steps (stepped(): this call and every later one are queued
    // undecided), its own communicator begun now, in the application's order; the
    // question itself is asked when the call reaches the head of the queue
    // (start_asking_again), after every earlier call, so that its messages come in the
    // same order on every rank.
    void start_private_steps();
    // At the head of the queue, for a call counted as asking: the question in steps
    // (advance_setup runs it). False where the team has none (asks_again).
    bool start_asking_again();
    // A new team's first small calls (at most small_msg_size bytes, call_bytes as every
    // rank sees it) go back to the previous component, up to coll_strata_lazy_calls of
    // them, so that a communicator that lives for a few small calls costs no shared
    // memory setup. True: hand this call back. The same answer on every rank where the
    // call matches; under coll_strata_check_args never (its size is not agreed yet, and
    // a call handed back on some ranks only would go unchecked: the team sets up at
    // its first call instead, and the call is agreed).
    bool defer_setup(size_t call_bytes);
    // A nonblocking call came before setup (it was handed back): the next blocking call
    // sets the team up whatever its size, so that the nonblocking ones after it are
    // served. The same on every rank: calls are collective and ordered.
    void want_setup() { lazy_seen_ = cfg_.lazy_calls; }
    // A value that must be equal on every rank for schedules to match, which each
    // rank derives alone (the core: the hash of the rules file it read, algo/rules.h);
    // ok: this rank could derive it. Set before the first call. Setup agrees on it in
    // the agreement it makes anyway: afterwards same_everywhere() is true on every
    // rank exactly when every rank was ok with one value, and first_not_ok() is the
    // lowest rank that was not ok (INT_MAX: none), the one to say why.
    void expect_same(uint64_t value, bool ok) {
        same_value_ = value;
        same_ok_ = ok;
    }
    bool same_everywhere() const { return same_everywhere_; }

    // ---- setup in steps: a nonblocking or persistent call on a team never set up
    // starts its setup (the same ensure_setup, with the team's own communicator) in a
    // fiber whose waits give the thread back (src/fiber.h); the team's queue advances
    // it before its head call, and a blocking call runs it to its end. The same call
    // starts it on every rank: calls are collective and ordered, and a team is set up
    // otherwise only inside a blocking call or its creation.
    // counted: the call that starts it was counted already (count_call), as a nonblocking
    // call on a team set up is; its setup then asks no GPU question (asks_again() said no).
    void start_setup_steps(bool counted = false);
    // True once the setup in steps has ended (or none runs): the team's state is then
    // agreed, as after any setup.
    bool advance_setup();
    void finish_setup();
    // The team started its setup in steps: every nonblocking or persistent call it takes
    // from then on is queued undecided and decided at the head of its queue, so that a
    // call is handed back the same way on every rank, whichever saw setup end first.
    bool stepped() const { return stepped_; }
    bool never_set_up() const { return setup_ == Setup::NotYet && !stepped_; }
    int first_not_ok() const { return first_not_ok_; }

    const Layout &layout() const { return layout_; }
    const strata_config_t &config() const { return cfg_; }
    const strata_transport_t &transport() const { return tp_; }
    int rank() const { return rank_; }
    int size() const { return size_; }

    // Pipeline segments. Each local rank's region holds kSlotPairs slot pairs of two
    // slots of segment_bytes() each; segment g uses slot pair g % kSlotPairs (buffer parity).
    static constexpr int kSlotPairs = 2;
    // Whether the schedules run in GPU memory and the node count are agreed, so every
    // rank cuts the same segments.
    size_t segment_bytes() const { return segment_bytes(device()); }
    size_t segment_bytes(bool in_gpu) const {
        const size_t gpu = layout_.nnodes() == 1 ? cfg_.device_segment_size : cfg_.device_multinode_segment_size;
        return in_gpu && gpu != 0 ? gpu : cfg_.segment_size;
    }
    // Whole elements of es bytes per segment (at least one).
    size_t segment_elems(size_t es) const { return segment_bytes() / es ? segment_bytes() / es : 1; }
    char *slot(int local, uint64_t seg, int half) const;
    // Host slots for a GPU team's small calls whose buffers are host memory on every
    // rank of the node (runner.cc, build_call's host decision): segment g uses slot
    // g % kSlotPairs of host_call_bytes() in the host segment. A team whose slots are in
    // GPU memory keeps kSlotPairs of kHostCallSlot bytes per local rank there (one page;
    // a fixed size, since region sizes must match across the node); one whose host
    // segment has its full slots uses half 0 of them.
    static constexpr size_t kHostCallSlot = 2048;
    size_t host_call_bytes() const {
        return host_slots_ ? std::min(kHostCallSlot, segment_bytes(false)) : kHostCallSlot;
    }
    char *host_call_slot(int local, uint64_t seg) const;
    uint64_t *flag(int local, int which) const { return node_.flag(local, which); }
    // Which local rank's flag (and which of its flags) f is; false when none.
    bool flag_owner(const uint64_t *f, int *local, int *which) const;

    // Tags: a call's messages use tag slot (call number % kTagCalls), sub-tags 0 ..
    // kTagSubs - 1 within it (call.h); the last slot is for setup and failure notices.
    // Any number of calls may be outstanding: a rank runs a team's calls one after the
    // other, so it posts call n's receives (and sends call n's messages) before any of
    // call n + kTagCalls, which shares n's slot; and point-to-point messages from one
    // sender with one tag match in the order they were sent (MPI's non-overtaking
    // rule), so a message of call n + kTagCalls can never meet a receive of call n.
    static constexpr int kTagSubs = 4096;
    static constexpr uint64_t kTagCalls = STRATA_TAG_SPACE / kTagSubs - 1;
    static int control_tag(int sub) { return int((kTagCalls << 12) | uint64_t(sub)); }
    // Sub-tags of the control slot: failure notices 0 (team_calls.cc), agreements
    // 1 .. Agreements::kTags, the point-to-point channel's setup 4093, GPU regions 4094
    // and the shared segment's name 4095 (team.cc).
    static constexpr int kNoticeSub = 0;
    static constexpr int kAgreeSub = 1;

    // ---- the calls (src/queue.h, made by the runner; failures: src/team_calls.cc)
    // Every call that runs a schedule has a number, the same on every rank (CallQueue::
    // begin_call). Its flag values start at call_base().
    static constexpr uint64_t kCallSpan = uint64_t(1) << 32;  // flag values of one call
    uint64_t call_base() const { return call_seq_ << 32; }
    uint64_t call_number() const { return call_seq_; }
    // The next call number, for a call of coll (the messages name it).
    uint64_t number_call(strata_coll_t coll);
    // This rank is done with the current call: no mapped peer buffer is read any more,
    // its flags go to the end of the call.
    void close_call();
    // The team's calls, which it owns (and, at teardown, leaves the registry before
    // anything else goes, and lets go of their memory where a peer kept it mapped).
    void adopt_calls(std::unique_ptr<TeamCalls> calls) { queue_ = std::move(calls); }
    TeamCalls &calls() { return *queue_; }
    // Held by whoever works on the team: its owner for a whole call into strata (the C
    // API takes it), a pass for the team's queue. Recursive: an owner's wait makes
    // passes that include its own team.
    std::recursive_mutex &mutex() { return mu_; }
    // Set up and serving: a nonblocking call may only use a team in this state (setup
    // agrees among all ranks, which a nonblocking call must not wait for).
    bool ready() const { return setup_ == Setup::Ready && !broken(); }
    // Whether this team's calls are agreed before they run (coll_strata_check_args):
    // always, never, or on a team set up across nodes, where the node's own signature
    // check at a call's end cannot see every rank. From settings and the agreed layout
    // only: the same on every rank.
    bool agrees_calls() const {
        return cfg_.check_args == STRATA_CHECK_ARGS_ON ||
               (cfg_.check_args == STRATA_CHECK_ARGS_NODES && setup_ == Setup::Ready && layout_.nnodes() > 1);
    }
    // agrees_calls(), or it may once setup (not ended yet) has told the layout.
    bool may_agree_calls() const {
        return agrees_calls() || (cfg_.check_args == STRATA_CHECK_ARGS_NODES && setup_ == Setup::NotYet);
    }
    // While the team's private communicator is being made (open_private) every call on
    // it is handed back: the stack makes it with the communicator's own collectives,
    // whose progress may run on any thread (read without the team's lock).
    bool opening_private() const { return opening_private_.load(std::memory_order_acquire); }
    // Whether a call handed back at the head of the queue can run: the glue starts it on
    // the team's own communicator (made when due, own_comm_due: at setup, in a setup in
    // steps, or at a later call; never for a one-node team whose tags stay far from the
    // stack's), or the transport makes none. Alike on every rank where a
    // queued call is decided: a blocking call drains the queue before it makes it.
    bool hands_back_queued() const { return private_ || tp_.open_private == nullptr; }
    // Whether this call must move the team's messages to its own communicator: not made
    // yet, and the team spans nodes (a receive of failure notices stays posted between
    // its calls) or the stack says its own tags could come near strata's
    // (strata_transport_t::own_comm_due).
    bool own_comm_due() const {
        return !private_ && tp_.open_private != nullptr && tp_.private_done != nullptr &&
               (layout_.nnodes() > 1 || tp_.own_comm_due == nullptr || tp_.own_comm_due(tp_.ctx) != 0);
    }

    // This rank fails the current call (begun or not): node peers see it in the shared
    // segment at once, ranks on other nodes by a notice; the team takes no more calls.
    // call: the number of the call that fails (0: the current one; a failure before
    // the next call is numbered, in its setup, passes call_seq + 1).
    Status fail_call(Status st, const std::string &why, uint64_t call = 0);
    bool broken() const { return failed_call_ != 0; }
    // broken(), or a peer failed a call that ended here without an error (it hears of
    // its own failure first; this rank learns of it before its next call): its peers
    // hand every later call back, and so does this rank from now on (said once, at
    // level 0, since this rank saw no error). Called before a call is served.
    bool check_broken();
    // The current call failed because a peer had failed an earlier one: the peers ran
    // this call in the previous component (they were broken already), so this rank
    // may run it there too, where its inputs are intact.
    bool peers_ran_it_elsewhere() const { return failed_call_ != 0 && behind_call_ == call_seq_; }
    // The team's agreements (btl/exchange.h: over the wire, numbered) and how its
    // blocking exchanges wait: progressing the stack and other teams' queued calls,
    // under coll_strata_timeout. Inside a setup in steps a wait gives the thread back
    // instead (Fiber::yield). Setup agrees through them, and so does the runner
    // (coll_strata_check_args).
    Agreements &agreements() { return oob_.agreements; }
    Waiter waiter();
    const std::string &last_error() const { return last_error_; }
    void set_last_error(const std::string &e) { last_error_ = e; }
    const std::string &first_failure() const { return failure_; }
    // One round of waiting: the transport's progress (which moves the requests that
    // test() only looks at, and runs strata_progress), or without one every queued
    // call of the process, then a yield.
    void progress_others();
    // RunWatch: peers' failures and the deadline, while a schedule of this team waits.
    Status idle(const Schedule &s, const std::vector<StepId> &waiting, double stalled_seconds) override;
    // RunWatch: a chained run is given up and its lane drained: node peers read that
    // this call failed (kFlagFailed) before any flag is raised for the lane.
    void giving_up() override;
    // After a chained run completed: a node peer that gave up this call may have raised
    // flags that let this rank's run through unfed (Schedule::drain_lane), so a peer's
    // failure of this call (or an earlier one) ends it with STRATA_ERR_PEER.
    Status check_chained_run();
    // Which node flags are of one kind, for the lane's choice of waits (engine.h).
    FlagKinds flag_kinds() const {
        const uintptr_t first = reinterpret_cast<uintptr_t>(flag(0, 0));
        return {first, size_t(reinterpret_cast<uintptr_t>(flag(0, 1)) - first) * size_t(kFlagCount)};
    }
    // The earliest call up to this one that a node peer (its flag) or a rank on another
    // node (a notice) failed in: *failed (0: none), who and how it was heard of.
    bool peer_failed(uint64_t *failed, int *who, const char **how);
    // This rank heard of that failure in the current call: the call ends with
    // STRATA_ERR_PEER (stuck: what this rank waited for, if anything).
    Status peer_failure(uint64_t call, int rank, const char *how, const std::string &stuck);

    // Where this team's schedules run: GPU memory on a device team (every rank has
    // a GPU, IPC set up among local ranks), else host memory. A rank stages any of
    // its buffers that are not of that kind (copies.h).
    bool device() const { return dom_ != nullptr; }
    MemDomain &domain() const { return dom_ ? *dom_ : host_domain(); }
    // The stream of this team's own that its schedules chain their node work on, with
    // the flags signalled there (engine.h), or nullptr: every rank's GPU has stream
    // memory operations and coll_strata_stream_flags is not 0 (agreed). lane_waits():
    // flags are waited for there too (auto on every rank), else by the host (writes).
    MemDomain *lane() const { return lane_.get(); }
    bool lane_waits() const { return lane_waits_; }
    // With lane_waits(): the lane waits only for a flag value its peer has queued on its
    // own lane already (auto), not for one it may never queue until its host acts (eager).
    bool waits_queued_only() const { return waits_queued_only_; }
    // Point-to-point channels (btl/p2p.h): wire() is the glue's transport, which setup,
    // agreements and failure notices use; channel() is the kind setup chose from the
    // registry (btl/channels.h; the wire itself unless another was chosen); p2p() is
    // what the team's schedules send over: on a device team whose channel cannot touch
    // GPU memory, the bounce channel over it.
    P2PChannel &wire() { return wire_; }
    P2PChannel &channel() { return chan_ ? *chan_ : static_cast<P2PChannel &>(wire_); }
    P2PChannel &p2p() { return bounce_ ? static_cast<P2PChannel &>(*bounce_) : channel(); }

    // Whether a call of `bytes` (the call's size, the same on every rank) reads node
    // peers' buffers in place where it can: on a device team with the IPC cache on and
    // more than one rank on the node, above coll_strata_zero_copy_size (below it the
    // exchange is taken to cost more than the copy it saves). Agreed on the node: a
    // setting that must be the same on every rank.
    bool zero_copy(size_t bytes) const;
    // Zero-copy reads of node peers' buffers in call n (call only where zero_copy()
    // said so, on every rank of the node; Call::map_peers makes them steps). post_buffer
    // posts buf, this rank's buffer of the call (`bytes` long; 0: nothing to read;
    // source >= 0: only local rank source's buffer is read, the others post nothing);
    // open_peers, once every local rank has posted, maps every local peer's buffer
    // through the cache into (*bufs)[i]; all_opened, once every local rank has opened,
    // says whether every rank of the node could (the same answer on all of them).
    // If not, the call copies through the slots.
    // out (optional, the same on every rank of the node): this rank's output as well,
    // mapped into (*outs)[i].
    Status post_buffer(uint64_t n, const void *buf, size_t bytes, int source, const void *out = nullptr);
    Status open_peers(uint64_t n, std::vector<const char *> *bufs, std::vector<const char *> *outs = nullptr);
    bool all_opened(uint64_t n) const;

    // A call served with algorithm alg of coll's table (named name): counted, and
    // remembered as the last one.
    void count_call(strata_coll_t coll, int alg, const char *name) {
        ++calls_[coll][alg];
        count(stats().served[coll][alg]);
        last_algorithm_ = name;
    }
    // A call handed back to the previous component, and why: counted here (the
    // verbose-1 summary) and for the process (the performance variables).
    void count_handback(strata_handback_t why) {
        ++handed_back_[why];
        count(stats().handed_back[why]);
    }
    uint64_t handed_back(strata_handback_t why) const { return handed_back_[why]; }
    const char *last_algorithm() const { return last_algorithm_; }
    uint64_t calls(strata_coll_t coll, int alg) const { return calls_[coll][alg]; }

private:
    // The node's host segment: slots in it unless host_slots_ is false.
    Status setup_shm(std::string *why);
    Status take_host_slots();
    Status setup_failed(Status st, const std::string &why);
    void raise_flags(uint64_t value);
    Status setup_device(std::string *why);
    void release_device();
    int open_lane();
    void close_lane();
    size_t host_region_bytes() const;  // slots of one local rank in the host segment
    int shm_failure_mark(Status local) const;
    Status shm_fell_back(int first_failed, Status local);
    Status agree_device(bool gpu_everywhere);
    // The channel kind every rank agreed on (kind; first_why: the lowest rank that could
    // not have the one the setting asked for, which says why), connected on every rank
    // or, failing that anywhere, the transport channel everywhere.
    Status setup_channel(int kind, uint32_t team_id, int first_why, const std::string &why);
    Status claim_id(uint32_t proposed);  // team_id_: agreed and claimed on every rank (0: none)
    void drop_channel();                 // back to the wire, the id released
    // Moves the team's messages to a communicator of their own (strata_transport_t::
    // open_private), once, at the same call on every rank when due (a blocking call, or
    // in steps behind a nonblocking one): every later message is out of reach of
    // anything else the job sends. A no-op where the transport has none.
    Status open_private();
    void log_ready(const char *when);  // the "team ready" line, verbose 1
    // ensure_setup for a call already counted (doubling: count_call() said so).
    Status set_up(bool blocking_call, bool doubling);
    void run_steps(std::function<void()> body);  // a fiber of setup steps, its first stretch run now

    int rank_, size_, node_key_;
    strata_transport_t tp_;
    strata_config_t cfg_;
    // Off: declined for now (no GPU anywhere, host buffers off); Failed: for good.
    enum class Setup { NotYet, Ready, Off, Failed } setup_ = Setup::NotYet;
    uint64_t setup_calls_ = 0;
    std::unique_ptr<Fiber> steps_;  // the setup in steps, while it runs
    bool stepped_ = false;
    int lazy_seen_ = 0;
    bool recheck_gpus_ = false;  // not every rank had a GPU: ask again at calls 2, 4, 8, ...
    bool private_ = false;       // messages go over the team's own communicator
    bool host_slots_ = true;     // the host segment has slots (not a GPU team's)
    std::atomic<bool> opening_private_{false};
    uint64_t same_value_ = 0;    // expect_same()
    bool same_ok_ = true, same_everywhere_ = false;
    int first_not_ok_ = INT_MAX;
    Layout layout_;
    NodeChannel node_;  // slots, flags, mailboxes, GPU regions, mapped peers' buffers
    MemDomain *dom_ = nullptr;  // the GPU's domain on a device team
    bool direct_ = false;       // device pointers go straight to point-to-point
    TransportChannel wire_;
    OutOfBand oob_;  // agreements over wire_ (setup, the GPU question, coll_strata_check_args), failure notices
    std::unique_ptr<P2PChannel> chan_;       // the registry's channel, when not the wire
    uint32_t team_id_ = 0;                   // claimed at setup for chan_ (ChannelSetup::team; 0: none)
    std::unique_ptr<BounceChannel> bounce_;  // device team, !direct_
    LanePtr lane_;                  // device team with stream flags (lane())
    bool lane_waits_ = false;       // and waits on the lane (lane_waits())
    bool waits_queued_only_ = false;  // waits_queued_only()
    void *lane_flags_ = nullptr;    // the flags' pages registered for the lane
    uint64_t device_tries_ = 0;  // setup_device calls so far (kFlagClosed counts them)
    uint64_t call_seq_ = 0;
    strata_coll_t coll_ = STRATA_COLL_ALLREDUCE;  // of the current call, for messages
    uint64_t failed_call_ = 0;   // the call this rank failed in (0: none)
    uint64_t behind_call_ = 0;   // a call this rank failed on hearing of an earlier call's failure
    std::string last_error_, failure_;
    // Failure notices from other nodes (oob_.notices: one receive from any rank kept posted).
    uint64_t noticed_call_ = 0;  // earliest call a notice said some rank failed in (0: none)
    int noticed_rank_ = -1;
    void post_inbox();
    void poll_inbox();
    void close_inbox();
    // "no progress for N s<setting>: waiting in step S for rank R (...)"
    std::string describe_wait(const Schedule &s, const std::vector<StepId> &waiting, double stalled,
                              const char *setting) const;
    std::string where() const;
    std::unique_ptr<TeamCalls> queue_;  // its calls (adopt_calls)
    std::recursive_mutex mu_;
    uint64_t calls_[STRATA_COLL_COUNT][kMaxAlgorithms] = {};
    uint64_t handed_back_[STRATA_HANDBACK_COUNT] = {};
    const char *last_algorithm_ = nullptr;
public:
    // STRATA_SCHEDULE_DUMP=DIR: the first schedule of each (collective, algorithm,
    // size) this team builds goes to DIR/schedule.RANK.jsonl (perf/strata-model reads it).
    void dump_schedule(Schedule &s, strata_coll_t coll, const char *alg, size_t bytes);
private:
    std::vector<std::string> dumped_;

public:
    ~Team();
    Team(const Team &) = delete;
    Team &operator=(const Team &) = delete;
};

}  // namespace strata

#endif
