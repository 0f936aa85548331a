// SPDX-License-Identifier: BSD-3-Clause
// src/api.cc - the C API: teams, tables, collectives.
#include <atomic>
#include <climits>
#include <mutex>
#include <new>
#include <vector>

#include "algo/algo.h"
#include "algo/rules.h"
#include "call.h"
#include "mem/domain.h"
#include "mem/ops.h"
#include "mem/device.h"
#include "copies.h"

namespace strata {

// A team as the core keeps it: the Team and the rules of coll_strata_rules_file,
// read by each rank when the team is created (Team is below the algorithms layer
// and cannot hold them). Every Team the core runs comes from strata_team_create.
struct CoreTeam final : Team {
    using Team::Team;
    Rules rules;
    std::string rules_path;   // coll_strata_rules_file ("" when none)
    std::string rules_error;  // why this rank has none ("" when it read them)
    bool rules_said = false;  // the outcome of the agreement was logged
};

namespace {
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
    Hash sz, meta;
    sz.add(uint64_t(coll));
    sz.add(coll == STRATA_COLL_ALLTOALL && !a.uniform ? 1 : 0);  // alltoallv: its pairs are agreed apart
    const bool reduces = coll == STRATA_COLL_ALLREDUCE || coll == STRATA_COLL_REDUCE_SCATTER ||
                         coll == STRATA_COLL_REDUCE;
    if (coll == STRATA_COLL_ALLGATHER || coll == STRATA_COLL_REDUCE_SCATTER) {
        for (int r = 0; r < team.size(); ++r) sz.add(a.counts[r]);
    } else if (coll != STRATA_COLL_ALLTOALL || a.uniform) {
        sz.add(coll == STRATA_COLL_ALLTOALL ? a.counts[0] : a.count);  // alltoallv: sizes differ by pair
    }
    sz.add(reduces ? strata_dtype_size(a.dtype) : 1);
    meta.add(reduces ? uint64_t(a.dtype) : 0);
    meta.add(reduces ? uint64_t(a.op) : 0);
    meta.add(coll == STRATA_COLL_BCAST || coll == STRATA_COLL_REDUCE ? uint64_t(a.root) : 0);
    *size_sig = sz.h;
    *meta_sig = uint32_t(meta.h ^ (meta.h >> 32));
}
}  // namespace

// The size of a call as every rank sees it (alltoallv: 0, its sizes differ by rank).
size_t call_bytes(strata_coll_t coll, const Team &team, const CollArgs &a) {
    size_t total = 0;
    switch (coll) {
        case STRATA_COLL_ALLGATHER:
            for (int r = 0; r < team.size(); ++r) total += a.counts[r];
            return total;
        case STRATA_COLL_REDUCE_SCATTER:
            return a.count * strata_dtype_size(a.dtype);
        case STRATA_COLL_ALLTOALL:
            return a.uniform ? a.counts[0] * size_t(team.size()) : 0;
        default:
            return a.bytes();
    }
}

namespace {
// The size a call's log line gives: what the call moves as MPI counts it (a reduction's
// vector, everything an allgather gathers, what this rank receives in an alltoall(v)).
size_t log_bytes(strata_coll_t coll, const Team &team, const CollArgs &a) {
    if (coll != STRATA_COLL_ALLTOALL) return coll == STRATA_COLL_ALLGATHER ? call_bytes(coll, team, a) : a.bytes();
    size_t total = 0;
    for (int r = 0; r < team.size(); ++r) total += a.counts[r];
    return total;
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

// How a call is made: blocking, or (with a request) nonblocking or persistent.
struct Start {
    CallInfo::Mode mode = CallInfo::Blocking;
    const strata_start_t *how = nullptr;
    strata_request_t **request = nullptr;
};

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
    if (i.copied) count(STRATA_STAT_BYTES_STAGED, i.bytes);
}

// The end of a call whose schedule ran with outcome st: a failure becomes the team's
// (its peers hear of it); else the call ends on the node, is counted and logged.
Status finish_call(Team &team, Call &call, Status st) {
    const CallInfo &i = call.info;
    if (st != STRATA_OK)
        return team.broken() ? st : team.fail_call(st, std::string(i.alg_name) + ": " + status_name(st));
    STRATA_CHECK(team.end_call());
    team.count_call(i.coll, i.alg, i.alg_name);
    count_bytes(team, call);
    const bool quiet = log_quiet();  // a queued call may end in another call's pass
    set_log_quiet(i.quiet);
    char from_rule[48] = "";
    if (i.rule_line && team.config().verbose >= 2) snprintf(from_rule, sizeof from_rule, " (rules file line %d)", i.rule_line);
    log(2, "%s: %zu bytes, %d node(s) x %d rank(s), algorithm %s%s%s%s%s%s", strata_coll_name(i.coll), i.bytes,
        team.layout().nnodes(), team.layout().max_local_size(), i.alg_name, from_rule,
        team.device() ? " in GPU memory" : "", call.mapped() ? ", local peers' buffers read in place (IPC)" : "",
        !i.copied ? "" : team.device() ? ", host buffers staged through the GPU" : ", device buffers staged through host",
        mode_note(i.mode));
    set_log_quiet(quiet);
    return STRATA_OK;
}

// The algorithm's schedule, between the copies of this rank's buffers in (a rank's
// buffers that are not of the team's memory kind are copied: copies.h) and out. The
// schedule is the one every rank builds, whatever its buffers are.
Status build_call(Team &team, Call &call, const Algorithm &alg, const CollArgs &args) {
    CallInfo &i = call.info;
    CollArgs work = args;
    BufferCopies &copies = call.copies();
    STRATA_CHECK(copies.enter(i.coll, team.rank(), team.size(), team.device() ? &team.domain() : nullptr, &work));
    i.copied = copies.active();
    Schedule &s = call.schedule();
    // Everything the algorithm builds starts after the copies in (node peers may read
    // a copy in place once it is posted: Call::map_peers posts after them too).
    s.start_after(copies.copy_in(s));
    STRATA_CHECK(alg.build(call, work));
    if (i.copied) copies.copy_out(s, {s.join_all()});
    team.dump_schedule(s, i.coll, alg.name, i.call_bytes);
    return STRATA_OK;
}
}  // namespace

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

// The C handle of a nonblocking or persistent call.
}  // namespace strata
struct strata_request {
    strata::Team *team = nullptr;
    std::unique_ptr<strata::Call> call;
    strata_start_t how{};
    bool persistent = false;
    std::atomic<bool> done{true};  // not started, or completed (set by whichever thread's pass completed it)
    strata::Status status = STRATA_OK;
};
namespace strata {

namespace {
// Queues the request's call; *req completes from a later progress (or at once).
void start_request(strata_request *r) {
    r->done = false;
    r->status = STRATA_OK;
    r->team->submit(*r->call);
    r->team->kick();
}

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

namespace {
// A call handed back to the previous component: counted, and one line at verbose 2 that
// says why in plain words (the glue adds none for it). detail: what the words leave
// out ("" for nothing).
Status hand_back(Team &team, strata_coll_t coll, CallInfo::Mode mode, size_t bytes, strata_handback_t why,
                 const char *detail = "") {
    team.count_handback(why);
    log(2, "%s: %zu bytes: handed back: %s%s%s", strata_coll_name(coll), bytes, strata_handback_words(why), detail,
        mode_note(mode));
    return STRATA_FALLBACK;
}
}  // namespace

Status serve(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start, bool quiet, Call *into);
Status queue_undecided(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start, bool quiet);

// Sets up the team if needed (blocking calls), picks the algorithm (setting or rule),
// builds, and runs the call (blocking) or queues it (nonblocking, persistent).
// Every decision before the call is numbered depends only on agreed values (setup,
// settings, type and op, size, whether the call is blocking), so a call is numbered
// on every rank or on none. A blocking call first waits for the team's queued ones:
// it comes after them in MPI's order.
Status run_collective(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start = Start{}) {
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
        team.drain();
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
        // runs in steps, and the call waits for it in the team's queue.
        return queue_undecided(team, coll, args, start, keep.quiet);
    } else if (!team.ready()) {  // set up (at a blocking call or the creation) and off
        return hand_back(team, coll, start.mode, bytes, team.broken() ? STRATA_HANDBACK_FAILED : STRATA_HANDBACK_OFF);
    }
    return serve(team, coll, args, start, keep.quiet, nullptr);
}

namespace {
// A call queued undecided (Team::stepped) reaches the head of its team's queue, where
// setup has ended: decided now, from the agreed outcome of that setup and the call's
// arguments only, the same on every rank. A broken team fails it, as any queued call.
Status decide_queued(Team &team, strata_coll_t coll, const CollArgs &args, CallInfo::Mode mode, bool quiet,
                     Call &call) {
    if (team.broken()) return STRATA_ERR_BROKEN;
    Start start;
    start.mode = mode;
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
Status queue_undecided(Team &team, strata_coll_t coll, const CollArgs &args, const Start &start, bool quiet) {
    team.start_setup_steps();
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
    std::unique_ptr<Call> owned = team.take_call();
    Call &call = *owned;
    call.info = CallInfo{};
    call.info.mode = start.mode;
    call.info.coll = coll;
    const CallInfo::Mode mode = start.mode;
    call.decide = [&team, coll, saved, mode, quiet, &call]() {
        return decide_queued(team, coll, saved->a, mode, quiet, call);
    };
    if (issue_request(team, start, owned)) return STRATA_OK;
    // Its peers queue the call: here it is decided with a rank-local error, which fails
    // it on every rank (as serve does with one it cannot give a request).
    saved->a.local = STRATA_ERR_NOMEM;
    saved->a.why = "no memory for the request";
    team.submit(*owned.release());
    return STRATA_ERR_NOMEM;
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
    const bool reduces = coll == STRATA_COLL_ALLREDUCE || coll == STRATA_COLL_REDUCE_SCATTER ||
                         coll == STRATA_COLL_REDUCE;
    if (reduces && team.device() && !device_reduce_supported(args.dtype, args.op)) {
        const std::string which = std::string(" (") + strata_dtype_name(args.dtype) + "/" + strata_op_name(args.op) + ")";
        return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_NO_KERNEL, which.c_str());
    }
    uint64_t size_sig = 0;
    uint32_t meta_sig = 0;
    signature(coll, team, args, &size_sig, &meta_sig);
    // A blocking agreement: nonblocking calls go without it (docs: coll_strata_check_args).
    const bool pairs = coll == STRATA_COLL_ALLTOALL && !args.uniform;
    if (blocking && team.config().check_args) {
        const uint32_t all_pairs = pairs ? pair_sig(team, args, [](int) { return true; }) : 0;
        const Status st = team.agree_call(coll, size_sig, meta_sig, pairs, all_pairs, args.local,
                                          args.why ? args.why : "");
        if (st == STRATA_FALLBACK) return hand_back(team, coll, start.mode, bytes, STRATA_HANDBACK_FAILED);
        if (st != STRATA_OK) return st;
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
    Call &call = blocking ? team.blocking_call() : into ? *into : *(owned = team.take_call());
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
    info.sig = uint32_t(size_sig ^ (size_sig >> 32)) ^ meta_sig;
    if (pairs) {
        const Layout &l = team.layout();
        info.pairs = pair_sig(team, args, [&l](int r) { return l.node_of[size_t(r)] == l.my_node(); });
    }
    info.sums_pairs = pairs;
    info.alg = alg;
    info.alg_name = table.algorithms[alg].name;
    info.rule_line = rule_line;
    info.bytes = log_bytes(coll, team, args);
    info.call_bytes = call_bytes(coll, team, args);
    info.local = args.local;
    info.quiet = quiet;
    info.why = args.why ? args.why : status_name(args.local);

    if (blocking) {
        // Numbered first: an algorithm may exchange with peers while it builds.
        STRATA_CHECK(team.begin_call(call));
        if (args.local != STRATA_OK) return team.fail_call(args.local, info.why);
        Status st = again ? STRATA_OK : build_call(team, call, table.algorithms[alg], args);
        if (st == STRATA_OK && !again) call.built_for.swap(key);
        if (st == STRATA_OK) st = team.run_call(call);
        if (st != STRATA_OK) call.built_for.clear();
        // A peer had failed an earlier call (one that ended without an error here), and
        // this rank heard of it only now: its peers run this call in the previous
        // component, so this rank does too, where strata left its inputs as they were
        // (strata never writes a send buffer; bcast's root only reads). In place, the
        // receive buffer may hold part of strata's work: the call fails here.
        if (st != STRATA_OK && team.peers_ran_it_elsewhere() && (!args.in_place || coll == STRATA_COLL_BCAST)) {
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
    if (into != nullptr) {
        call.on_end = [&team, &call](Status st) { return finish_call(team, call, st); };
        return STRATA_OK;
    }
    call.on_end = [&team, &call](Status st) { return finish_call(team, call, st); };
    if (issue_request(team, start, owned)) return STRATA_OK;
    // Its peers queue the call too: it is queued to fail there (its object is let go).
    info.local = STRATA_ERR_NOMEM;
    info.why = "no memory for the request";
    team.submit(*owned.release());
    return STRATA_ERR_NOMEM;
}

}  // namespace strata

using namespace strata;

extern "C" {

void strata_config_defaults(strata_config_t *cfg) {
    cfg->verbose = 0;
    cfg->node_size = 0;
    cfg->segment_size = size_t(4) << 20;  // README "Measured": the two-host cluster, the model
    // Every segment of a GPU schedule costs a kernel launch and a host round trip,
    // about 30 us on an H200, so one node wants few of them: 64 MiB measured 3.8x
    // (2 ranks) and 4x (8 ranks) the busbw of 4 MiB at 64-256 MiB allreduce, and no
    // size slower (perf/results/h200-2026-12-04-segments.txt). Across nodes a deep
    // pipeline matters more; there segment_size stays.
    cfg->device_segment_size = size_t(64) << 20;
    cfg->small_msg_size = 16 * 1024;
    for (int &a : cfg->algorithm) a = STRATA_ALG_AUTO;
    cfg->shm_dir = nullptr;
    cfg->opt_out = 0;
    cfg->host_buffers = 0;
    cfg->device_path = STRATA_DEVICE_PATH_GPU;
    cfg->device_transport = STRATA_DEVICE_TRANSPORT_AUTO;
    cfg->ipc_cache_size = 64;
    cfg->ipc_cache_bytes = size_t(4) << 30;  // UCX bounds its CUDA IPC cache by bytes too
    cfg->timeout = 0;
    cfg->check_args = 0;
    cfg->lazy_calls = 4;
    cfg->rules_file = nullptr;
    cfg->setup_at_creation = 0;
    cfg->host_handback = 1;
    cfg->p2p_channel = nullptr;
    // Off until the hang of CudaCollectives one_node_of_2 (ranks as threads, IPC cache
    // 64) with them on is understood (docs/architecture.md, "Work chained on the GPU").
    cfg->stream_flags = STRATA_STREAM_FLAGS_OFF;
}

int strata_algorithm_count(strata_coll_t coll) { return algorithm_table(coll).count; }

const char *strata_algorithm_name(strata_coll_t coll, int index) {
    const AlgorithmTable &t = algorithm_table(coll);
    return index >= 0 && index < t.count ? t.algorithms[index].name : nullptr;
}

const char *strata_algorithm_description(strata_coll_t coll, int index) {
    const AlgorithmTable &t = algorithm_table(coll);
    return index >= 0 && index < t.count ? t.algorithms[index].description : nullptr;
}

int strata_op_supported(strata_dtype_t dtype, strata_op_t op) {
    return host_reduce_fn(dtype, op) != nullptr;
}

strata_status_t strata_team_create(int rank, int size, int node_key,
                                   const strata_transport_t *transport,
                                   const strata_config_t *cfg, strata_team_t **team) {
    *team = nullptr;
    if (!transport || !cfg || size < 1 || rank < 0 || rank >= size) return STRATA_ERR_ARG;
    if (cfg->segment_size < 64 || cfg->segment_size > (size_t(1) << 30)) {
        warn("segment size out of range", "segment size %zu is out of range (64 bytes to 1 GiB)", cfg->segment_size);
        return STRATA_ERR_ARG;
    }
    if (cfg->device_segment_size != 0 && (cfg->device_segment_size < 64 || cfg->device_segment_size > (size_t(1) << 30))) {
        warn("segment size out of range", "device segment size %zu is out of range (0, or 64 bytes to 1 GiB)",
             cfg->device_segment_size);
        return STRATA_ERR_ARG;
    }
    CoreTeam *t = new (std::nothrow) CoreTeam(rank, size, node_key, *transport, *cfg);
    if (!t) return STRATA_ERR_NOMEM;
    load_team_rules(*t, cfg->rules_file);
    *team = t;
    return STRATA_OK;
}

void strata_team_destroy(strata_team_t *team) { delete static_cast<Team *>(team); }

strata_status_t strata_team_setup(strata_team_t *team) {
    if (team == nullptr) return STRATA_ERR_ARG;
    Team &t = *static_cast<Team *>(team);
    std::lock_guard<std::recursive_mutex> held(t.mutex());
    return t.ensure_setup(false);
}

// A NULL buffer where this rank has bytes to move fails the call on this rank (after
// every rank got as far, so that its peers hear of it); in place is STRATA_IN_PLACE.
static void need(CollArgs *a, const void *buf, bool has_bytes, const char *why) {
    if (a->local == STRATA_OK && buf == nullptr && has_bytes) {
        a->local = STRATA_ERR_BUFFER;
        a->why = why;
    }
}
static const char kNullSend[] = "the send buffer is NULL (MPI_IN_PLACE is not NULL)";
static const char kNullRecv[] = "the receive buffer is NULL";

// A type and op with no host reduction (the glue asks first: only other callers reach it).
static strata_status_t no_reduction(strata_team_t *team, strata_coll_t coll, strata_dtype_t dtype, strata_op_t op) {
    const std::string which = std::string(" (") + strata_dtype_name(dtype) + "/" + strata_op_name(op) + ")";
    return hand_back(*static_cast<Team *>(team), coll, CallInfo::Blocking, 0, STRATA_HANDBACK_UNSUPPORTED, which.c_str());
}

static strata_status_t allreduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                                 strata_dtype_t dtype, strata_op_t op, const Start &how) {
    if (!team) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return no_reduction(team, STRATA_COLL_ALLREDUCE, dtype, op);
    if (count == 0) return STRATA_OK;
    CollArgs a;
    a.sendbuf = sendbuf == STRATA_IN_PLACE ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = count;
    a.dtype = dtype;
    a.op = op;
    need(&a, recvbuf, true, kNullRecv);
    need(&a, a.sendbuf, true, kNullSend);
    return run_collective(*static_cast<Team *>(team), STRATA_COLL_ALLREDUCE, a, how);
}

// Common entry checks: a team, a known collective; the byte forms take STRATA_BYTE.
static Status check_team(strata_team_t *team) { return team ? STRATA_OK : STRATA_ERR_ARG; }

static strata_status_t allgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *bytes,
                                  const size_t *displs, const Start &how) {
    STRATA_CHECK(check_team(team));
    if (!bytes || !displs) return STRATA_ERR_ARG;
    Team &t = *static_cast<Team *>(team);
    CollArgs a;
    a.in_place = sendbuf == STRATA_IN_PLACE;
    a.sendbuf = a.in_place ? (recvbuf ? static_cast<char *>(recvbuf) + displs[t.rank()] : nullptr) : sendbuf;
    a.recvbuf = recvbuf;
    a.count = bytes[t.rank()];
    a.counts = bytes;
    a.displs = displs;
    size_t total = 0;
    for (int r = 0; r < t.size(); ++r) total += bytes[r];
    if (total == 0) return STRATA_OK;  // the same on every rank: MPI makes the counts agree
    need(&a, recvbuf, true, kNullRecv);
    need(&a, a.sendbuf, a.count > 0, kNullSend);
    return run_collective(t, STRATA_COLL_ALLGATHER, a, how);
}

// The per-rank arrays of a call with equal blocks, kept per thread (a call's builder
// reads them; nothing keeps them past the call): no allocation per call.
static std::vector<size_t> &uniform_blocks(const Team &t, size_t bytes_per_rank) {
    static thread_local std::vector<size_t> v;
    v.assign(size_t(t.size()), bytes_per_rank);
    return v;
}
static std::vector<size_t> &uniform_displs(const Team &t, size_t bytes_per_rank) {
    static thread_local std::vector<size_t> v;
    v.resize(size_t(t.size()));
    for (size_t r = 0; r < v.size(); ++r) v[r] = r * bytes_per_rank;
    return v;
}

static strata_status_t allgather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                 const Start &how) {
    STRATA_CHECK(check_team(team));
    const Team &t = *static_cast<Team *>(team);
    std::vector<size_t> &bytes = uniform_blocks(t, bytes_per_rank), &displs = uniform_displs(t, bytes_per_rank);
    return allgatherv(team, sendbuf, recvbuf, bytes.data(), displs.data(), how);
}

static strata_status_t bcast(strata_team_t *team, void *buf, size_t bytes, int root, const Start &how) {
    STRATA_CHECK(check_team(team));
    Team &t = *static_cast<Team *>(team);
    if (root < 0 || root >= t.size()) return STRATA_ERR_ARG;
    if (bytes == 0) return STRATA_OK;
    CollArgs a;
    a.sendbuf = buf;
    a.recvbuf = buf;
    a.count = bytes;
    a.root = root;
    need(&a, buf, true, "the buffer is NULL");
    return run_collective(t, STRATA_COLL_BCAST, a, how);
}

namespace {
// uniform: plain alltoall, whose blocks every rank knows the place of in every buffer.
strata_status_t alltoall(strata_team_t *team, const void *sendbuf, const size_t *sbytes, const size_t *sdispls,
                         void *recvbuf, const size_t *rbytes, const size_t *rdispls, bool uniform, const Start &how) {
    STRATA_CHECK(check_team(team));
    if (!rbytes || !rdispls) return STRATA_ERR_ARG;
    const bool in_place = sendbuf == STRATA_IN_PLACE;
    if (!in_place && (!sbytes || !sdispls)) return STRATA_ERR_ARG;
    const Team &t = *static_cast<Team *>(team);
    CollArgs a;
    a.in_place = in_place;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.send_counts = a.in_place ? rbytes : sbytes;
    a.send_displs = a.in_place ? rdispls : sdispls;
    a.counts = rbytes;
    a.displs = rdispls;
    a.uniform = uniform;
    // NULL buffers are legal where this rank moves nothing.
    bool receives = false, sends = false;
    for (int r = 0; r < t.size(); ++r) {
        receives = receives || rbytes[r] > 0;
        sends = sends || a.send_counts[r] > 0;
    }
    if (uniform && !receives) return STRATA_OK;  // the same on every rank
    need(&a, recvbuf, receives, kNullRecv);
    need(&a, a.sendbuf, sends, kNullSend);
    return run_collective(*static_cast<Team *>(team), STRATA_COLL_ALLTOALL, a, how);
}
}  // namespace

static strata_status_t alltoall_uniform(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                        size_t bytes_per_rank, const Start &how) {
    STRATA_CHECK(check_team(team));
    const Team &t = *static_cast<Team *>(team);
    std::vector<size_t> &bytes = uniform_blocks(t, bytes_per_rank), &displs = uniform_displs(t, bytes_per_rank);
    return alltoall(team, sendbuf, bytes.data(), displs.data(), recvbuf, bytes.data(), displs.data(), true, how);
}

static strata_status_t reduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *counts,
                                      strata_dtype_t dtype, strata_op_t op, const Start &how) {
    STRATA_CHECK(check_team(team));
    if (!counts) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return no_reduction(team, STRATA_COLL_REDUCE_SCATTER, dtype, op);
    Team &t = *static_cast<Team *>(team);
    CollArgs a;
    for (int r = 0; r < t.size(); ++r) a.count += counts[r];
    if (a.count == 0) return STRATA_OK;  // the same on every rank: MPI makes the counts agree
    a.in_place = sendbuf == STRATA_IN_PLACE;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.counts = counts;
    a.dtype = dtype;
    a.op = op;
    need(&a, recvbuf, a.in_place || counts[t.rank()] > 0, kNullRecv);
    need(&a, a.sendbuf, true, kNullSend);
    return run_collective(t, STRATA_COLL_REDUCE_SCATTER, a, how);
}

static strata_status_t reduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                              strata_dtype_t dtype, strata_op_t op, int root, const Start &how) {
    STRATA_CHECK(check_team(team));
    Team &t = *static_cast<Team *>(team);
    if (root < 0 || root >= t.size()) return STRATA_ERR_ARG;
    if (!strata_op_supported(dtype, op)) return no_reduction(team, STRATA_COLL_REDUCE, dtype, op);
    if (count == 0) return STRATA_OK;
    CollArgs a;
    a.in_place = sendbuf == STRATA_IN_PLACE;
    a.sendbuf = a.in_place ? recvbuf : sendbuf;
    a.recvbuf = recvbuf;
    a.count = count;
    a.dtype = dtype;
    a.op = op;
    a.root = root;
    if (a.in_place && t.rank() != root) {
        a.local = STRATA_ERR_ARG;
        a.why = "MPI_IN_PLACE on a rank that is not the root of MPI_Reduce";
    }
    need(&a, recvbuf, t.rank() == root, kNullRecv);
    need(&a, a.sendbuf, true, kNullSend);
    return run_collective(t, STRATA_COLL_REDUCE, a, how);
}

// ---- the entry points: blocking, and nonblocking or persistent (strata.h)
namespace {
const Start kBlocking{};
// A nonblocking or persistent call's Start; *req is NULL until a request exists.
Start start_of(const strata_start_t *how, strata_request_t **req) {
    *req = nullptr;
    return Start{how && how->persistent ? CallInfo::Persistent : CallInfo::Nonblocking, how, req};
}
}  // namespace

strata_status_t strata_allreduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                                 strata_dtype_t dtype, strata_op_t op) {
    return allreduce(team, sendbuf, recvbuf, count, dtype, op, kBlocking);
}
strata_status_t strata_iallreduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                                  strata_dtype_t dtype, strata_op_t op, const strata_start_t *how,
                                  strata_request_t **req) {
    return allreduce(team, sendbuf, recvbuf, count, dtype, op, start_of(how, req));
}
strata_status_t strata_allgather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank) {
    return allgather(team, sendbuf, recvbuf, bytes_per_rank, kBlocking);
}
strata_status_t strata_iallgather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                  const strata_start_t *how, strata_request_t **req) {
    return allgather(team, sendbuf, recvbuf, bytes_per_rank, start_of(how, req));
}
strata_status_t strata_allgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *bytes,
                                  const size_t *displs) {
    return allgatherv(team, sendbuf, recvbuf, bytes, displs, kBlocking);
}
strata_status_t strata_iallgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *bytes,
                                   const size_t *displs, const strata_start_t *how, strata_request_t **req) {
    return allgatherv(team, sendbuf, recvbuf, bytes, displs, start_of(how, req));
}
strata_status_t strata_bcast(strata_team_t *team, void *buf, size_t bytes, int root) {
    return bcast(team, buf, bytes, root, kBlocking);
}
strata_status_t strata_ibcast(strata_team_t *team, void *buf, size_t bytes, int root, const strata_start_t *how,
                              strata_request_t **req) {
    return bcast(team, buf, bytes, root, start_of(how, req));
}
strata_status_t strata_alltoall(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank) {
    return alltoall_uniform(team, sendbuf, recvbuf, bytes_per_rank, kBlocking);
}
strata_status_t strata_ialltoall(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                 const strata_start_t *how, strata_request_t **req) {
    return alltoall_uniform(team, sendbuf, recvbuf, bytes_per_rank, start_of(how, req));
}
strata_status_t strata_alltoallv(strata_team_t *team, const void *sendbuf, const size_t *sbytes,
                                 const size_t *sdispls, void *recvbuf, const size_t *rbytes, const size_t *rdispls) {
    return alltoall(team, sendbuf, sbytes, sdispls, recvbuf, rbytes, rdispls, false, kBlocking);
}
strata_status_t strata_ialltoallv(strata_team_t *team, const void *sendbuf, const size_t *sbytes,
                                  const size_t *sdispls, void *recvbuf, const size_t *rbytes, const size_t *rdispls,
                                  const strata_start_t *how, strata_request_t **req) {
    return alltoall(team, sendbuf, sbytes, sdispls, recvbuf, rbytes, rdispls, false, start_of(how, req));
}
strata_status_t strata_reduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *counts,
                                      strata_dtype_t dtype, strata_op_t op) {
    return reduce_scatter(team, sendbuf, recvbuf, counts, dtype, op, kBlocking);
}
strata_status_t strata_ireduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                       const size_t *counts, strata_dtype_t dtype, strata_op_t op,
                                       const strata_start_t *how, strata_request_t **req) {
    return reduce_scatter(team, sendbuf, recvbuf, counts, dtype, op, start_of(how, req));
}
strata_status_t strata_reduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                              strata_dtype_t dtype, strata_op_t op, int root) {
    return reduce(team, sendbuf, recvbuf, count, dtype, op, root, kBlocking);
}
strata_status_t strata_ireduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                               strata_dtype_t dtype, strata_op_t op, int root, const strata_start_t *how,
                               strata_request_t **req) {
    return reduce(team, sendbuf, recvbuf, count, dtype, op, root, start_of(how, req));
}

strata_status_t strata_request_start(strata_request_t *req) {
    if (req == nullptr) return STRATA_ERR_ARG;
    std::unique_lock<std::recursive_mutex> held(req->team->mutex());
    if (!req->persistent || !req->done) return STRATA_ERR_ARG;
    start_request(req);
    return STRATA_OK;
}

int strata_request_test(strata_request_t *req, strata_status_t *status) {
    if (req == nullptr) return 1;
    if (!req->done) req->team->progress_others();  // a transport's test() may only look
    if (req->done && status) *status = req->status;
    return req->done ? 1 : 0;
}

strata_status_t strata_request_free(strata_request_t *req) {
    if (req == nullptr) return STRATA_OK;
    {
        // The pass that completed it may still be finishing (on another thread).
        std::lock_guard<std::recursive_mutex> held(req->team->mutex());
        if (!req->done) return STRATA_ERR_ARG;
        req->team->return_call(std::move(req->call));
    }
    delete req;
    return STRATA_OK;
}

int strata_progress(void) {
    bool idle = false;
    return Team::progress_all(&idle);
}

int strata_progress_pending(void) { return Team::anything_queued() ? 1 : 0; }

static strata_status_t fail_call(strata_team_t *team, strata_coll_t coll, strata_status_t status, const char *why,
                                 size_t call_bytes, strata_dtype_t dtype, strata_op_t op, const Start &how) {
    if (!team || coll < 0 || coll >= STRATA_COLL_COUNT) return status;
    Team &t = *static_cast<Team *>(team);
    // Arguments whose size, type and op are the call's, as its peers see them, so that
    // every decision before the failure is theirs (a reduction's type decides whether
    // the GPU has a kernel for it).
    const size_t n = size_t(t.size()), es = strata_dtype_size(dtype) ? strata_dtype_size(dtype) : 1;
    const size_t elems = call_bytes / es;
    std::vector<size_t> per(n, elems / n);
    per[0] += elems % n;
    CollArgs a;
    a.local = status < 0 ? status : STRATA_ERR_ARG;
    a.why = why;
    a.dtype = dtype;
    a.op = op;
    a.count = elems > 0 ? elems : 1;
    a.counts = per.data();
    a.send_counts = per.data();
    a.uniform = coll == STRATA_COLL_ALLTOALL && call_bytes > 0;
    // Goes as far as its peers (setup, agreement), then fails the call for everyone.
    return run_collective(t, coll, a, how);
}

strata_status_t strata_fail_call(strata_team_t *team, strata_coll_t coll, strata_status_t status,
                                 const char *why, size_t call_bytes, strata_dtype_t dtype, strata_op_t op) {
    return fail_call(team, coll, status, why, call_bytes, dtype, op, kBlocking);
}

strata_status_t strata_ifail_call(strata_team_t *team, strata_coll_t coll, strata_status_t status, const char *why,
                                  size_t call_bytes, strata_dtype_t dtype, strata_op_t op, const strata_start_t *how,
                                  strata_request_t **req) {
    return fail_call(team, coll, status, why, call_bytes, dtype, op, start_of(how, req));
}

const char *strata_team_last_error(const strata_team_t *team) {
    if (!team) return "";
    const Team &t = *static_cast<const Team *>(team);
    return !t.last_error().empty() ? t.last_error().c_str() : t.first_failure().c_str();
}

const char *strata_team_last_algorithm(const strata_team_t *team) {
    return team ? static_cast<const Team *>(team)->last_algorithm() : nullptr;
}

uint64_t strata_team_calls(const strata_team_t *team, strata_coll_t coll, int alg) {
    if (!team || coll < 0 || coll >= STRATA_COLL_COUNT || alg < 0 || alg >= kMaxAlgorithms)
        return 0;
    return static_cast<const Team *>(team)->calls(coll, alg);
}

void strata_team_count_handback(strata_team_t *team, strata_handback_t why) {
    if (why < 0 || why >= STRATA_HANDBACK_COUNT) return;
    if (team)
        static_cast<Team *>(team)->count_handback(why);
    else
        count(stats().handed_back[why]);
}

void strata_team_report(const strata_team_t *team, const char *name) {
    if (!team) return;
    const Team &t = *static_cast<const Team *>(team);
    std::string served, back;
    uint64_t nserved = 0, nback = 0;
    char b[96];
    for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
        const AlgorithmTable &table = algorithm_table(strata_coll_t(c));
        uint64_t n = 0;
        std::string algs;
        for (int a = 0; a < table.count && a < kMaxAlgorithms; ++a) {
            const uint64_t k = t.calls(strata_coll_t(c), a);
            if (k == 0) continue;
            snprintf(b, sizeof b, "%s%s %llu", algs.empty() ? "" : ", ", table.algorithms[a].name, (unsigned long long)k);
            algs += b;
            n += k;
        }
        if (n == 0) continue;
        snprintf(b, sizeof b, "%s%s %llu: ", served.empty() ? "" : "; ", strata_coll_name(strata_coll_t(c)),
                 (unsigned long long)n);
        served += b + algs;
        nserved += n;
    }
    for (int w = 0; w < STRATA_HANDBACK_COUNT; ++w) {
        const uint64_t k = t.handed_back(strata_handback_t(w));
        if (k == 0) continue;
        snprintf(b, sizeof b, "%s%llu: ", back.empty() ? "" : "; ", (unsigned long long)k);
        back += b + std::string(strata_handback_words(strata_handback_t(w)));
        nback += k;
    }
    if (nserved + nback == 0) return;
    log(1, "%s: %llu call(s): %llu served%s%s%s, %llu handed back%s%s%s", name ? name : "a communicator",
        (unsigned long long)(nserved + nback), (unsigned long long)nserved, served.empty() ? "" : " (",
        served.c_str(), served.empty() ? "" : ")", (unsigned long long)nback, back.empty() ? "" : " (",
        back.c_str(), back.empty() ? "" : ")");
}

}  // extern "C"
