/* SPDX-License-Identifier: BSD-3-Clause */
// src/progress.h - the process's teams with calls queued, and one pass over them.
//
// A team's calls (src/queue.h) enlist here while any is queued; strata_progress, a
// progress thread and every wait of strata make passes over them (MPI's progress
// rule: a rank blocked on one communicator still advances the others). It sits below
// Team, so that a team's waits (setup, agreements) can make passes too without Team
// knowing the queue.
#ifndef STRATA_PROGRESS_H
#define STRATA_PROGRESS_H

#include <cstddef>
#include <mutex>

namespace strata {

// A team's calls as its Team and a pass see them (CallQueue implements it; the Team
// owns it, so that its teardown keeps the order below).
class TeamCalls {
public:
    virtual ~TeamCalls() = default;
    // Held by whoever works on the team (Team::mutex).
    virtual std::recursive_mutex &mutex() = 0;
    // One pass over the team's queue: starts its head, progresses it, completes what
    // ended. Returns how many completed; *idle: none moved.
    virtual int progress_queue(bool *idle) = 0;
    // The team goes: it leaves the registry (said once if calls are still queued).
    virtual void leave() = 0;
    // Lets go of the calls' memory unfreed: a node peer may still have it mapped.
    virtual void abandon_memory() = 0;
};

// The first call of q's team is queued / its last one completed (delist: a no-op
// when q is not enlisted).
void enlist(TeamCalls *q);
void delist(TeamCalls *q);
// One pass over the queued calls of every team of the process. Returns how many
// completed; *idle: none moved for a while (the caller may yield). A call from inside
// a pass (a transport's progress calling back), or while another thread makes a pass,
// does nothing; a team whose owner is inside strata is left to it.
int progress_all(bool *idle);
// Whether any team of the process has calls queued.
bool anything_queued();

// Whether this thread is inside a pass; InPass marks it for its scope.
bool inside_pass();
struct InPass {
    InPass();
    ~InPass();
    InPass(const InPass &) = delete;
    InPass &operator=(const InPass &) = delete;
};

// Queued calls begun and not yet ended, in any team.
void queued_call_begins();
void queued_call_ends();
bool queued_calls_running();

}  // namespace strata

#endif
