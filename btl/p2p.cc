// SPDX-License-Identifier: BSD-3-Clause
// btl/p2p.cc - point-to-point channels (see p2p.h).
#include "btl/p2p.h"

#include "common.h"

namespace strata {

Status TransportChannel::isend(const void *buf, size_t bytes, int peer, int tag, void **req) {
    return tp_.isend(tp_.ctx, buf, bytes, peer, tag, req) == 0 ? STRATA_OK : fail(STRATA_ERR_COMM, "isend");
}

Status TransportChannel::irecv(void *buf, size_t bytes, int peer, int tag, void **req) {
    return tp_.irecv(tp_.ctx, buf, bytes, peer, tag, req) == 0 ? STRATA_OK : fail(STRATA_ERR_COMM, "irecv");
}

Status TransportChannel::test(void *req, bool *done) {
    int d = 0;
    const int rc = tp_.test(tp_.ctx, req, &d, nullptr);
    if (rc != 0)  // a peer sent more than this rank expects (sizes differ), or the transport failed
        return rc == STRATA_ERR_TRUNCATE ? STRATA_ERR_TRUNCATE : fail(STRATA_ERR_COMM, "request test");
    *done = d != 0;
    return STRATA_OK;
}

Status TransportChannel::test_recv(void *req, bool *done, size_t expected) {
    int d = 0;
    size_t got = expected;
    const int rc = tp_.test(tp_.ctx, req, &d, &got);
    if (rc != 0) return rc == STRATA_ERR_TRUNCATE ? STRATA_ERR_TRUNCATE : fail(STRATA_ERR_COMM, "request test");
    *done = d != 0;
    // A peer sent less than this rank expects: the ranks passed different sizes.
    return *done && got != expected ? STRATA_ERR_TRUNCATE : STRATA_OK;
}

void TransportChannel::cancel(void *req, bool recv) {
    if (tp_.cancel) tp_.cancel(tp_.ctx, req, recv ? 1 : 0);
}

BounceChannel::~BounceChannel() {
    for (const Buf &b : free_) dom_.release_host(b.ptr);
    for (Req *r : spare_) delete r;
    for (Group *g : spare_groups_) delete g;
}

Status BounceChannel::take(size_t bytes, Buf *b) {
    size_t best = free_.size();  // the smallest free buffer that fits
    for (size_t i = 0; i < free_.size(); ++i)
        if (free_[i].bytes >= bytes && (best == free_.size() || free_[i].bytes < free_[best].bytes)) best = i;
    if (best < free_.size()) {
        *b = free_[best];
        free_[best] = free_.back();
        free_.pop_back();
        return STRATA_OK;
    }
    size_t n = size_t(64) << 10;
    while (n < bytes) n *= 2;
    void *p = nullptr;
    if (dom_.alloc_host(n, &p) != STRATA_OK) return fail(STRATA_ERR_NOMEM, "bounce buffer of the bounce channel");
    *b = Buf{static_cast<char *>(p), n};
    return STRATA_OK;
}

BounceChannel::Req *BounceChannel::new_req() {
    if (spare_.empty()) return new Req{};
    Req *r = spare_.back();
    spare_.pop_back();
    return r;
}

void BounceChannel::drop(Req *r) {
    if (r->group != nullptr) leave(r->group);
    r->group = nullptr;
    give(r->bounce);
    spare_.push_back(r);
}

// The open group, or a new one, with one more send.
BounceChannel::Group *BounceChannel::join_group() {
    if (open_ == nullptr) {
        if (spare_groups_.empty()) {
            open_ = new Group{};
        } else {
            open_ = spare_groups_.back();
            spare_groups_.pop_back();
        }
        *open_ = Group{Ticket{}, false, false, STRATA_OK, 0};
    }
    ++open_->refs;
    return open_;
}

// A send is past its copy (or given up: cancel waits for the event first).
void BounceChannel::leave(Group *g) {
    if (--g->refs > 0) return;
    if (g == open_) open_ = nullptr;
    spare_groups_.push_back(g);
}

// Records the group's event behind every copy issued so far, if not yet, and polls it.
Status BounceChannel::poll_group(Group *g, bool *done) {
    *done = g->done;
    if (g->failed != STRATA_OK || g->done) return g->failed;
    if (!g->marked) {
        g->marked = true;
        if (g == open_) open_ = nullptr;  // later sends start a group of their own
        if ((g->failed = dom_.mark(&g->end)) != STRATA_OK) return g->failed;
    }
    if ((g->failed = dom_.poll(&g->end, &g->done)) != STRATA_OK) return g->failed;
    *done = g->done;
    return STRATA_OK;
}

Status BounceChannel::isend(const void *buf, size_t bytes, int peer, int tag, void **req) {
    return send_copy(buf, bytes, peer, tag, dom_, Req::Phase::Copy, req);
}

// The send's copy goes on the lane behind the work queued there before it; no event of
// its own: the caller tests req once the lane passed it, and the transfer starts then.
Status BounceChannel::isend_queued(const void *buf, size_t bytes, int peer, int tag, MemDomain &lane, void **req) {
    return send_copy(buf, bytes, peer, tag, lane, Req::Phase::Queued, req);
}

// A send's copy into a bounce buffer, on dom_ (Phase::Copy: its group's event tells when
// it is done) or on a run's lane (Phase::Queued).
Status BounceChannel::send_copy(const void *buf, size_t bytes, int peer, int tag, MemDomain &on, Req::Phase phase,
                                void **req) {
    Req *r = new_req();
    *r = Req{false, phase, const_cast<void *>(buf), bytes, peer, tag, {}, Ticket{}, nullptr, nullptr, false};
    Status st = take(bytes, &r->bounce);
    if (st == STRATA_OK) st = on.copy(r->bounce.ptr, buf, bytes, nullptr);
    if (st != STRATA_OK) {
        if (r->bounce.ptr) give(r->bounce);
        spare_.push_back(r);
        return st;
    }
    if (phase == Req::Phase::Copy) r->group = join_group();
    *req = r;
    return STRATA_OK;
}

Status BounceChannel::irecv(void *buf, size_t bytes, int peer, int tag, void **req) {
    Req *r = new_req();
    *r = Req{true, Req::Phase::Transfer, buf, bytes, peer, tag, {}, Ticket{}, nullptr, nullptr, false};
    Status st = take(bytes, &r->bounce);
    if (st == STRATA_OK) st = inner_.irecv(r->bounce.ptr, bytes, peer, tag, &r->inner);
    if (st != STRATA_OK) {
        if (r->bounce.ptr) give(r->bounce);
        spare_.push_back(r);
        return st;
    }
    *req = r;
    return STRATA_OK;
}

// A send copies, then transfers; a receive transfers, then copies (Phase::Copy after).
Status BounceChannel::test(void *req, bool *done) {
    Req *r = static_cast<Req *>(req);
    *done = false;
    bool step_done = false;
    if (r->phase == Req::Phase::Queued && !r->recv) return start_transfer(r);  // the lane passed its copy
    if (r->phase == Req::Phase::Copy) {
        if (!r->recv && !r->tested && !r->group->marked) {  // the pass may issue more sends
            r->tested = true;
            return STRATA_OK;
        }
        const Status st = r->recv ? dom_.poll(&r->ticket, &step_done) : poll_group(r->group, &step_done);
        if (st != STRATA_OK) {
            drop(r);
            return st;
        }
        if (!step_done) return STRATA_OK;
        if (r->recv) {
            drop(r);
            *done = true;
            return STRATA_OK;
        }
        leave(r->group);
        r->group = nullptr;
        return start_transfer(r);
    }
    // A receive's size is checked by the inner channel (a shorter message is an error).
    const Status st = r->recv ? inner_.test_recv(r->inner, &step_done, r->bytes) : inner_.test(r->inner, &step_done);
    if (st != STRATA_OK) {
        drop(r);
        return st;
    }
    if (!step_done) return STRATA_OK;
    if (!r->recv) {
        drop(r);
        *done = true;
        return STRATA_OK;
    }
    r->phase = Req::Phase::Copy;
    const Status copied = dom_.copy(r->user, r->bounce.ptr, r->bytes, &r->ticket);
    if (copied != STRATA_OK) {
        drop(r);
        return copied;
    }
    return STRATA_OK;
}

// A send's copy is done: its bounce buffer goes on the wire.
Status BounceChannel::start_transfer(Req *r) {
    r->phase = Req::Phase::Transfer;
    const Status sent = inner_.isend(r->bounce.ptr, r->bytes, r->peer, r->tag, &r->inner);
    if (sent != STRATA_OK) drop(r);
    return sent;
}

// A receive's host-to-device copy goes on the run's lane instead of the domain's stream,
// so that no event of its own is polled: its buffer is the channel's again once the
// run says the lane passed it (finish_queued).
Status BounceChannel::test_recv_queued(void *req, bool *done, size_t expected, MemDomain &lane, bool *queued) {
    Req *r = static_cast<Req *>(req);
    *queued = false;
    if (!r->recv || r->phase != Req::Phase::Transfer) return test_recv(req, done, expected);
    *done = false;
    bool arrived = false;
    const Status st = inner_.test_recv(r->inner, &arrived, r->bytes);
    if (st != STRATA_OK) {
        drop(r);
        return st;
    }
    if (!arrived) return STRATA_OK;
    if (r->bytes == 0) {  // an empty message (alltoallv): nothing to copy
        drop(r);
        *done = true;
        return STRATA_OK;
    }
    const Status copied = lane.copy(r->user, r->bounce.ptr, r->bytes, nullptr);
    if (copied != STRATA_OK) {
        drop(r);
        return copied;
    }
    r->phase = Req::Phase::Queued;
    *done = true;
    *queued = true;
    return STRATA_OK;
}

void BounceChannel::finish_queued(void *req) { drop(static_cast<Req *>(req)); }

// A given-up send may still be read by the inner channel; its buffer goes back to the
// free list all the same, since only a failed call cancels, and a team whose call
// failed takes no more calls (team_calls.cc). A queued copy (Phase::Queued) is past:
// the caller cancels only once the lane passed it.
void BounceChannel::cancel(void *req, bool recv) {
    Req *r = static_cast<Req *>(req);
    (void)recv;  // r knows
    if (r->phase == Req::Phase::Transfer) {
        inner_.cancel(r->inner, r->recv);
    } else if (r->phase == Req::Phase::Copy) {
        bool done = false;
        if (r->recv) {
            while (dom_.poll(&r->ticket, &done) == STRATA_OK && !done) {
            }
        } else {
            while (poll_group(r->group, &done) == STRATA_OK && !done) {
            }
        }
    }
    drop(r);
}

}  // namespace strata
