/* SPDX-License-Identifier: BSD-3-Clause */
// src/call.h - one collective call: its schedule, its memory, its numbers.
//
// A Team lives as long as its communicator (layout, shared memory, device regions,
// caches, settings); a Call lives as long as one collective call, or, for a
// persistent collective, as long as its request. A call owns what an algorithm
// builds and uses: the schedule, private scratch memory, the copies of this rank's
// buffers in the team's memory kind. (Bounce buffers belong to the channel: btl/p2p.h.)
//
// Numbers are relative. A builder takes segment numbers from 0 and tags from 0; the
// schedule runs with the call's numbering (Numbering: flag values + number << 32, tag
// slot number % Team::kTagCalls), so the same built schedule can run again as a later
// call: a persistent collective builds once and starts many times.
#ifndef STRATA_CALL_H
#define STRATA_CALL_H

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine.h"
#include "team.h"

namespace strata {

class BufferCopies;

// What the core decided for a call before building it: what it starts and ends with.
struct CallInfo {
    enum Mode { Blocking, Nonblocking, Persistent };
    Mode mode = Blocking;
    strata_coll_t coll = STRATA_COLL_ALLREDUCE;
    uint32_t sig = 0;               // what MPI requires to match, hashed (CallQueue::begin_call)
    bool sums_pairs = false;        // alltoallv: node peers also sum `pairs` (CallQueue::end_call)
    uint32_t pairs = 0;             // this rank's part of the node's per-pair sizes (runner.cc)
    int alg = -1;                   // position in the collective's table
    const char *alg_name = "";
    int rule_line = 0;              // the rules file's line that chose it (0: built-in)
    size_t bytes = 0;               // this rank's count x type, for the log
    size_t call_bytes = 0;          // the call's size as every rank sees it
    bool copied = false;            // this rank's buffers are copied (copies.h)
    bool quiet = false;             // Open MPI's own call: no per-call line (log_quiet)
    bool all_host = false;          // agreed: small, and host buffers on every rank (runner.h, votes_host)
    bool host_here = false;         // a node host decision's vote: this rank's buffers are host memory (runner.cc)
    bool on_host = false;           // the node decided so: the call ran in the team's host slots
    Status local = STRATA_OK;       // this rank fails the call when it starts
    std::string why;
};

class Call {
public:
    explicit Call(Team &team);
    ~Call();
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;

    Team &team() const { return team_; }

    // An empty schedule to build, no segment numbers taken, nothing mapped.
    void reset();
    // The call is numbered (from CallQueue::begin_call, as it starts): the built schedule
    // is pending again and runs as call `number` (a persistent collective's next start:
    // same steps, same buffers, the call's own flag values and tags).
    void set_number(uint64_t number);
    uint64_t number() const { return number_; }
    CallInfo info;
    // What the built schedule was built from (runner.cc: a blocking call whose key is
    // the same runs it again instead of building anew); empty after reset().
    std::vector<uint64_t> built_for;
    // Flag values and tags of this call's schedule, relative to 0, are shifted by these.
    Numbering numbering() const;
    Schedule &schedule() { return sched_; }
    // Runs the schedule as call number() (the team watches for peers' failures and the
    // deadline). A schedule may run again after set_number(n) with a later number.
    Status run();
    // The same in pieces (engine.h: Schedule::start, progress).
    Status start();
    Status progress(bool *finished, bool *idle, bool *moved = nullptr) {
        return sched_.progress(finished, idle, moved);
    }

    // ---- a call that completes later (nonblocking or persistent: CallQueue::submit)
    // What the core does once the schedule has ended with st (counts and logs the call,
    // makes a failure the team's); returns the call's status.
    std::function<Status(Status)> on_end;
    // Called once the call has completed, from the progress that completed it.
    std::function<void(Status)> on_complete;
    // A call queued before its team's setup (in steps) ended: decided when it reaches
    // the head of the queue, after setup (runner.cc): STRATA_OK serves it (built, on_end
    // set), STRATA_FALLBACK hands it back. Cleared once it is served.
    std::function<Status()> decide;
    // The call was counted as one at which the team asks again which ranks have a GPU
    // (Team::count_call): asked at the head of the queue, before decide.
    bool asks_gpus = false;
    // Asked at the head of the queue, after decide, each time the call is to start (a
    // persistent call: at every start) until *done (agree_call.h: the
    // coll_strata_check_args agreement, in steps). STRATA_OK starts the call; any other
    // status completes it with that status, neither numbered nor started, the team as
    // it was. nullptr: the call starts at once.
    std::function<Status(bool *done)> gate;
    bool pending() const { return pending_; }

    // Pipeline segments: n consecutive numbers, counted from 0 in each call.
    uint64_t take_segments(uint64_t n);
    // Numbers taken so far; a branch of the call (Schedule::when) that runs instead of
    // another one numbers its segments from where that one started.
    uint64_t segments_taken() const { return seg_seq_; }
    void number_segments_from(uint64_t first) { seg_seq_ = first; }
    // Tag of message `sub` of this call (sub < Team::kTagSubs).
    int tag(uint64_t sub) const { return static_cast<int>(sub % Team::kTagSubs); }

    // Step that completes once every local rank has finished segment seg - kSlotPairs,
    // so the slot pair segment seg uses may be overwritten (for the first ones: once every
    // local rank ended the previous call).
    StepId slots_free(uint64_t seg, const Deps &deps = {});
    // Step that completes once every local rank (but `except`) has set flag `which`
    // to at least value.
    StepId wait_all(int which, uint64_t value, int except, const Deps &deps = {});
    // For a call that takes no slots but whose node peers read this rank's buffers:
    // takes one segment number, signals DONE for it after deps, and returns the step
    // that completes once every local rank has, so that no rank returns before.
    StepId done_together(const Deps &deps);

    // Private memory of the team's domain; a pointer stays valid until the next call
    // of the same function with more bytes.
    char *scratch(size_t bytes);
    // A second private buffer, for an algorithm that composes another one (which
    // takes scratch() for itself). Same lifetime rule.
    char *scratch2(size_t bytes);
    // Private host memory, whatever the team's memory (a branch that runs on the host
    // on a GPU team: runner.cc, decides_on_host). Same lifetime rule.
    char *host_scratch(size_t bytes);
    // Copies of this rank's buffers in the team's memory kind (copies.h).
    BufferCopies &copies();

    // Zero-copy reads of node peers' buffers, as steps (call only where
    // team.zero_copy() said so, on every rank of the node, once per call): post buf
    // (this rank's buffer of the call, `bytes` long; source >= 0: only local rank
    // source's buffer is read), map every local peer's, agree on the node. Returns the
    // deciding step: its outcome is true when every rank of the node mapped, and then
    // peer(i, offset) reads local rank i's buffer in place; else the call goes through
    // the slots. Build both branches (Schedule::when); a rank must not return
    // before every local peer has read its buffer. out (optional): this rank's output
    // of the call, mapped the same way for peers that write into it (peer_out: the
    // fused node kernels); a rank must not return before every local peer has written
    // it.
    StepId map_peers(const void *buf, size_t bytes, int source = -1, void *out = nullptr);
    LateSrc peer(int local, size_t offset) const { return LateSrc{&peer_bufs_[size_t(local)], offset}; }
    LateSrc peer_out(int local, size_t offset) const { return LateSrc{&peer_outs_[size_t(local)], offset}; }
    // Every local rank's output at offset, in local order; this rank's own only with
    // mine (a kernel that writes into all of the node's outputs).
    std::vector<LateSrc> peer_outs(size_t offset, bool mine) const;
    // Whether the last run read node peers' buffers in place.
    bool mapped() const { return mapped_; }

    // Lets go of memory node peers may still have mapped, without freeing it (a peer
    // that did not say it unmapped at teardown).
    void abandon_memory();

private:
    struct Buffer {  // grow-only memory of one domain
        MemDomain *dom = nullptr;
        char *ptr = nullptr;
        size_t bytes = 0;
        char *reserve(MemDomain &d, size_t n);
        void drop();
        ~Buffer() { drop(); }
    };

    friend class CallQueue;
    Team &team_;
    // The channel its schedule was built for (Team::p2p() then): a persistent call made
    // on the host path keeps it if the team later moves to its GPU path.
    P2PChannel *p2p_;
    bool pending_ = false;  // submitted, not yet completed
    bool started_ = false;  // numbered and running (the head of the team's queue)
    uint64_t number_ = 0;
    uint64_t seg_seq_ = 0;
    bool mapped_ = false;
    std::vector<const char *> peer_bufs_;  // sized once per build: LateSrc bases point into it
    std::vector<const char *> peer_outs_;  // the same for the outputs (map_peers' out)
    Schedule sched_;
    Buffer scratch_, scratch2_, host_scratch_;
    std::unique_ptr<BufferCopies> copies_;
};

}  // namespace strata

#endif
