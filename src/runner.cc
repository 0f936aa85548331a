// SPDX-License-Identifier: BSD-3-Clause
// src/runner.cc - the runner: a call's life from its arguments to its status (runner.h).
#include "runner.h"

#include <climits>
#include <mutex>
#include <new>
#include <vector>

#include "agree_call.h"
#include "algo/algo.h"
#include "algo/builders.h"
#include "collectives.h"
#include "copies.h"
#include "mem/classify.h"
#include "mem/device.h"
#include "mem/domain.h"

namespace strata {

namespace {
// One of the stack's own calls (Open MPI building a communicator): never agreed (agree_call.h).
bool stack_call(const Start &s) { return s.how != nullptr && s.how->internal; }

thread_local bool t_blocking_stack_call = false;

// FNV-1a over what MPI requires to match on every rank.
struct Hash {
    uint64_t h = 1469598103934665603ull;
    void add(uint64_t v) {
        for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
    }
};

// alltoallv's per-pair sizes: what rank i sends rank j must be what j receives from
// i, which no rank can see alone. Each rank adds h(i, j, bytes) for its sends and
// subtracts it for its receives, over the peers `among` takes; summed over those
// ranks the terms cancel exactly where every pair agrees (else the sum is 0 by chance
// only, 1 in 2^32). Summed by the agreement over all ranks, or by end_call over a
// node's ranks with the pairs inside the node.
template <typename Among>
uint32_t pair_sig(const Team &team, const CollArgs &a, Among among) {
    auto h = [](int from, int to, size_t bytes) {
        Hash x;
        x.add(uint64_t(from));
        x.add(uint64_t(to));
        x.add(bytes);
        return uint32_t(x.h ^ (x.h >> 32));
    };
    uint32_t sum = 0;
    const int me = team.rank();
    for (int r = 0; r < team.size(); ++r) {
        if (!among(r)) continue;
        sum += h(me, r, a.send_counts[r]);
        sum -= h(r, me, a.counts[r]);
    }
    return sum;
}

// The size of the call (count x type signature, per-rank sizes where MPI makes them
// equal everywhere) and the rest that must match (type, op, root).
void signature(strata_coll_t coll, const Team &team, const CollArgs &a, uint64_t *size_sig, uint32_t *meta_sig) {
    const Collective &c = collective(coll);
    Hash sz, meta;
    sz.add(uint64_t(coll));
    sz.add(c.is(kPairs) && !a.uniform ? 1 : 0);  // alltoallv: its pairs are agreed apart
    if (c.is(kPerRankCounts)) {
        for (int r = 0; r < team.size(); ++r) sz.add(a.counts[r]);
    } else if (!c.is(kPairs) || a.uniform) {
        sz.add(c.is(kPairs) ? a.counts[0] : a.count);
    }
    sz.add(c.is(kReduces) ? strata_dtype_size(a.dtype) : 1);
    meta.add(c.is(kReduces) ? uint64_t(a.dtype) : 0);
    meta.add(c.is(kReduces) ? uint64_t(a.op) : 0);
    meta.add(c.is(kRooted) ? uint64_t(a.root) : 0);
    *size_sig = sz.h;
    *meta_sig = uint32_t(meta.h ^ (meta.h >> 32));
}
}  // namespace

// The size of a call as every rank sees it (alltoallv: 0, its sizes differ by rank).
size_t call_bytes(strata_coll_t coll, const Team &team, const CollArgs &a) {
    return collective(coll).call_bytes(a, team.size());
}

// Each rank reads the file alone; setup agrees on its hash (Team::expect_same), and
// a team whose ranks disagree, or where one could not read it, uses the built-in
// rules everywhere. Without a file every rank holds the same (empty) rules.
void load_team_rules(CoreTeam &t, const char *path) {
    bool ok = true;
    t.rules_path = path ? path : "";
    if (path != nullptr) ok = load_rules(path, &t.rules, &t.rules_error) == STRATA_OK;
    t.expect_same(t.rules.hash(), ok);
}

namespace {

// Once per team, after the setup that agreed on the rules: the lowest rank that could
// not read them says why, rank 0 says whether the team uses them. A warning is given
// once per process, not for every communicator.
void say_rules(CoreTeam &t) {
    static std::atomic<bool> warned{false};
    t.rules_said = true;
    const char *path = t.rules_path.empty() ? "none" : t.rules_path.c_str();
    if (t.same_everywhere()) {
        if (t.rank() == 0 && !t.rules_path.empty())
            log(1, "rules from %s: %zu line(s), hash %016llx, the same on every rank", path, t.rules.size(),
                (unsigned long long)t.rules.hash());
        return;
    }
    if (t.first_not_ok() == t.rank() && !warned.exchange(true))
        warn("rules file unreadable", "coll_strata_rules_file: %s; every rank uses the built-in rules",
             t.rules_error.c_str());
    else if (t.first_not_ok() == INT_MAX && t.rank() == 0 && !warned.exchange(true))
        warn("rules differ", "coll_strata_rules_file: the rules differ between ranks (rank 0 read %s, hash %016llx); "
                             "every rank uses the built-in rules",
             path, (unsigned long long)t.rules.hash());
}

// The algorithm for a call the settings leave open: the first matching line of the
// rules file, else of the built-in host rules (host-memory teams, host_handback), else
// the table's built-in rule. Agreed: the rules are the same on every rank (setup, or
// compiled in) and so is all they look at (call_bytes, layout, the team's memory).
// *rule: the line that chose (nullptr: the table's rule). A rule's segment size is not
// applied (docs/rules.md). kHandBackAlg: the rule hands the call back (kHandBack).
constexpr int kHandBackAlg = -2;
int choose_algorithm(const CoreTeam &t, strata_coll_t coll, const AlgorithmTable &table, const CollArgs &a,
                     const Rule **rule) {
    const Rules *const sources[] = {t.same_everywhere() ? &t.rules : nullptr,
                                    !t.device() && t.config().host_handback ? &builtin_host_rules() : nullptr};
    *rule = nullptr;
    for (const Rules *rules : sources) {
        if (rules == nullptr || rules->empty()) continue;
        *rule = rules->match(coll, call_bytes(coll, t, a), t.layout().nnodes(), t.layout().max_local_size(),
                             t.device());
        if (*rule != nullptr)
            return (*rule)->algorithm == kHandBack ? kHandBackAlg : table.find((*rule)->algorithm.c_str());
    }
    return table.find(table.choose(t, a));
}

}  // namespace

namespace {
const char *mode_note(CallInfo::Mode m) {
    return m == CallInfo::Nonblocking ? ", nonblocking" : m == CallInfo::Persistent ? ", persistent" : "";
}

// The bytes of a served call, by the path its node part took (strata.h: strata_stat_t);
// bytes sent point-to-point are counted where they are sent (the engine).
void count_bytes(const Team &team, const Call &call) {
    const CallInfo &i = call.info;
    if (call.mapped())
        count(STRATA_STAT_BYTES_IN_PLACE, i.bytes);
    else if (team.layout().my_local_size() > 1)
        count(STRATA_STAT_BYTES_SLOTS, i.bytes);
    if (i.copied && !i.on_host) count(STRATA_STAT_BYTES_STAGED, i.bytes);
}

// The end of a call whose schedule ran with outcome st: a failure becomes the team's
// (its peers hear of it); else the call ends on the node, is counted and logged.
Status finish_call(Team &team, Call &call, Status st) {
    const CallInfo &i = call.info;
    if (st != STRATA_OK)
        return team.broken() ? st : team.fail_call(st, std::string(i.alg_name) + ": " + status_name(st));
    // Only a lane that waits for flags can have been let through by a peer's drain
    // (engine.cc, drain_lane): at writes the host waits, as on the host path.
    if (call.schedule().chained() && team.lane_waits()) STRATA_CHECK(team.check_chained_run());
    STRATA_CHECK(calls_of(team).end_call());
    team.count_call(i.coll, i.alg, i.alg_name);
    count_bytes(team, call);
    const bool quiet = log_quiet();  // a queued call may end in another call's pass
    set_log_quiet(i.quiet);
    char from_rule[48] = "";
    if (i.rule_line && team.config().verbose >= 2) snprintf(from_rule, sizeof from_rule, " (rules file line %d)", i.rule_line);
    log(2, "%s: %zu bytes, %d node(s) x %d rank(s), algorithm %s%s%s%s%s%s", strata_coll_name(i.coll), i.bytes,
        team.layout().nnodes(), team.layout().max_local_size(), i.alg_name, from_rule,
        team.device() && !i.on_host ? " in GPU memory" : "",
        call.mapped() ? ", local peers' buffers read in place (IPC)" : "",
        i.on_host              ? ", in the node's host slots (host buffers on every rank)"
        : !i.copied            ? ""
        : team.device()        ? ", host buffers staged through the GPU"
                               : ", device buffers staged through host",
        mode_note(i.mode));
    set_log_quiet(quiet);
    return STRATA_OK;
}

// The algorithm's schedule, between the copies of this rank's buffers in (a rank's
// buffers that are not of the team's memory kind are copied: copies.h) and out. The
// schedule is the one every rank builds, whatever its buffers are.
//
// A call that the node decides on host memory (decides_on_host) is built twice: the
// algorithm above, and the node's host form (build_allreduce_node_host), each a
// branch of a first step, the decision (Schedule::when). A rank whose buffers are
// device memory decides "not on host" at once, so its call starts whole (a chained
// call is queued at its start); a rank on host buffers waits, in the schedule, for
// every node peer's signature of the call (CallQueue::node_on_host), whose bit 0 is
// each rank's vote. Every rank of the node reads the same votes, or decides alone that
// its own vote is "no", so every rank takes the same branch.
Status build_call(Team &team, Call &call, const Algorithm &alg, const CollArgs &args) {
    CallInfo &i = call.info;
    Schedule &s = call.schedule();
    StepId decided = kNoStep;
    const uint64_t first_segment = call.segments_taken();
    Schedule::SignalOrder first_signals;
    if (decides_on_host(team, i, alg)) {
        first_signals = s.signal_order();
        CallQueue &queue = calls_of(team);
        decided = s.poll([&call, &queue, since = 0.0, run = uint64_t(0)](bool *done, bool *outcome) mutable {
            if (run != call.number()) since = 0;  // a persistent call's next start
            run = call.number();
            bool yes = false;
            *done = true;
            if (call.info.host_here) STRATA_CHECK(queue.node_on_host(&since, done, &yes));
            *outcome = call.info.on_host = *done && call.info.host_here && yes;
            return STRATA_OK;
        });
        s.when(decided, false);
    }
    CollArgs work = args;
    BufferCopies &copies = call.copies();
    STRATA_CHECK(copies.enter(i.coll, team.rank(), team.size(), team.device() ? &team.domain() : nullptr, &work));
    i.copied = copies.active();
    // Everything the algorithm builds starts after the copies in (node peers may read
    // a copy in place once it is posted: Call::map_peers posts after them too).
    s.start_after(copies.copy_in(s));
    STRATA_CHECK(alg.build(call, work));
    if (i.copied) copies.copy_out(s, {s.join_all()});
    if (decided != kNoStep) {
        // Branches do not nest: the algorithm must have left the decision's open.
        if (s.branch() != decided) return fail(STRATA_ERR_INTERNAL, "a node host decision around a branching algorithm");
        // Built last, numbered and ordered as if the GPU branch were not: its flags'
        // signals do not follow the GPU branch's (which would put them on the lane).
        s.start_after(kNoStep);
        s.when(decided, true);
        call.number_segments_from(first_segment);
        s.restore_signal_order(first_signals);
        STRATA_CHECK(node_host_builder(i.coll, alg.build, false)(call, args));  // not in place: decides_on_host
        s.always();
    }
    team.dump_schedule(s, i.coll, alg.name, i.call_bytes);
    return STRATA_OK;
}
}  // namespace

// Agreed on the node: the collective, the team's memory and layout, the algorithm,
// the size and the mode are (a peer that passed another size sees the signatures
// differ, and its node stays on the GPU: CallQueue::node_on_host), and so are the
// settings votes_host reads. The algorithms that have a host form never branch
// themselves where it applies (build_call): bcast's, allgather's and alltoall's branch
// on reading peers' buffers in place, which they do only above zero_copy_size (of the
// call's bytes, agreed), which a small call may pass where that setting is lower.
bool decides_on_host(const Team &team, const CallInfo &i, const Algorithm &alg) {
    return team.ready() && team.device() && team.layout().nnodes() == 1 && i.call_bytes > 0 &&
           i.call_bytes <= team.config().small_msg_size &&
           node_host_builder(i.coll, alg.build, team.zero_copy(i.call_bytes)) != nullptr &&
           !votes_host(team, i.call_bytes, i.mode == CallInfo::Blocking);
}

// What a blocking call's schedule is built from besides the team's fixed state: the
// algorithm, the arguments (per-rank arrays by value), where this rank's buffers
// live, and the team's memory, channel and zero-copy choice. A blocking call whose
// key is its predecessor's runs the predecessor's schedule again (numbered anew, as a
// persistent call's next start), which saves the build: most of a small call's cost.
// Whether a rank reuses is its own affair (the schedule is the same either way),
// except for an algorithm that exchanges with peers while it builds, which is always
// built: its exchange must happen on every rank.
void build_key(Team &team, const Algorithm &alg, int index, strata_coll_t coll, const CollArgs &a,
               std::vector<uint64_t> *key) {
    key->clear();
    if (alg.exchanges_at_build || a.local != STRATA_OK) return;
    MemDomain *gpu = team.device() ? &team.domain() : nullptr;
    const auto ptr = [](const void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); };
    *key = {uint64_t(coll), uint64_t(index), ptr(a.sendbuf), ptr(a.recvbuf), a.count, uint64_t(a.dtype),
            uint64_t(a.op), uint64_t(uint32_t(a.root)), uint64_t(a.in_place) | uint64_t(a.uniform) << 1,
            ptr(gpu), ptr(&team.p2p()), uint64_t(team.zero_copy(call_bytes(coll, team, a))),
            BufferCopies::plan_key(a.sendbuf, gpu), BufferCopies::plan_key(a.recvbuf, gpu)};
    for (const size_t *v : {a.counts, a.displs, a.send_counts, a.send_displs}) {
        key->push_back(v != nullptr);
        if (v != nullptr) key->insert(key->end(), v, v + team.size());
    }
}

// The C handle's call queued (runner.h).
void start_request(strata_request *r) {
    r->done = false;
    r->status = STRATA_OK;
    calls_of(*r->team).submit(*r->call);
    calls_of(*r->team).kick();
}

namespace {

// The request of a nonblocking or persistent call (owned, ready to queue): it takes the
// call, completes when the call does, and starts at once unless persistent. False with
// no memory for it: the caller still queues the call to fail, since its peers queue
// theirs (and owned keeps it).
bool issue_request(Team &team, const Start &start, std::unique_ptr<Call> &owned) {
    strata_request *r = new (std::nothrow) strata_request;
    if (r == nullptr) return false;
    r->team = &team;
    r->how = start.how ? *start.how : strata_start_t{};
    r->persistent = start.mode == CallInfo::Persistent;
    r->call = std::move(owned);
    // The callback first: a caller that sees the request done (strata_request_test)
    // sees what its callback did.
    r->call->on_complete = [r](Status st) {
        r->status = st;
        if (r->how.complete) r->how.complete(r->how.ctx, st);
        r->done = true;
    };
    *start.request = r;
    if (!r->persistent) start_request(r);
    return true;
}
}  // namespace

// A call handed back to the previous component: counted, and one line at verbose 2 that
// says why in plain words (the glue adds none for it). detail: what the words leave
// out ("" for nothing).
Status hand_back(Team &team, strata_coll_t coll, CallInfo::Mode mode, size_t bytes, strata_handback_t why,
                 const char *detail) {
    team.count_handback(why);
    log(2, "%s: %zu bytes: handed back: %s%s%s", strata_coll_name(coll), bytes, strata_handback_words(why), detail,
        mode_note(mode));
    return STRATA_FALLBACK;
}

void note_stack_call(bool yes) { t_blocking_stack_call = yes; }

bool votes_host(const Team &team, size_t call_bytes, bool blocking) {
    return team.ready() && team.device() && call_bytes > 0 && call_bytes <= team.config().small_msg_size &&
           team.config().check_args != STRATA_CHECK_ARGS_OFF &&
           (blocking || (team.agrees_calls() && team.hands_back_queued()));
}

bool host_buffers_here(const CollArgs &a) {
    const auto host = [](const void *p) {
        if (p == nullptr) return true;
        const MemKind k = classify(p);
        return k == MemKind::Host || k == MemKind::PinnedHost;
    };
    return host(a.recvbuf) && (a.in_place || host(a.sendbuf));
}

Status serve(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start, bool quiet, Call *into);
Status queue_undecided(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start, bool quiet,
                       bool asks_gpus = false);

// Sets up the team if needed (blocking calls), picks the algorithm (setting or rule),
// builds, and runs the call (blocking) or queues it (nonblocking, persistent).
// Every decision before the call is numbered depends only on agreed values (setup,
// settings, type and op, size, whether the call is blocking), so a call is numbered
// on every rank or on none. A blocking call first waits for the team's queued ones:
// it comes after them in MPI's order.
Status run_collective(Team &team, strata_coll_t coll, const CollArgs &args, const Start &given) {
    Start start = given;
    start.by_stack = stack_call(given) || (given.mode == CallInfo::Blocking && t_blocking_stack_call);
    // The stack is making the team's own communicator with this communicator's
    // collectives (Team::open_private): they are its, on every rank, and may come from
    // another thread's progress while the maker holds the team.
    // (A team setting up in steps is making it while the application goes on: there
    // only the stack's own calls are; the application's wait in the queue.)
    if (team.opening_private() && (!team.stepped() || (start.how != nullptr && start.how->internal)))
        return STRATA_FALLBACK;
    // Whether the call is Open MPI's own (log_quiet), kept through the calls the stack
    // makes inside this one (setup makes a communicator: they set it for themselves).
    struct KeepQuiet {
        const bool quiet = log_quiet();
        ~KeepQuiet() { set_log_quiet(quiet); }
    } keep;
    std::lock_guard<std::recursive_mutex> held(team.mutex());  // passes of other threads leave it alone
    const bool blocking = start.mode == CallInfo::Blocking;
    // After a failed call (every rank that took part returned an error, or hears of it
    // at its next call) the communicator's calls go to the replaced component: Open MPI
    // makes a dup or split of it with its own collectives, so recovery works. A rank
    // that returned success from the failed call learns of it here, before its next
    // call (Team::check_broken), or inside it (see peers_ran_it_elsewhere below), and
    // hands back as its peers do (README: Errors).
    const size_t bytes = call_bytes(coll, team, args);
    if (team.check_broken()) {
        const std::string why = " (" + team.first_failure() + ")";
        return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_FAILED, why.c_str());
    }
    if (blocking) {
        calls_of(team).drain();
        if (team.defer_setup(bytes)) return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_LAZY);
        Status st = team.ensure_setup(true);
        set_log_quiet(keep.quiet);
        if (st == STRATA_FALLBACK)
            return hand_back(team, coll, start.mode, bytes, team.broken() ? STRATA_HANDBACK_FAILED : STRATA_HANDBACK_OFF);
        if (st != STRATA_OK) return st;
    } else if (team.never_set_up() && start.how != nullptr && start.how->internal) {
        team.want_setup();  // the application's next blocking call sets up, whatever its size
        return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_NOT_SET_UP);
    } else if (team.stepped() || team.never_set_up()) {
        // Setup agrees among all ranks, which a nonblocking call must not wait for: it
        // runs in steps, and the call waits for it in the team's queue. Counted as a
        // blocking call is (Team::count_call; a first setup counts the call that starts
        // it): whether it asks again about GPUs is decided at the head of the queue,
        // where setup has ended and recheck_gpus_ is agreed.
        const bool doubling = team.stepped() && !start.by_stack && team.count_call();
        return queue_undecided(team, coll, args, start, keep.quiet, doubling);
    } else if (!start.by_stack && team.count_call() && team.asks_again()) {
        // Not every rank had a GPU when the team was set up (a communicator made before
        // the application chose its GPUs) and this is its 2nd, 4th, 8th... call: asked
        // again, in steps, as a blocking call asks in ensure_setup. Without this a
        // communicator that only ever sees nonblocking or persistent calls would hand
        // every GPU call back for good.
        team.start_private_steps();
        return queue_undecided(team, coll, args, start, keep.quiet, true);
    } else if (!team.ready()) {  // set up (at a blocking call or the creation) and off
        return hand_back(team, coll, start.mode, bytes, team.broken() ? STRATA_HANDBACK_FAILED : STRATA_HANDBACK_OFF);
    } else if (!start.by_stack && (team.own_comm_due() || (team.agrees_calls() && !team.hands_back_queued()))) {
        // The team moves to a communicator of its own, begun in this call (in the
        // application's order) and made in steps; this call and the next wait for it in
        // the queue. Due (the stack's tags could come near strata's, or the team spans
        // nodes), or the call is agreed at the head of the queue, before any hand-back:
        // one decided there runs on that communicator, in the queue's order (a hand-back
        // at the start, by the rules on one rank's size alone, left its peers waiting
        // for the agreement).
        team.start_setup_steps(true);  // counted above (count_call), on a team that asks nothing
        return queue_undecided(team, coll, args, start, keep.quiet);
    } else if (team.agrees_calls() && team.hands_back_queued() && !stack_call(start)) {
        // Agreed at the head of the queue before serve() decides anything from its size,
        // type or op (the rules, a missing GPU kernel), as a blocking call is before.
        return queue_undecided(team, coll, args, start, keep.quiet);
    }
    return serve(team, coll, args, start, keep.quiet, nullptr);
}

namespace {
// A call queued undecided (Team::stepped) reaches the head of its team's queue, where
// setup has ended: decided now, from the agreed outcome of that setup and the call's
// arguments only, the same on every rank. A broken team fails it, as any queued call.
Status decide_queued(Team &team, strata_coll_t coll, const CollArgs &args, CallInfo::Mode mode, bool by_stack,
                     bool quiet, Call &call) {
    if (team.broken()) return STRATA_ERR_BROKEN;
    Start start;
    start.mode = mode;
    start.by_stack = by_stack;
    if (!team.ready())
        return hand_back(team, coll, mode, call_bytes(coll, team, args), STRATA_HANDBACK_OFF);
    return serve(team, coll, args, start, quiet, &call);
}
}  // namespace

// A nonblocking or persistent call on a team whose setup runs in steps (started by this
// call if it is the team's first): queued with a copy of its arguments (the glue's
// per-rank arrays live only as long as the call) and decided at the head of the queue.
// A call handed back there completes with STRATA_FALLBACK, and the glue starts it in
// the previous component on the team's own communicator, in the queue's order.
Status queue_undecided(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start, bool quiet,
                       bool asks_gpus) {
    if (team.stepped() || team.never_set_up()) team.start_setup_steps();
    struct Saved {
        CollArgs a;
        std::vector<size_t> arrays[4];
        std::string why;
    };
    auto saved = std::make_shared<Saved>();
    saved->a = args;
    const size_t n = size_t(team.size());
    const size_t *CollArgs::*const fields[4] = {&CollArgs::counts, &CollArgs::displs, &CollArgs::send_counts,
                                                &CollArgs::send_displs};
    for (int i = 0; i < 4; ++i) {
        const size_t *v = args.*fields[i];
        if (v == nullptr) continue;
        saved->arrays[i].assign(v, v + n);
        saved->a.*fields[i] = saved->arrays[i].data();
    }
    if (args.why != nullptr) {
        saved->why = args.why;
        saved->a.why = saved->why.c_str();
    }
    std::unique_ptr<Call> owned = calls_of(team).take_call();
    Call &call = *owned;
    call.info = CallInfo{};
    call.info.mode = start.mode;
    call.info.coll = coll;
    const CallInfo::Mode mode = start.mode;
    const bool by_stack = start.by_stack;
    call.asks_gpus = asks_gpus;
    call.decide = [&team, coll, saved, mode, by_stack, quiet, &call]() {
        return decide_queued(team, coll, saved->a, mode, by_stack, quiet, call);
    };
    // coll_strata_check_args: the call's gate (its agreement) runs before it is decided
    // (CallQueue::decide_head), so every rank decides from what all passed alike.
    call.info.local = args.local;
    call.info.why = args.why ? args.why : status_name(args.local);
    uint64_t size_sig = 0;
    uint32_t meta_sig = 0;
    signature(coll, team, args, &size_sig, &meta_sig);
    const bool pairs = collective(coll).is(kPairs) && !args.uniform;
    // Before setup a team cannot know yet whether it will agree (agrees_calls): the
    // gate then asks at the head of the queue, after setup.
    const uint32_t all_pairs =
        pairs && team.config().check_args != STRATA_CHECK_ARGS_OFF ? pair_sig(team, args, [](int) { return true; }) : 0;
    const size_t bytes = call_bytes(coll, team, args);
    agree_at_head(team, call,
                  CallSignature{coll, size_sig, meta_sig, pairs, all_pairs, bytes,
                                team.may_agree_calls() && host_buffers_here(args)},
                  stack_call(start));
    if (issue_request(team, start, owned)) return STRATA_OK;
    // Its peers queue the call: here it is decided with a rank-local error, which fails
    // it on every rank (as serve does with one it cannot give a request).
    saved->a.local = STRATA_ERR_NOMEM;
    saved->a.why = "no memory for the request";
    calls_of(team).submit(*owned.release());
    return STRATA_ERR_NOMEM;
}

// coll_strata_check_args: every rank learns whether all passed the same size (else
// STRATA_ERR_TRUNCATE) and type, op and root (else STRATA_ERR_ARG), and whether all
// had valid arguments (local: this rank's verdict), before anything moves.
// pairs (alltoallv; the same on every rank once sizes agree): all_pairs, summed over
// the ranks, must be 0 (pair_sig), else STRATA_ERR_TRUNCATE.
Status agree_call(Team &team, strata_coll_t coll, uint64_t size_sig, uint32_t meta_sig, bool pairs,
                  uint32_t all_pairs, Status local, const std::string &why, bool host_here, bool *all_host) {
    // min of x and of ~x give min and max: all equal exactly where they agree.
    const int hi = int(uint32_t(size_sig >> 32)), lo = int(uint32_t(size_sig)), meta = int(meta_sig);
    int v[8] = {local == STRATA_OK ? 1 : 0, hi, lo, meta, ~hi, ~lo, ~meta, host_here ? 1 : 0};
    if (all_host != nullptr) *all_host = false;
    std::string waited;
    // A peer that failed an earlier call (one that ended without an error here) hands
    // this call back and never joins the agreement: this rank then hands it back too
    // (nothing has moved yet), so every rank runs it in the previous component.
    Waiter w = team.waiter();
    w.stop = [&team] { return team.check_broken(); };
    // An agreement that did not end (this rank's deadline, a peer that gave it up) is
    // not alike everywhere: a late peer may still complete it from the messages sent
    // before this rank gave up, and start the call. So it fails the call about to be
    // numbered, as any failure: node peers see the flag, other nodes get the notice,
    // and every rank hands later calls back (a mismatch, which every rank sees alike,
    // leaves the team as it was). Numbered messages keep the next agreement from
    // reading this one's (btl/exchange.h).
    const auto gave_up = [&](Status st) {
        if (team.broken()) return STRATA_FALLBACK;
        return team.fail_call(st, std::string(strata_coll_name(coll)) + ": " + waited, team.call_number() + 1);
    };
    if (const Status st = team.agreements().min(v, 8, w, "coll_strata_check_args", &waited); st != STRATA_OK)
        return gave_up(st);
    if (all_host != nullptr) *all_host = v[7] == 1;
    char b[160];
    if (local != STRATA_OK) {
        snprintf(b, sizeof b, "%s: %s", strata_coll_name(coll), why.c_str());
        team.set_last_error(b);
        return local;
    }
    if (!v[0]) {
        snprintf(b, sizeof b, "%s: another rank passed an invalid argument (coll_strata_check_args)",
                 strata_coll_name(coll));
        team.set_last_error(b);
        return STRATA_ERR_PEER;
    }
    if (v[1] != ~v[4] || v[2] != ~v[5]) {
        snprintf(b, sizeof b, "%s: ranks passed different sizes (count x datatype) (coll_strata_check_args)",
                 strata_coll_name(coll));
        team.set_last_error(b);
        return STRATA_ERR_TRUNCATE;
    }
    if (v[3] != ~v[6]) {
        snprintf(b, sizeof b, "%s: ranks passed different datatypes, ops or roots (coll_strata_check_args)",
                 strata_coll_name(coll));
        team.set_last_error(b);
        return STRATA_ERR_ARG;
    }
    if (!pairs) return STRATA_OK;
    // alltoallv (agreed above: sizes hash whether it is): the sum over all ranks.
    std::vector<int> all(size_t(team.size()), 0);
    if (const Status st = team.agreements().allgather(int(all_pairs), all.data(), w,
                                                      "coll_strata_check_args (alltoallv pairs)", &waited);
        st != STRATA_OK)
        return gave_up(st);
    uint32_t sum = 0;
    for (int x : all) sum += uint32_t(x);
    if (sum != 0) {
        snprintf(b, sizeof b, "%s: a rank sends a peer another size than the peer receives from it "
                 "(coll_strata_check_args)", strata_coll_name(coll));
        team.set_last_error(b);
        return STRATA_ERR_TRUNCATE;
    }
    return STRATA_OK;
}


// The call is strata's to decide (set up and on, or decided at the head of the queue:
// into): the algorithm (setting or rule) or a hand-back, the build, and the run
// (blocking) or the queue (nonblocking, persistent; into: it is the head already).
Status serve(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start, bool quiet, Call *into) {
    const bool blocking = start.mode == CallInfo::Blocking;
    const size_t bytes = call_bytes(coll, team, args);
    CoreTeam &core = static_cast<CoreTeam &>(team);
    if (!core.rules_said) say_rules(core);
    const AlgorithmTable &table = algorithm_table(coll);
    if (table.count == 0) return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_NO_ALGORITHM);
    // Open MPI's own calls (a communicator's creation: ids, split's allgather) are on host memory, which a
    // team in GPU memory would stage through the GPU: a few integers at the cost of
    // copies, a launch and host waits each. Agreed: the team's memory is, and whether a
    // call is the stack's is alike on every rank (the same code path makes it).
    if (start.by_stack && team.device()) return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_STACK);
    uint64_t size_sig = 0;
    uint32_t meta_sig = 0;
    signature(coll, team, args, &size_sig, &meta_sig);
    // coll_strata_check_args: a blocking call agrees here, before any hand-back that
    // looks at its size, type or op (the rules, a missing GPU kernel), which ranks that
    // passed different ones would decide apart; a nonblocking or persistent one at the
    // head of its team's queue, in steps (agree_call.h).
    const bool pairs = collective(coll).is(kPairs) && !args.uniform;
    const uint32_t all_pairs = pairs && team.agrees_calls() ? pair_sig(team, args, [](int) { return true; }) : 0;
    // A small call on a team in GPU memory agrees too (votes_host), whether all its
    // buffers are host memory: a nonblocking one did at the head of the queue (into).
    const bool vote = votes_host(team, bytes, blocking);
    bool all_host = into != nullptr && into->info.all_host;
    if (blocking && (team.agrees_calls() || vote)) {
        const Status st = agree_call(team, coll, size_sig, meta_sig, pairs && team.agrees_calls(), all_pairs,
                                     args.local, args.why ? args.why : "", vote && host_buffers_here(args), &all_host);
        if (st == STRATA_FALLBACK) return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_FAILED);
        if (st != STRATA_OK) return st;
    }
    if (vote && all_host) return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_HOST_CALL);
    // The algorithm: a setting, else the rules file, else the built-in host rules, else
    // the table's rule. A rule may hand the call back: decided first, so that handing
    // back costs little.
    int alg = team.config().algorithm[coll];
    const Rule *rule = nullptr;
    if (alg == STRATA_ALG_BASE) {  // a setting, the same on every rank
        const std::string which = std::string(" (coll_strata_") + strata_coll_name(coll) + "_algorithm=base)";
        return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_SETTING, which.c_str());
    }
    if (alg < 0 || alg >= table.count) alg = choose_algorithm(core, coll, table, args, &rule);
    if (alg == kHandBackAlg) {  // agreed: the rules and what they look at are
        char line[32] = "";
        if (!builtin_host_rules().owns(rule)) snprintf(line, sizeof line, " (line %d)", rule->line);
        return hand_back(team, coll, start.mode, bytes,
                         builtin_host_rules().owns(rule) ? STRATA_HANDBACK_HOST_RULES : STRATA_HANDBACK_RULES_FILE, line);
    }
    int rule_line = rule != nullptr && !builtin_host_rules().owns(rule) ? rule->line : 0;  // of the file
    // The GPU has no kernel for some pairs (long double): agreed, as type and op are.
    if (collective(coll).is(kReduces) && team.device() && !device_reduce_supported(args.dtype, args.op)) {
        const std::string which = std::string(" (") + strata_dtype_name(args.dtype) + "/" + strata_op_name(args.op) + ")";
        return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_NO_KERNEL, which.c_str());
    }
    if (team.broken()) return STRATA_ERR_BROKEN;
    if (alg < 0) return fail(STRATA_ERR_INTERNAL, "the rules named no algorithm of the table");
    // An algorithm that exchanges with peers while it builds cannot serve a call that
    // must not wait: the table's first one that does not (agreed: the mode is).
    if (!blocking && table.algorithms[alg].exchanges_at_build) {
        int other = 0;
        while (other < table.count && table.algorithms[other].exchanges_at_build) ++other;
        if (other == table.count) return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_NO_ALGORITHM);
        alg = other;
        rule_line = 0;
    }

    std::unique_ptr<Call> owned;
    Call &call = blocking ? calls_of(team).blocking_call() : into ? *into : *(owned = calls_of(team).take_call());
    // A blocking call like the last one runs its schedule again (build_key).
    static thread_local std::vector<uint64_t> key;
    bool again = false;
    if (blocking) {
        build_key(team, table.algorithms[alg], alg, coll, args, &key);
        again = !key.empty() && key == call.built_for;
    }
    const bool copied = call.info.copied;
    if (!again) call.reset();
    CallInfo &info = call.info;
    info = CallInfo{};
    info.copied = again && copied;
    info.mode = start.mode;
    info.coll = coll;
    info.sig = uint32_t(size_sig ^ (size_sig >> 32)) ^ meta_sig;  // bit 0 is dropped (CallQueue::begin_call)
    if (pairs) {
        const Layout &l = team.layout();
        info.pairs = pair_sig(team, args, [&l](int r) { return l.node_of[size_t(r)] == l.my_node(); });
    }
    info.sums_pairs = pairs;
    info.alg = alg;
    info.alg_name = table.algorithms[alg].name;
    info.rule_line = rule_line;
    info.bytes = collective(coll).log_bytes(args, team.size());
    info.call_bytes = call_bytes(coll, team, args);
    info.local = args.local;
    info.quiet = quiet;
    info.why = args.why ? args.why : status_name(args.local);
    info.host_here = decides_on_host(team, info, table.algorithms[alg]) && host_buffers_here(args);

    if (blocking) {
        // Numbered first: an algorithm may exchange with peers while it builds.
        STRATA_CHECK(calls_of(team).begin_call(call));
        if (args.local != STRATA_OK) return team.fail_call(args.local, info.why);
        Status st = again ? STRATA_OK : build_call(team, call, table.algorithms[alg], args);
        if (st == STRATA_OK && !again) call.built_for.swap(key);
        if (st == STRATA_OK) st = calls_of(team).run_call(call);
        if (st != STRATA_OK) call.built_for.clear();
        // A peer had failed an earlier call (one that ended without an error here), and
        // this rank heard of it only now: its peers run this call in the previous
        // component, so this rank does too, where strata left its inputs as they were
        // (strata never writes a send buffer; bcast's root only reads; scatter's root in
        // place writes nothing). In place, the receive buffer may hold part of strata's
        // work: the call fails here.
        if (st != STRATA_OK && team.peers_ran_it_elsewhere() &&
            (!args.in_place || collective(coll).is(kReplayableInPlace))) {
            log(1, "%s: %s; its peers ran this call in the previous collective component: so does this rank",
                strata_coll_name(coll), team.first_failure().c_str());
            team.count_handback(STRATA_HANDBACK_FAILED);
            return STRATA_FALLBACK;
        }
        return finish_call(team, call, st);
    }
    // Nonblocking or persistent: built now, numbered and run when it reaches the head
    // of the team's queue. A rank that cannot build it fails it there, so that its
    // peers hear of it as of any failure.
    if (info.local == STRATA_OK) {
        const Status st = build_call(team, call, table.algorithms[alg], args);
        if (st != STRATA_OK) {
            info.local = st;
            info.why = std::string("building ") + info.alg_name + ": " + status_name(st);
        }
    }
    // A call queued undecided under check_args was agreed before it was decided: its
    // gate stays (a persistent one remembers that it passed).
    if (into == nullptr || !into->gate)
        agree_at_head(team, call,
                      CallSignature{coll, size_sig, meta_sig, pairs, all_pairs, bytes, vote && host_buffers_here(args)},
                      stack_call(start));
    if (into != nullptr) {
        call.on_end = [&team, &call](Status st) { return finish_call(team, call, st); };
        return STRATA_OK;
    }
    call.on_end = [&team, &call](Status st) { return finish_call(team, call, st); };
    if (issue_request(team, start, owned)) return STRATA_OK;
    // Its peers queue the call too: it is queued to fail there (its object is let go).
    info.local = STRATA_ERR_NOMEM;
    info.why = "no memory for the request";
    calls_of(team).submit(*owned.release());
    return STRATA_ERR_NOMEM;
}

}  // namespace strata
