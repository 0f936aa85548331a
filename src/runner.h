/* SPDX-License-Identifier: BSD-3-Clause */
// src/runner.h - the runner: a collective call's life, from the C API's arguments
// (CollArgs) to its status: decided (handed back, set up, algorithm from the setting
// or the rules, coll_strata_check_args), built or reused, numbered and run (blocking)
// or queued (nonblocking, persistent), ended, counted and logged, or failed.
//
// src/api.cc is the C interface above it: argument checks, the C arguments mapped to
// CollArgs, then run_collective.
#ifndef STRATA_RUNNER_H
#define STRATA_RUNNER_H

#include <atomic>
#include <memory>
#include <string>

#include "algo/rules.h"
#include "args.h"
#include "call.h"
#include "queue.h"
#include "team.h"

namespace strata {

struct Algorithm;  // algo/algo.h

// A team as the core keeps it: the Team and the rules of coll_strata_rules_file,
// read by each rank when the team is created (Team is below the algorithms layer
// and cannot hold them). Every Team the core runs comes from strata_team_create.
struct CoreTeam final : Team {
    CoreTeam(int rank, int size, int node_key, const strata_transport_t &tp, const strata_config_t &cfg)
        : Team(rank, size, node_key, tp, cfg) {
        adopt_calls(std::unique_ptr<TeamCalls>(new CallQueue(*this)));
    }
    Rules rules;
    std::string rules_path;   // coll_strata_rules_file ("" when none)
    std::string rules_error;  // why this rank has none ("" when it read them)
    bool rules_said = false;  // the outcome of the agreement was logged
};

// How a call is made: blocking, or (with a request) nonblocking or persistent.
struct Start {
    CallInfo::Mode mode = CallInfo::Blocking;
    const strata_start_t *how = nullptr;
    strata_request_t **request = nullptr;
    // Open MPI's own call (strata_start_t::internal, or strata_stack_call for a blocking
    // one): alike on every rank, as the code path that makes it is. Set by run_collective.
    bool by_stack = false;
};

// What strata_stack_call said last on this thread (read by run_collective as a
// blocking call enters, before anything it does can make calls of the stack's).
void note_stack_call(bool yes);

// The team's calls: its queue, which CoreTeam made (Team knows only TeamCalls).
inline CallQueue &calls_of(Team &team) { return static_cast<CallQueue &>(team.calls()); }

// Reads coll_strata_rules_file for a new team (each rank alone; setup agrees on it).
void load_team_rules(CoreTeam &t, const char *path);

// The call's life (above); args as the C interface mapped them.
Status run_collective(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start = Start{});

// A call handed back to the previous component: counted, and said at verbose 2.
// coll_strata_check_args: every rank learns whether all passed the same call (size:
// else STRATA_ERR_TRUNCATE; type, op, root: else STRATA_ERR_ARG) and whether all had
// valid arguments (local), before anything moves. Waits (in a fiber, gives the thread
// back: agree_call.h runs it for calls that complete later).
// *all_host (when not null): whether every rank passed host_here (its buffers are host
// memory), agreed in the same round.
Status agree_call(Team &team, strata_coll_t coll, uint64_t size_sig, uint32_t meta_sig, bool pairs,
                  uint32_t all_pairs, Status local, const std::string &why, bool host_here = false,
                  bool *all_host = nullptr);

// A small call on a team in GPU memory asks whether every rank's buffers are host
// memory: where they are, the call goes to the replaced component, which moves a few
// host bytes at host speed, where the GPU path would copy them to the GPU and back.
// Asked in the call's agreement (coll_strata_check_args, not off): a blocking call
// makes it for this on a team that does not agree calls anyway (one node); a
// nonblocking or persistent one asks only where its team agrees every call (across
// nodes) and can hand a queued call back (Team::hands_back_queued), so that on one
// node its start queues GPU work without waiting for its peers (stream flags). From
// agreed values only: the team's memory, the call's size (alltoallv's, which differs
// by rank, is 0: never), the mode.
bool votes_host(const Team &team, size_t call_bytes, bool blocking);
// Whether this rank's buffers of the call are host memory (or it has none).
bool host_buffers_here(const CollArgs &a);
// Whether a call's node decides while it runs if every rank's buffers are host memory,
// and then reduces in the team's host slots instead of the GPU (runner.cc, build_call):
// a small allreduce or reduce_scatter (hier_rd: node_host_builder) on a one-node GPU
// team that no agreement hands back
// (votes_host: a nonblocking or persistent call there, or any with
// coll_strata_check_args off).
bool decides_on_host(const Team &team, const CallInfo &i, const Algorithm &alg);

Status hand_back(Team &team, strata_coll_t coll, CallInfo::Mode mode, size_t bytes, strata_handback_t why,
                 const char *detail = "");

}  // namespace strata

// The C handle of a nonblocking or persistent call.
struct strata_request {
    strata::Team *team = nullptr;
    std::unique_ptr<strata::Call> call;
    strata_start_t how{};
    bool persistent = false;
    std::atomic<bool> done{true};  // not started, or completed (set by whichever thread's pass completed it)
    strata::Status status = STRATA_OK;
};

namespace strata {
// Queues the request's call (a persistent request's start, too); it completes from a
// later progress (or at once).
void start_request(strata_request *r);
}  // namespace strata

#endif
