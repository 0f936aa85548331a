// SPDX-License-Identifier: BSD-3-Clause
// src/engine.cc - the progress engine.
#include "engine.h"

#include <sched.h>
#include <time.h>

#include "stats.h"

namespace strata {

namespace {
// Passes without progress before the engine yields the CPU to other ranks.
constexpr int kSpinsBeforeYield = 8;
// After this long without progress the engine says what it is waiting for, once.
constexpr double kStallReportSeconds = 20.0;
// How long an abandoned run waits for its started sends to complete (abandon()).
constexpr double kAbandonSendSeconds = 1.0;

double now_seconds() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
}  // namespace

void Schedule::report_stall(const std::vector<StepId> &active) const {
    static const char *const kinds[] = {"nop", "copy", "reduce", "send", "recv", "signal", "wait", "poll"};
    warn("no progress", "no progress for %.0f s in a collective call (its unfinished steps: coll_strata_verbose 1)",
         kStallReportSeconds);
    int shown = 0;
    for (size_t a = 0; a < active.size() && shown < 6; ++a) {
        const size_t i = active[a];
        const Step &s = steps_[i];
        ++shown;
        if (s.kind == Kind::Wait) {
            log(1, "  step %zu: wait flag %p for %llu, holds %llu", i, static_cast<void *>(s.flag),
                static_cast<unsigned long long>(num_.base + s.value),
                static_cast<unsigned long long>(__atomic_load_n(s.flag, __ATOMIC_ACQUIRE)));
        } else {
            log(1, "  step %zu: %s peer %d tag %d bytes %zu", i, kinds[int(s.kind)], s.peer, num_.tag_base | s.tag,
                s.n);
        }
    }
}

void Schedule::clear() {
    entry_ = kNoStep;
    cond_ = kNoStep;
    num_ = Numbering{};
    src_bases_.clear();
    polls_.clear();
    steps_.clear();
    deps_.clear();
    srcs_.clear();
    last_signal_.clear();
    run_.graph_steps = run_.graph_deps = SIZE_MAX;
}

StepId Schedule::add(Step s, const Deps &deps) {
    run_.graph_steps = SIZE_MAX;  // the dependency graph changes
    s.state = State::Waiting;
    s.dep_begin = static_cast<uint32_t>(deps_.size());
    if (deps.ids().empty() && entry_ != kNoStep) {
        deps_.push_back(entry_);
    } else {
        deps_.insert(deps_.end(), deps.ids().begin(), deps.ids().end());
    }
    s.cond = cond_;
    s.want = cond_want_;
    if (cond_ != kNoStep) deps_.push_back(cond_);  // decided before it starts
    s.dep_count = static_cast<uint32_t>(deps_.size() - s.dep_begin);
    s.req = nullptr;
    s.ticket = Ticket{};
    steps_.push_back(s);
    return static_cast<StepId>(steps_.size() - 1);
}


StepId Schedule::copy(MemDomain &dom, void *dst, const void *src, size_t bytes, const Deps &deps) {
    Step s{};
    s.kind = (bytes == 0 || dst == src) ? Kind::Nop : Kind::Copy;
    s.dom = &dom;
    s.dst = dst;
    s.src = src;
    s.n = bytes;
    return add(s, deps);
}

StepId Schedule::reduce(MemDomain &dom, void *dst, const std::vector<const void *> &srcs,
                        size_t count, strata_dtype_t dtype, strata_op_t op, const Deps &deps) {
    Step s{};
    s.kind = count == 0 ? Kind::Nop : Kind::Reduce;
    s.dom = &dom;
    s.dst = dst;
    s.n = count;
    s.dtype = dtype;
    s.op = op;
    s.src_begin = static_cast<uint32_t>(srcs_.size());
    s.src_count = static_cast<uint32_t>(srcs.size());
    srcs_.insert(srcs_.end(), srcs.begin(), srcs.end());
    src_bases_.resize(srcs_.size(), nullptr);
    return add(s, deps);
}

StepId Schedule::copy_late(MemDomain &dom, void *dst, LateSrc src, size_t bytes, const Deps &deps) {
    Step s{};
    s.kind = bytes == 0 ? Kind::Nop : Kind::Copy;
    s.dom = &dom;
    s.dst = dst;
    s.src = reinterpret_cast<const void *>(src.offset);
    s.late = src.base;
    s.n = bytes;
    return add(s, deps);
}

StepId Schedule::reduce_late(MemDomain &dom, void *dst, const std::vector<LateSrc> &srcs, size_t count,
                             strata_dtype_t dtype, strata_op_t op, const Deps &deps) {
    std::vector<const void *> offsets;
    for (const LateSrc &l : srcs) offsets.push_back(reinterpret_cast<const void *>(l.offset));
    const size_t first = srcs_.size();
    const StepId id = reduce(dom, dst, offsets, count, dtype, op, deps);
    for (size_t k = 0; k < srcs.size(); ++k) src_bases_[first + k] = srcs[k].base;
    return id;
}

StepId Schedule::reduce_multi_late(MemDomain &dom, const std::vector<LateSrc> &dsts,
                                   const std::vector<LateSrc> &srcs, size_t count, strata_dtype_t dtype,
                                   strata_op_t op, const Deps &deps) {
    std::vector<LateSrc> all(srcs);
    all.insert(all.end(), dsts.begin(), dsts.end());
    const StepId id = reduce_late(dom, nullptr, all, count, dtype, op, deps);
    steps_[id].src_count = uint32_t(srcs.size());
    steps_[id].dst_count = uint32_t(dsts.size());
    return id;
}

StepId Schedule::poll(PollFn fn, const Deps &deps) {
    Step s{};
    s.kind = Kind::Poll;
    s.n = polls_.size();
    polls_.push_back(std::move(fn));
    return add(s, deps);
}

StepId Schedule::transfer(Kind kind, void *buf, size_t bytes, int peer, int tag, const Deps &deps, bool even_empty) {
    Step s{};
    s.kind = bytes == 0 && !even_empty ? Kind::Nop : kind;
    if (kind == Kind::Send) {
        s.src = buf;
    } else {
        s.dst = buf;
    }
    s.n = bytes;
    s.peer = peer;
    s.tag = tag;
    return add(s, deps);
}

StepId Schedule::send(const void *buf, size_t bytes, int peer, int tag, const Deps &deps, bool even_empty) {
    return transfer(Kind::Send, const_cast<void *>(buf), bytes, peer, tag, deps, even_empty);
}

StepId Schedule::recv(void *buf, size_t bytes, int peer, int tag, const Deps &deps, bool even_empty) {
    return transfer(Kind::Recv, buf, bytes, peer, tag, deps, even_empty);
}

StepId Schedule::signal(uint64_t *flag, uint64_t value, const Deps &deps) {
    // Flags only ever grow: a waiter for segment g must not be released by the
    // signal of segment g+1 that happened to run first. So each signal of a flag
    // follows the previous signal of the same flag.
    Deps ordered = deps;
    auto it = last_signal_.begin();
    while (it != last_signal_.end() && it->first != flag) ++it;
    if (it != last_signal_.end()) ordered.add(it->second);
    Step s{};
    s.kind = Kind::Signal;
    s.flag = flag;
    s.value = value;
    const StepId id = add(s, ordered);
    if (it != last_signal_.end()) {
        it->second = id;
    } else {
        last_signal_.emplace_back(flag, id);
    }
    return id;
}

StepId Schedule::signal_on_stream(uint64_t *flag, uint64_t value, const Deps &deps) {
    const StepId id = signal(flag, value, deps);
    if (id != kNoStep) steps_[id].on_stream = true;
    return id;
}

StepId Schedule::wait(const uint64_t *flag, uint64_t value, const Deps &deps) {
    Step s{};
    s.kind = Kind::Wait;
    s.flag = const_cast<uint64_t *>(flag);
    s.value = value;
    return add(s, deps);
}

StepId Schedule::join(const Deps &deps) {
    Step s{};
    s.kind = Kind::Nop;
    return add(s, deps);
}

StepId Schedule::join_all() {
    // The steps nothing depends on yet are the ends of every path built so far.
    std::vector<bool> needed(steps_.size(), false);
    for (StepId d : deps_) needed[d] = true;
    Deps ends;
    for (size_t i = 0; i < steps_.size(); ++i)
        if (!needed[i]) ends.add(static_cast<StepId>(i));
    if (ends.ids().empty() && entry_ != kNoStep) ends.add(entry_);
    Step s{};
    s.kind = Kind::Nop;
    const StepId saved = entry_;
    entry_ = kNoStep;  // an empty schedule: a join of nothing
    const StepId id = add(s, ends);
    entry_ = saved;
    return id;
}

void Schedule::rewind() {
    for (Step &s : steps_) {
        s.state = State::Waiting;
        s.outcome = false;
        s.req = nullptr;
        s.ticket = Ticket{};
    }
}


// Starts or polls one step whose dependencies are complete.
Status Schedule::advance(Step &s, P2PChannel &ch, bool *moved) {
    if (s.state == State::Waiting) {
        // A step of the branch not taken completes at once, doing nothing.
        const bool skipped = skipped_branch(s);
        switch (skipped ? Kind::Nop : s.kind) {
            case Kind::Nop:
                s.state = State::Done;
                *moved = true;
                return STRATA_OK;
            case Kind::Copy: {
                const void *src = s.late ? *s.late + reinterpret_cast<size_t>(s.src) : s.src;
                STRATA_CHECK(s.dom->copy(s.dst, src, s.n, &s.ticket));
                break;
            }
            case Kind::Reduce:
                STRATA_CHECK(issue_reduce(s, *s.dom, &s.ticket));
                break;
            case Kind::Poll:
                break;
            case Kind::Send: {
                bool queued = false;
                STRATA_CHECK(send_onto_lane(s, ch, &queued));
                if (!queued) STRATA_CHECK(ch.isend(s.src, s.n, s.peer, num_.tag_base | s.tag, &s.req));
                count(STRATA_STAT_BYTES_SENT, s.n);
                if (queued) {  // tested once the batch after its copy completes (poll_batches)
                    s.state = State::Started;
                    *moved = true;
                    return STRATA_OK;
                }
                break;
            }
            case Kind::Recv:
                STRATA_CHECK(ch.irecv(s.dst, s.n, s.peer, num_.tag_base | s.tag, &s.req));
                break;
            case Kind::Signal:
                __atomic_store_n(s.flag, num_.base + s.value, __ATOMIC_RELEASE);
                s.state = State::Done;
                *moved = true;
                return STRATA_OK;
            case Kind::Wait:
                break;
        }
        s.state = State::Started;
        *moved = true;
    }
    // Started: poll for completion.
    bool done = false;
    switch (s.kind) {
        case Kind::Copy:
        case Kind::Reduce:
            STRATA_CHECK(s.dom->poll(&s.ticket, &done));
            break;
        case Kind::Send:
        case Kind::Recv: {
            // Chained with sends and receives (no waits on the lane): a receive's own copy
            // into device memory may go on the lane (P2PChannel::test_recv_queued).
            const bool onto_lane = s.kind == Kind::Recv && run_.chained && !run_.lane_waits;
            if (onto_lane) STRATA_CHECK(follow());
            bool queued = false;
            const Status st = s.kind == Kind::Send ? ch.test(s.req, &done)
                              : onto_lane          ? ch.test_recv_queued(s.req, &done, s.n, *chain_lane_, &queued)
                                                   : ch.test_recv(s.req, &done, s.n);
            if (st != STRATA_OK) {
                s.req = nullptr;  // released by the channel
                s.state = State::Done;
                return st;
            }
            if (queued) {
                queued_by_channel(static_cast<StepId>(&s - steps_.data()));
                *moved = true;
                return STRATA_OK;
            }
            break;
        }
        case Kind::Wait:
            done = flag_reached(__atomic_load_n(s.flag, __ATOMIC_ACQUIRE), num_.base + s.value);
            break;
        case Kind::Poll:
            STRATA_CHECK(polls_[s.n](&done, &s.outcome));
            break;
        default:
            done = true;
    }
    if (done) {
        s.state = State::Done;
        *moved = true;
    }
    return STRATA_OK;
}

StepInfo Schedule::info(StepId id) const {
    static const char *const kinds[] = {"nop", "copy", "reduce", "send", "recv", "signal", "wait", "poll"};
    StepInfo i{"none", -1, 0, 0, nullptr, 0, 0};
    if (id >= steps_.size()) return i;
    const Step &s = steps_[id];
    i.kind = kinds[int(s.kind)];
    if (s.kind == Kind::Send || s.kind == Kind::Recv) {
        i.peer = s.peer;
        i.tag = num_.tag_base | s.tag;
        i.bytes = s.n;
    } else if (s.kind == Kind::Wait || s.kind == Kind::Signal) {
        i.flag = s.flag;
        i.value = num_.base + s.value;
        i.holds = __atomic_load_n(s.flag, __ATOMIC_ACQUIRE);
    } else if (s.kind == Kind::Copy) {
        i.bytes = s.n;
    } else if (s.kind == Kind::Reduce) {
        i.bytes = s.n * strata_dtype_size(s.dtype);
        i.srcs = int(s.src_count);
        i.dsts = int(s.dst_count);
    }
    i.deps = &deps_[s.dep_begin];
    i.ndeps = s.dep_count;
    i.when = s.cond;
    i.want = s.want;
    return i;
}

// Gives up what an abandoned run started: receives are cancelled (the transport
// guarantees they write nothing afterwards), copies and reductions (which need no
// peer) are waited for. A started send may still read its buffer: a peer that matched
// it before it gave up too pulls the data later (a rendezvous), and once we return
// that buffer (the caller's, or the call's scratch) may be freed. So sends are polled
// until they complete, for up to kAbandonSendSeconds; one still open then was not
// matched (its receiver gave up first) and is left to the transport.
void Schedule::abandon(P2PChannel &ch) {
    if (run_.chained) drain_lane();
    std::vector<Step *> sends;
    for (Step &s : steps_) {
        if (s.state != State::Started) continue;
        if (s.kind == Kind::Send && s.req != nullptr && run_.copy_queued[&s - steps_.data()]) {
            ch.cancel(s.req, false);  // its copy is past (drain_lane), its transfer not started
            s.req = nullptr;
        } else if (s.kind == Kind::Send && s.req != nullptr) {
            sends.push_back(&s);
            continue;
        }
        if (s.kind == Kind::Recv && s.req != nullptr) {
            ch.cancel(s.req, true);
            s.req = nullptr;
        } else if (s.kind == Kind::Copy || s.kind == Kind::Reduce) {
            bool done = false;
            while (!done && s.dom->poll(&s.ticket, &done) == STRATA_OK && !done) sched_yield();
        }
        s.state = State::Done;
    }
    const double give_up = now_seconds() + kAbandonSendSeconds;
    while (!sends.empty()) {
        for (size_t k = 0; k < sends.size();) {
            Step &s = *sends[k];
            bool done = false;
            if (ch.test(s.req, &done) != STRATA_OK || done) {  // either way req is released
                s.req = nullptr;
                s.state = State::Done;
                sends[k] = sends.back();
                sends.pop_back();
            } else {
                ++k;
            }
        }
        if (sends.empty() || now_seconds() > give_up) break;
        ch.progress();
        sched_yield();
    }
    for (Step *s : sends) {
        ch.cancel(s->req, false);
        s->req = nullptr;
        s->state = State::Done;
    }
}

// Who depends on whom: the same for every run of the same steps (a rerun skips it).
void Schedule::build_graph() {
    Run &r = run_;
    const size_t n = steps_.size();
    if (r.graph_steps != n || r.graph_deps != deps_.size()) {
        r.first_dependent.assign(n + 1, 0);
        r.dependents.assign(deps_.size(), 0);
        for (size_t i = 0; i < n; ++i)
            for (uint32_t d = 0; d < steps_[i].dep_count; ++d) ++r.first_dependent[deps_[steps_[i].dep_begin + d] + 1];
        for (size_t i = 0; i < n; ++i) r.first_dependent[i + 1] += r.first_dependent[i];
        r.fill.assign(r.first_dependent.begin(), r.first_dependent.end() - 1);
        for (size_t i = 0; i < n; ++i)
            for (uint32_t d = 0; d < steps_[i].dep_count; ++d)
                r.dependents[r.fill[deps_[steps_[i].dep_begin + d]]++] = static_cast<uint32_t>(i);
        r.graph_steps = n;
        r.graph_deps = deps_.size();
    }
}

// Which steps go on the lane (chain()): flag waits only in a schedule of one node's
// work (no sends, no receives), whose completion then needs no peer's host.
void Schedule::plan_lane(bool queued_sends) {
    Run &r = run_;
    const size_t n = steps_.size();
    r.chained = chain_lane_ != nullptr;
    r.lane_waits = r.chained && chain_waits_;
    for (size_t i = 0; i < n && r.lane_waits; ++i)
        r.lane_waits = steps_[i].kind != Kind::Send && steps_[i].kind != Kind::Recv;
    if (r.chained) {
        choose_lane_steps();
    } else {
        r.on_lane.assign(n, 0);
    }
    choose_relaxed_waits(queued_sends);
}

// Without waits on the lane: a host flag wait or join whose every dependent is a lane
// step or such a step itself counts its lane dependencies as met once they are queued
// (see engine.h). Nothing the host does after it reads what the lane writes before
// the batch it is in is done, so only when the host polls a peer's flag changes.
// queued_sends: the channel queues a send's copy on the lane (queues_sends), so every
// send is such a step too, whatever follows it: it is done only after its copy, which
// the lane runs after everything queued before it.
void Schedule::choose_relaxed_waits(bool queued_sends) {
    Run &r = run_;
    const size_t n = steps_.size();
    r.relaxed.assign(n, 0);
    if (!r.chained || r.lane_waits) return;
    for (size_t i = n; i-- > 0;) {
        const Step &s = steps_[i];
        if (s.kind == Kind::Send) r.relaxed[i] = queued_sends;
        if (r.on_lane[i] || (s.kind != Kind::Wait && s.kind != Kind::Nop)) continue;
        bool relaxed = true;
        for (uint32_t k = r.first_dependent[i]; k < r.first_dependent[i + 1] && relaxed; ++k)
            relaxed = r.on_lane[r.dependents[k]] || r.relaxed[r.dependents[k]];
        r.relaxed[i] = relaxed;
    }
}

std::vector<uint8_t> Schedule::lane_plan(MemDomain *dom, MemDomain *lane, FlagKinds kinds, bool waits) {
    chain(dom, lane, kinds, waits);
    build_graph();
    plan_lane();
    return run_.on_lane;
}

Status Schedule::start(P2PChannel &ch, RunWatch *watch, Numbering num) {
    num_ = num;
    Run &r = run_;
    r.ch = &ch;
    r.watch = watch;
    r.idle = 0;
    r.last_progress = 0;
    r.reported = false;
    const size_t n = steps_.size();
    build_graph();
    r.pending.assign(n, 0);
    r.done = 0;
    for (size_t i = 0; i < n; ++i) {
        r.done += steps_[i].state == State::Done;  // by an earlier run
        for (uint32_t d = 0; d < steps_[i].dep_count; ++d)
            r.pending[i] += steps_[deps_[steps_[i].dep_begin + d]].state != State::Done;
    }
    plan_lane(ch.queues_sends());
    r.copy_queued.assign(n, 0);
    r.lane_sends.clear();
    r.sends_batched = 0;
    r.lane_ready.clear();
    r.lane_head = 0;
    r.lane_left = 0;
    for (size_t i = 0; i < n; ++i) r.lane_left += r.on_lane[i] && steps_[i].state != State::Done;
    if (r.chained && !r.lane_waits) {
        r.unqueued.assign(r.pending.begin(), r.pending.end());
        for (size_t i = 0; i < n; ++i)
            if (r.on_lane[i] && r.unqueued[i] == 0 && steps_[i].state != State::Done)
                r.lane_ready.push_back(static_cast<StepId>(i));
    }
    r.followed = false;  // at the first lane step that does work (queue): a run whose
                         // lane steps are all skipped (a branch not taken) asks nothing of the GPU
    r.cursor = 0;
    r.queued.clear();
    r.batches.clear();
    r.batched = 0;
    r.batch_works = false;
    r.batch_due = false;
    r.active.clear();
    for (size_t i = 0; i < n; ++i)
        if (r.pending[i] == 0 && steps_[i].state != State::Done && !r.on_lane[i])
            r.active.push_back(static_cast<StepId>(i));
    bool moved = false;
    const Status st = pass(&moved);
    if (st != STRATA_OK) abandon(ch);
    return st;
}

Status Schedule::run(P2PChannel &ch, RunWatch *watch, Numbering num) {
    STRATA_CHECK(start(ch, watch, num));
    bool finished = false, idle = false;
    while (true) {
        STRATA_CHECK(progress(&finished, &idle));
        if (finished) return STRATA_OK;
        if (idle) {
            ch.progress();
            sched_yield();  // ranks may share cores: let the peer we wait for run
        }
    }
}

// One pass over the active steps: a step joins them when its last dependency completes
// (dependency counting), and only they are polled. Nothing limits how far ahead a step
// may start, so no schedule can deadlock on the engine's own bookkeeping.
//
// Flags only rise, so a wait for a value at or above one this pass already found
// unreached on the same flag is not polled: a pipeline's waits for its later segments
// (a wait per segment and peer, all active from the start) then cost nothing until
// the flag gets near them, and a pass costs in proportion to what can move, not to
// the segments (a 4 MiB allreduce at np 4 on two nodes, 8 KiB segments: 1,532 of the
// 1,536 active steps were such waits).
Status Schedule::pass(bool *moved) {
    Run &r = run_;
    r.next.clear();
    r.unreached.clear();
    r.sends_coming = false;  // those are active now
    if (r.chained) STRATA_CHECK(poll_batches(moved));
    // active grows while we walk it: steps released now start in this pass.
    for (size_t a = 0; a < r.active.size(); ++a) {
        const StepId id = r.active[a];
        Step &s = steps_[id];
        const bool wait = s.kind == Kind::Wait && s.state == State::Started;  // not a branch skipped
        if (wait && r.surely_unreached(s.flag, num_.base + s.value)) {
            r.next.push_back(id);
            continue;
        }
        STRATA_CHECK(advance(s, *r.ch, moved));
        if (r.on_lane[id] || r.copy_queued[id]) continue;  // its channel queued its copy on the lane
        if (s.state != State::Done) {
            if (s.kind == Kind::Wait) r.note_unreached(s.flag, num_.base + s.value);
            r.next.push_back(id);
            continue;
        }
        release(id);
    }
    r.active.swap(r.next);
    return r.chained ? issue_chained(moved) : STRATA_OK;
}

// A step is done: it counts, and its dependents whose last dependency it was join the
// active steps (those the lane runs are queued by issue_chained instead).
void Schedule::release(StepId id) {
    Run &r = run_;
    ++r.done;
    for (uint32_t k = r.first_dependent[id]; k < r.first_dependent[id + 1]; ++k) {
        const StepId d = r.dependents[k];
        if (r.on_lane[id] && r.relaxed[d]) continue;  // counted when id was queued (lane_queued)
        const bool last = --r.pending[d] == 0;
        if (!r.on_lane[d]) {
            if (last) r.active.push_back(d);
        } else if (!r.lane_waits && !r.on_lane[id]) {  // a lane step counted its lane dependencies when queued
            lane_dep_met(d);
        }
    }
}

// Lane step id (a schedule with sends or receives) has one dependency fewer neither
// done nor queued: with none left it is ready to queue.
void Schedule::lane_dep_met(StepId id) {
    Run &r = run_;
    if (--r.unqueued[id] == 0) r.lane_ready.push_back(id);
}

// Lane step id was queued (a schedule without waits on the lane): its lane dependents
// need it queued, not done (the stream keeps the order), and so do its relaxed ones;
// any other dependent, a host step, needs it done, which makes the batch due (mark_due).
void Schedule::lane_queued(StepId id) {
    Run &r = run_;
    for (uint32_t k = r.first_dependent[id]; k < r.first_dependent[id + 1]; ++k) {
        const StepId d = r.dependents[k];
        if (r.on_lane[d]) {
            lane_dep_met(d);
        } else if (!r.relaxed[d]) {
            r.batch_due = true;
        } else if (--r.pending[d] == 0) {
            r.active.push_back(d);
            r.sends_coming = r.sends_coming || steps_[d].kind == Kind::Send;
        }
    }
}

// Which steps run on the lane: the chained domain's copies and reductions; signals and
// joins that follow such work (through other lane steps); waits whose release such
// work awaits, for a value at or below one signalled earlier in build order (a rank
// publishes before it waits, so the stream never waits for a signal queued behind it);
// joins that lead to such work. The flags of host work (a buffer exchange between
// host polls) stay with the host, which signals and polls them at no driver call.
void Schedule::choose_lane_steps() {
    Run &r = run_;
    const size_t n = steps_.size();
    auto device = [this](const Step &s) { return (s.kind == Kind::Copy || s.kind == Kind::Reduce) && s.dom == chain_dom_; };
    auto flagish = [](const Step &s) { return s.kind == Kind::Nop || s.kind == Kind::Signal || s.kind == Kind::Wait; };
    std::vector<uint8_t> after(n, 0), leads(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const Step &s = steps_[i];
        after[i] = device(s);
        for (uint32_t d = 0; d < s.dep_count && !after[i]; ++d) after[i] = flagish(s) && after[deps_[s.dep_begin + d]];
    }
    for (size_t i = n; i-- > 0;)
        for (uint32_t k = r.first_dependent[i]; k < r.first_dependent[i + 1] && !leads[i]; ++k) {
            const Step &d = steps_[r.dependents[k]];
            leads[i] = device(d) || (flagish(d) && leads[r.dependents[k]]);
        }
    r.on_lane.assign(n, 0);
    // Per kind of flag (FlagKinds), the highest value signalled so far in build order.
    // A wait is compared with its own kind only: a builder that signals READY and then
    // waits for peers' SLICE, which they raise after waits of their own, must keep that
    // wait with the host, or every rank's stream would wait for a signal queued behind.
    std::vector<std::pair<uintptr_t, uint64_t>> signalled;
    auto highest = [&signalled](uintptr_t kind) -> uint64_t * {
        for (auto &k : signalled)
            if (k.first == kind) return &k.second;
        return nullptr;
    };
    for (size_t i = 0; i < n; ++i) {
        const Step &s = steps_[i];
        switch (s.kind) {
            case Kind::Copy:
            case Kind::Reduce:
                r.on_lane[i] = device(s);
                break;
            case Kind::Signal:
                r.on_lane[i] = after[i] || s.on_stream;
                break;
            case Kind::Nop:
                r.on_lane[i] = after[i] || leads[i];
                break;
            case Kind::Wait: {
                const uint64_t *h = highest(flag_kinds_.of(s.flag));
                r.on_lane[i] = r.lane_waits && leads[i] && h != nullptr && flag_reached(*h, s.value);
                break;
            }
            default:
                break;
        }
        if (s.kind == Kind::Signal) {
            const uintptr_t kind = flag_kinds_.of(s.flag);
            uint64_t *h = highest(kind);
            if (h == nullptr)
                signalled.emplace_back(kind, s.value);
            else if (flag_reached(s.value, *h))
                *h = s.value;
        }
    }
}

// Issues reduce step s on dom (its own domain, or the lane): its sources and late
// destinations resolved where they are known only at run time, one fold into dst or,
// with destinations (reduce_multi_late), into every one of them. t: nullptr on the lane.
Status Schedule::issue_reduce(const Step &s, MemDomain &dom, Ticket *t) {
    const void *const *srcs = &srcs_[s.src_begin];
    const uint32_t n = s.src_count + s.dst_count;
    bool late = false;
    for (uint32_t k = 0; k < n; ++k) late = late || src_bases_[s.src_begin + k] != nullptr;
    if (late) {
        late_srcs_.assign(srcs, srcs + n);
        for (uint32_t k = 0; k < n; ++k)
            if (const char *const *b = src_bases_[s.src_begin + k]) late_srcs_[k] = *b + reinterpret_cast<size_t>(srcs[k]);
        srcs = late_srcs_.data();
    }
    if (s.dst_count == 0) return dom.reduce(s.dst, srcs, static_cast<int>(s.src_count), s.n, s.dtype, s.op, t);
    late_dsts_.clear();
    for (uint32_t k = s.src_count; k < n; ++k) late_dsts_.push_back(const_cast<void *>(srcs[k]));
    return dom.reduce_multi(late_dsts_.data(), static_cast<int>(s.dst_count), srcs, static_cast<int>(s.src_count),
                            s.n, s.dtype, s.op, t);
}

// A dependency that no longer holds up a step queued on the lane: done, or queued
// there before it (the stream runs in order).
bool Schedule::queued_or_done(const Step &s) const {
    return s.state == State::Done || (s.state == State::Started && run_.on_lane[&s - steps_.data()]);
}

// Receive id arrived and its channel queued the copy into its buffer on the lane: from
// now on it is a lane step queued in the current batch (its lane dependents may be
// queued behind it; its host dependents wait for the batch, as after any lane step).
void Schedule::queued_by_channel(StepId id) {
    Run &r = run_;
    r.on_lane[id] = 1;
    r.queued.push_back(id);
    r.batch_works = true;
    lane_queued(id);
}

// Issues send s with its copy queued on the lane (*queued) where it is a relaxed send
// (choose_relaxed_waits: the channel queues sends): what wrote its buffer may be
// queued there and not done. Its copy joins the next batch, which a host step (its
// transfer) needs done.
Status Schedule::send_onto_lane(Step &s, P2PChannel &ch, bool *queued) {
    Run &r = run_;
    const StepId id = static_cast<StepId>(&s - steps_.data());
    *queued = r.chained && r.relaxed[id];
    if (!*queued) return STRATA_OK;
    STRATA_CHECK(follow());
    STRATA_CHECK(ch.isend_queued(s.src, s.n, s.peer, num_.tag_base | s.tag, *chain_lane_, &s.req));
    r.copy_queued[id] = 1;
    r.lane_sends.push_back(id);
    r.batch_works = true;
    r.batch_due = true;
    return STRATA_OK;
}

// A lane step is done: a receive queued there by its channel gives its request back.
void Schedule::lane_step_done(StepId id) {
    Step &s = steps_[id];
    s.state = State::Done;
    if (s.kind == Kind::Recv && s.req != nullptr) {
        run_.ch->finish_queued(s.req);
        s.req = nullptr;
    }
}

// Before the run's first work on the lane: the lane follows the application's stream.
Status Schedule::follow() {
    if (run_.followed) return STRATA_OK;
    run_.followed = true;
    return chain_lane_->follow_application();
}

// Queues step id on the lane (a skipped branch's step and a join queue nothing).
Status Schedule::queue(StepId id, bool *moved) {
    Step &s = steps_[id];
    const bool skipped = skipped_branch(s);
    const Kind does = skipped ? Kind::Nop : s.kind;
    if (does != Kind::Nop) STRATA_CHECK(follow());
    run_.batch_works = run_.batch_works || does != Kind::Nop;
    switch (does) {
        case Kind::Copy: {
            const void *src = s.late ? *s.late + reinterpret_cast<size_t>(s.src) : s.src;
            STRATA_CHECK(chain_lane_->copy(s.dst, src, s.n, nullptr));
            break;
        }
        case Kind::Reduce:
            STRATA_CHECK(issue_reduce(s, *chain_lane_, nullptr));
            break;
        case Kind::Signal:
            STRATA_CHECK(chain_lane_->signal_flag(s.flag, num_.base + s.value));
            // Peers read it only at auto (agreed: the same level on every rank).
            if (chain_queued_only_) __atomic_store_n(queued_note(s.flag), num_.base + s.value, __ATOMIC_RELEASE);
            break;
        case Kind::Wait:
            STRATA_CHECK(chain_lane_->wait_flag(s.flag, num_.base + s.value));
            break;
        default:
            break;
    }
    s.state = State::Started;
    run_.queued.push_back(id);
    --run_.lane_left;
    *moved = true;
    if (!run_.lane_waits) lane_queued(id);
    return STRATA_OK;
}

// Whether lane step s may be queued as far as its flag goes: anything but a wait; a wait
// that its branch skips; a wait for a value its owner has queued on its own lane
// (queued_note) or that the flag holds already; and any wait where the schedule is
// eager (chain). So with queued_only nothing on the lane waits for a value that a
// peer's host has yet to queue, and by induction over the order in which values are
// queued (every wait queued was for a write queued before it, itself behind waits
// queued before that) everything on the lanes completes through GPU work alone: a
// device synchronize or a cudaFree never waits for a peer to call. The host asks again
// at each pass (issue_chained).
bool Schedule::peer_queued(const Step &s) const {
    if (s.kind != Kind::Wait || !chain_queued_only_ || skipped_branch(s)) return true;
    const uint64_t want = num_.base + s.value;
    return flag_reached(__atomic_load_n(queued_note(s.flag), __ATOMIC_ACQUIRE), want) ||
           flag_reached(__atomic_load_n(s.flag, __ATOMIC_ACQUIRE), want);
}

// Whether a step that is not on the lane depends on one queued since run_.queued[from].
bool Schedule::host_needs(size_t from) const {
    const Run &r = run_;
    for (size_t q = from; q < r.queued.size(); ++q) {
        const StepId id = r.queued[q];
        for (uint32_t k = r.first_dependent[id]; k < r.first_dependent[id + 1]; ++k)
            if (!r.on_lane[r.dependents[k]]) return true;
    }
    return false;
}

// Without waits on the lane, what is queued gets its event (the host learns when it is
// done) only once a host step needs it done (batch_due, set as such a step's lane
// dependency is queued) or nothing is left to queue; until then it joins the next
// batch. So a host step never waits for an event that nobody records.
// A send made ready by what was just queued queues its copy at the next pass, and the
// batch waits for it (sends_coming): one event for both.
bool Schedule::mark_due() const {
    const Run &r = run_;
    return r.lane_waits || r.batch_due || (r.lane_left == 0 && !r.sends_coming);
}

// Queues the lane's steps, then marks the end of what was queued: one ticket for the
// whole batch. With waits on the lane, in build order, as far as their dependencies
// allow (a step waits for the host steps it depends on, and every later lane step
// waits behind it); else every lane step that is ready, in the order it became so.
Status Schedule::issue_chained(bool *moved) {
    Run &r = run_;
    const size_t n = steps_.size();
    while (!r.lane_waits && r.lane_head < r.lane_ready.size())  // queue() may make more ready
        STRATA_CHECK(queue(r.lane_ready[r.lane_head++], moved));
    bool held = false;  // the cursor waits for a peer to queue a flag value (peer_queued)
    for (; r.lane_waits && r.cursor < n; ++r.cursor) {
        const Step &s = steps_[r.cursor];
        if (!r.on_lane[r.cursor] || s.state != State::Waiting) continue;
        bool ready = true;
        for (uint32_t d = 0; d < s.dep_count && ready; ++d) ready = queued_or_done(steps_[deps_[s.dep_begin + d]]);
        if (!ready) break;
        if (!peer_queued(s)) {
            held = true;
            break;
        }
        STRATA_CHECK(queue(static_cast<StepId>(r.cursor), moved));
    }
    if (r.batched == r.queued.size() && r.sends_batched == r.lane_sends.size()) return STRATA_OK;
    if (!r.batch_works) {
        // Only joins and skipped steps: nothing for the stream to do, so no event. They are
        // done with the batch before them, or now if the lane has none outstanding (which
        // may make more lane steps ready: round again).
        const size_t from = r.batched;
        r.batched = r.queued.size();
        r.batch_due = false;  // every step queued so far is in a batch, or done below
        if (!r.batches.empty()) {
            r.batches.back().last = r.batched;
            return STRATA_OK;
        }
        for (size_t q = from; q < r.batched; ++q) {
            lane_step_done(r.queued[q]);
            release(r.queued[q]);
        }
        return issue_chained(moved);
    }
    // Held for a peer, what was queued joins the batch that the cursor's next stretch
    // marks, unless a host step waits for it: one event a call, not one a hold.
    if (held && !host_needs(r.batched)) return STRATA_OK;
    if (!mark_due()) return STRATA_OK;  // joins the next batch
    r.batch_works = false;
    r.batch_due = false;
    Run::Batch b{Ticket{}, r.batched, r.queued.size(), r.sends_batched, r.lane_sends.size()};
    r.batched = r.queued.size();
    r.sends_batched = r.lane_sends.size();
    const Status st = chain_lane_->mark(&b.end);
    r.batches.push_back(b);  // even on an error: abandon drains it
    return st;
}

// The batches complete in order (one stream): each completed one's steps are done.
Status Schedule::poll_batches(bool *moved) {
    Run &r = run_;
    while (!r.batches.empty()) {
        bool done = false;
        STRATA_CHECK(chain_lane_->poll(&r.batches.front().end, &done));
        if (!done) return STRATA_OK;
        const Run::Batch b = r.batches.front();
        r.batches.erase(r.batches.begin());
        for (size_t q = b.first; q < b.last; ++q) {
            lane_step_done(r.queued[q]);
            release(r.queued[q]);
        }
        for (size_t q = b.sends_first; q < b.sends_last; ++q) {  // their transfers start at this pass's test
            r.copy_queued[r.lane_sends[q]] = 0;
            r.active.push_back(r.lane_sends[q]);
        }
        *moved = true;
    }
    return STRATA_OK;
}

// An abandoned run's lane may hold a wait that no peer will ever satisfy: the host
// raises those flags itself (the team is failing; flags only rise, so nothing of a
// later call is released early by a value it already reached), then waits for the
// lane to run dry, so that none of the run's work touches memory after it returns.
// Those are node peers' flags: a third rank that waits for the same one is let through
// too, into slots that were never written. So the watch tells the peers of the failure
// first (RunWatch::giving_up), and a chained run that completes is checked against
// its peers' failures before it counts as a result (Team::check_chained_run).
void Schedule::drain_lane() {
    Run &r = run_;
    bool told = false;
    for (StepId id : r.queued) {
        Step &s = steps_[id];
        if (s.state != State::Started || s.kind != Kind::Wait) continue;
        const uint64_t want = num_.base + s.value;
        if (flag_reached(__atomic_load_n(s.flag, __ATOMIC_ACQUIRE), want)) continue;
        if (!told && r.watch != nullptr) r.watch->giving_up();
        told = true;
        __atomic_store_n(s.flag, want, __ATOMIC_RELEASE);
    }
    Ticket end;
    if (chain_lane_->mark(&end) == STRATA_OK) wait_ticket(*chain_lane_, &end);
    for (Run::Batch &b : r.batches) wait_ticket(*chain_lane_, &b.end);  // returns their events
    r.batches.clear();
    for (StepId id : r.queued) lane_step_done(id);
}

// After kSpinsBeforeYield passes without progress the caller is told it may yield
// (*idle), and the watch looks at the run.
Status Schedule::progress(bool *finished, bool *idle, bool *moved_out) {
    Run &r = run_;
    *idle = false;
    if (moved_out) *moved_out = false;
    *finished = r.done == steps_.size();
    if (*finished) return STRATA_OK;
    bool moved = false;
    Status st = pass(&moved);
    if (moved_out) *moved_out = moved;
    if (moved) {
        r.idle = 0;
        r.last_progress = 0;
    } else if (st == STRATA_OK && ++r.idle >= kSpinsBeforeYield) {
        r.idle = 0;
        *idle = true;
        const double t = now_seconds();
        if (r.last_progress == 0) {
            r.last_progress = t;
        } else if (!r.reported && t - r.last_progress > kStallReportSeconds) {
            report_stall(r.active);
            r.reported = true;
        }
        if (r.watch) st = r.watch->idle(*this, r.active, t - r.last_progress);
    }
    if (st != STRATA_OK) {
        abandon(*r.ch);
        return st;
    }
    *finished = r.done == steps_.size();
    return STRATA_OK;
}

}  // namespace strata
