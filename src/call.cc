// SPDX-License-Identifier: BSD-3-Clause
// src/call.cc - one collective call (see call.h).
#include "call.h"

#include "copies.h"

namespace strata {

Call::Call(Team &team) : team_(team), p2p_(&team.p2p()) {}

Call::~Call() = default;

void Call::reset() {
    p2p_ = &team_.p2p();
    seg_seq_ = 0;
    mapped_ = false;
    sched_.clear();
    built_for.clear();
}

void Call::set_number(uint64_t number) {
    number_ = number;
    mapped_ = false;
    sched_.rewind();
}

Numbering Call::numbering() const {
    return Numbering{number_ << 32, static_cast<int>((number_ % Team::kTagCalls) << 12)};
}

Status Call::run() {
    sched_.chain(team_.device() ? &team_.domain() : nullptr, team_.lane(), team_.flag_kinds(), team_.lane_waits(),
                 team_.waits_queued_only());
    return sched_.run(*p2p_, &team_, numbering());
}

Status Call::start() {
    sched_.chain(team_.device() ? &team_.domain() : nullptr, team_.lane(), team_.flag_kinds(), team_.lane_waits(),
                 team_.waits_queued_only());
    return sched_.start(*p2p_, &team_, numbering());
}

uint64_t Call::take_segments(uint64_t n) {
    const uint64_t first = seg_seq_;
    seg_seq_ += n;
    return first;
}

StepId Call::wait_all(int which, uint64_t value, int except, const Deps &deps) {
    Deps all = deps;
    for (int r = 0; r < team_.layout().my_local_size(); ++r) {
        if (r != except) all.add(sched_.wait(team_.flag(r, which), value, deps));
    }
    return sched_.join(all);
}

StepId Call::done_together(const Deps &deps) {
    const int me = team_.layout().my_local();
    const uint64_t g = take_segments(1);
    sched_.signal(team_.flag(me, kFlagDone), g + 1, deps);
    return wait_all(kFlagDone, g + 1, me);
}

// Relative values: the previous call ended at (its number << 32) + 2^32 - 1, which
// is -1 here; the team raised its flags to the end of call 0 at setup.
StepId Call::slots_free(uint64_t seg, const Deps &deps) {
    if (seg < Team::kSlotPairs) return wait_all(kFlagDone, ~uint64_t(0), -1, deps);
    // Segment seg - kSlotPairs is done everywhere once every DONE flag reached its number + 1.
    return wait_all(kFlagDone, seg - Team::kSlotPairs + 1, -1, deps);
}

StepId Call::map_peers(const void *buf, size_t bytes, int source, void *out) {
    const int L = team_.layout().my_local_size(), me = team_.layout().my_local();
    peer_bufs_.assign(size_t(L), nullptr);
    peer_bufs_[size_t(me)] = static_cast<const char *>(buf);
    peer_outs_.assign(size_t(L), nullptr);
    peer_outs_[size_t(me)] = static_cast<const char *>(out);
    // Posted after the copies in (the schedule's entry), since peers read what is posted.
    const StepId posted = sched_.poll([this, buf, bytes, source, out](bool *done, bool *) {
        *done = true;
        return team_.post_buffer(number_, buf, bytes, source, out);
    });
    const StepId all_posted = wait_all(kFlagPosted, 1, me, {sched_.signal(team_.flag(me, kFlagPosted), 1, {posted})});
    const StepId opened = sched_.poll(
        [this](bool *done, bool *) {
            *done = true;
            return team_.open_peers(number_, &peer_bufs_, peer_outs_[size_t(team_.layout().my_local())] != nullptr
                                                               ? &peer_outs_ : nullptr);
        },
        {all_posted});
    // Peers read this rank's buffers (and write its output) once every rank raised
    // POSTED to 2. With a lane, the lane raises it, behind the application's work queued
    // before the call (the lane follows the application's stream), so the host does not
    // wait for that work (NodeChannel::post's settle) and nothing waits for the write:
    // the stream runs it. Without one, post() waited for that work.
    StepId all_opened;
    if (team_.lane() != nullptr) {
        sched_.signal_on_stream(team_.flag(me, kFlagPosted), 2, {opened});
        all_opened = wait_all(kFlagPosted, 2, me, {opened});
    } else {
        all_opened = wait_all(kFlagPosted, 2, me, {sched_.signal(team_.flag(me, kFlagPosted), 2, {opened})});
    }
    return sched_.poll(
        [this](bool *done, bool *outcome) {
            *done = true;
            *outcome = mapped_ = team_.all_opened(number_);
            return STRATA_OK;
        },
        {all_opened});
}

std::vector<LateSrc> Call::peer_outs(size_t offset, bool mine) const {
    const int me = team_.layout().my_local();
    std::vector<LateSrc> to;
    for (int i = 0; i < int(peer_outs_.size()); ++i)
        if (i != me || mine) to.push_back(peer_out(i, offset));
    return to;
}

char *Call::Buffer::reserve(MemDomain &d, size_t n) {
    if (n > bytes || dom != &d) {
        drop();
        void *p = nullptr;
        if (d.alloc(n, &p) != STRATA_OK) return nullptr;
        dom = &d;
        ptr = static_cast<char *>(p);
        bytes = n;
    }
    return ptr;
}

void Call::Buffer::drop() {
    if (ptr != nullptr) dom->release(ptr);
    dom = nullptr;
    ptr = nullptr;
    bytes = 0;
}

char *Call::scratch(size_t bytes) { return scratch_.reserve(team_.domain(), bytes); }
char *Call::scratch2(size_t bytes) { return scratch2_.reserve(team_.domain(), bytes); }
char *Call::host_scratch(size_t bytes) { return host_scratch_.reserve(host_domain(), bytes); }

BufferCopies &Call::copies() {
    if (!copies_) copies_.reset(new BufferCopies);
    return *copies_;
}

void Call::abandon_memory() {
    (void)copies_.release();  // leaked on purpose: never freed under a peer's mapping
}

}  // namespace strata
