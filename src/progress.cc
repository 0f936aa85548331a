// SPDX-License-Identifier: BSD-3-Clause
// src/progress.cc - the process's teams with calls queued (progress.h).
#include "progress.h"

#include <algorithm>
#include <atomic>
#include <vector>

namespace strata {

namespace {
// The teams with calls queued, in this process. A pass over them holds g_teams_mu
// throughout and takes each team's lock only if it is free (try_lock), so a team's
// owner, which holds its team's lock whenever it is inside strata and takes
// g_teams_mu only after it, never waits for a pass that waits for it. A team leaves
// the list (when its queue empties, or at its destruction) under g_teams_mu, so no
// pass sees a team that is gone.
std::recursive_mutex g_teams_mu;
std::vector<TeamCalls *> g_teams;
// g_teams.size(), read without the lock: a progress call with nothing queued anywhere
// (most of Open MPI's progress loop) returns at once.
std::atomic<size_t> g_queued_teams{0};
// Queued calls begun and not yet ended, in any team.
std::atomic<int> g_running{0};
// Whether this thread is inside a pass (a transport's progress calling back).
thread_local bool tl_in_pass = false;
}  // namespace

void enlist(TeamCalls *q) {
    std::lock_guard<std::recursive_mutex> g(g_teams_mu);
    g_teams.push_back(q);
    g_queued_teams.store(g_teams.size());
}

void delist(TeamCalls *q) {
    std::lock_guard<std::recursive_mutex> g(g_teams_mu);
    auto it = std::find(g_teams.begin(), g_teams.end(), q);
    if (it != g_teams.end()) g_teams.erase(it);
    g_queued_teams.store(g_teams.size());
}

int progress_all(bool *idle) {
    *idle = true;
    if (g_queued_teams.load(std::memory_order_relaxed) == 0 || tl_in_pass) return 0;
    std::unique_lock<std::recursive_mutex> reg(g_teams_mu, std::try_to_lock);
    if (!reg.owns_lock() || g_teams.empty()) return 0;  // another thread's pass is on it
    InPass pass;
    // A pass may complete a team's last call (it leaves g_teams): walk a copy.
    static thread_local std::vector<TeamCalls *> teams;
    teams = g_teams;
    int completed = 0;
    for (TeamCalls *t : teams) {
        std::unique_lock<std::recursive_mutex> held(t->mutex(), std::try_to_lock);
        if (!held.owns_lock()) continue;  // its owner is inside strata: it progresses it
        bool team_idle = true;
        completed += t->progress_queue(&team_idle);
        *idle = *idle && team_idle;
    }
    return completed;
}

bool anything_queued() { return g_queued_teams.load() != 0; }

bool inside_pass() { return tl_in_pass; }
InPass::InPass() { tl_in_pass = true; }
InPass::~InPass() { tl_in_pass = false; }

void queued_call_begins() { g_running.fetch_add(1); }
void queued_call_ends() { g_running.fetch_sub(1); }
bool queued_calls_running() { return g_running.load() != 0; }

}  // namespace strata
