// SPDX-License-Identifier: BSD-3-Clause
// btl/exchange.cc - small blocking exchanges and agreements (see exchange.h).
#include "btl/exchange.h"

#include <sched.h>

#include <chrono>
#include <cstdio>

#include "stats.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

// One round of waiting that moved nothing: the waiter's idle(), else the channel's
// progress and a yield.
void idle_once(P2PChannel &ch, const Waiter &w) {
    if (w.idle) {
        w.idle();
    } else {
        ch.progress();
        sched_yield();
    }
}

// Requests of one exchange: each a send or a receive with a peer.
struct Pending {
    struct Req {
        void *req;
        int peer;
        bool recv;
    };
    std::vector<Req> reqs;

    // Releases what is still posted: a receive is cancelled (it never writes later), a
    // send is let go to finish on its own.
    void drop(P2PChannel &ch) {
        for (Req &r : reqs)
            if (r.req != nullptr) ch.cancel(r.req, r.recv);
        reqs.clear();
    }

    // Waits until every request is done. done(i) runs as request i completes; it may
    // post request i again (a stale message) by setting reqs[i].req, or end the wait
    // with a status. On failure everything is dropped and *why says what was awaited.
    template <class Done>
    Status wait(P2PChannel &ch, const Waiter &w, Done done, std::string *why) {
        Clock::time_point last = Clock::now();
        for (;;) {
            bool moved = false, open = false;
            for (size_t i = 0; i < reqs.size(); ++i) {
                if (reqs[i].req == nullptr) continue;
                bool finished = false;
                const Status st = ch.test(reqs[i].req, &finished);
                if (st != STRATA_OK) {
                    reqs[i].req = nullptr;  // the channel released it
                    *why = std::string(reqs[i].recv ? "receiving from" : "sending to") + " rank " +
                           std::to_string(reqs[i].peer) + ": " + status_name(st);
                    drop(ch);
                    return st;
                }
                if (!finished) {
                    open = true;
                    continue;
                }
                moved = true;
                reqs[i].req = nullptr;
                const Status after = done(i);
                if (after != STRATA_OK) {
                    drop(ch);
                    return after;
                }
                open = open || reqs[i].req != nullptr;
            }
            if (!open) {
                reqs.clear();
                return STRATA_OK;
            }
            if (moved) {
                last = Clock::now();
                continue;
            }
            if (w.stop && w.stop()) {
                *why = "given up: a peer failed an earlier call and will not take part";
                drop(ch);
                return STRATA_ERR_PEER;
            }
            if (w.timeout > 0) {
                const double stalled = std::chrono::duration<double>(Clock::now() - last).count();
                if (stalled >= w.timeout) {
                    char b[96];
                    snprintf(b, sizeof b, "no progress for %.1f s (coll_strata_timeout): ", stalled);
                    *why = b;
                    count(STRATA_STAT_DEADLINES);
                    for (const Req &r : reqs) {
                        if (r.req == nullptr) continue;
                        *why += "waiting for rank " + std::to_string(r.peer) +
                                (r.recv ? " (its message)" : " (to take this rank's message)");
                        break;
                    }
                    drop(ch);
                    return STRATA_ERR_TIMEOUT;
                }
            }
            idle_once(ch, w);
        }
    }
};

Status post(P2PChannel &ch, Pending *p, const Msg &m, int tag, bool recv, std::string *why) {
    void *req = nullptr;
    const Status st = recv ? ch.irecv(m.buf, m.bytes, m.peer, tag, &req) : ch.isend(m.buf, m.bytes, m.peer, tag, &req);
    if (st != STRATA_OK) {
        *why = std::string(recv ? "posting a receive from" : "sending to") + " rank " + std::to_string(m.peer) +
               ": " + status_name(st);
        p->drop(ch);
        return st;
    }
    p->reqs.push_back({req, m.peer, recv});
    return STRATA_OK;
}

// Payload of a min agreement: every one has this size (padded), so that a late
// message of another agreement always fits the receive it meets.
constexpr int kMinValues = 15;

int ceil_log2(int n) {
    int k = 0;
    while ((int64_t(1) << k) < n) ++k;
    return k;
}

}  // namespace

Status exchange(P2PChannel &ch, int tag, const std::vector<Msg> &sends, const std::vector<Msg> &recvs,
                const Waiter &w, std::string *why) {
    Pending p;
    for (const Msg &m : recvs) STRATA_CHECK(post(ch, &p, m, tag, true, why));
    for (const Msg &m : sends) STRATA_CHECK(post(ch, &p, m, tag, false, why));
    return p.wait(ch, w, [](size_t) { return STRATA_OK; }, why);
}

Status wait_request(P2PChannel &ch, void *req, const Waiter &w, const char *what, std::string *why) {
    const Clock::time_point since = Clock::now();
    for (;;) {
        bool done = false;
        const Status st = ch.test(req, &done);
        if (st != STRATA_OK) {
            *why = std::string(what) + ": " + status_name(st);
            return st;
        }
        if (done) return STRATA_OK;
        const double waited = std::chrono::duration<double>(Clock::now() - since).count();
        if (w.timeout > 0 && waited >= w.timeout) {
            char b[128];
            snprintf(b, sizeof b, "no progress for %.1f s (coll_strata_timeout): waiting for ", waited);
            *why = b + std::string(what) + " (every rank makes it)";
            count(STRATA_STAT_DEADLINES);
            return STRATA_ERR_TIMEOUT;
        }
        idle_once(ch, w);
    }
}

Status Agreements::round(int tag, int to, const std::vector<int> &out, int from, std::vector<int> *in,
                         const Waiter &w, const char *what, int r, std::string *why) {
    const int seq = int(uint32_t(seq_));
    auto said = [&](const std::string &s) {
        char b[96];
        snprintf(b, sizeof b, "%s (agreement %llu, round %d): ", what, (unsigned long long)seq_, r);
        *why = b + s;
    };
    // A message already here: kept while this rank was in an earlier agreement.
    bool have = false;
    auto early = early_.find({from, tag});
    if (early != early_.end()) {
        const int32_t ahead = int32_t(uint32_t(early->second[0]) - uint32_t(seq));
        if (ahead == 0) {
            *in = early->second;
            have = true;
        }
        if (ahead <= 0) early_.erase(early);
    }
    Pending p;
    std::string err;
    if (!have) {
        if (post(ch_, &p, {in->data(), in->size() * sizeof(int), from}, tag, true, &err) != STRATA_OK) {
            said(err);
            return STRATA_ERR_COMM;
        }
    }
    if (post(ch_, &p, {const_cast<int *>(out.data()), out.size() * sizeof(int), to}, tag, false, &err) !=
        STRATA_OK) {
        said(err);
        return STRATA_ERR_COMM;
    }
    auto done = [&](size_t i) -> Status {
        if (!p.reqs[i].recv) return STRATA_OK;
        const int32_t ahead = int32_t(uint32_t((*in)[0]) - uint32_t(seq));
        if (ahead < 0) {  // of an agreement this peer and this rank gave up: gone for good
            void *again = nullptr;
            if (ch_.irecv(in->data(), in->size() * sizeof(int), from, tag, &again) != STRATA_OK)
                return STRATA_ERR_COMM;
            p.reqs[i].req = again;
            return STRATA_OK;
        }
        if (ahead > 0) {  // the peer has given this agreement up and gone on to a later one
            early_[{from, tag}] = *in;
            err = "rank " + std::to_string(from) + " gave this agreement up (its deadline or an error)";
            return STRATA_ERR_PEER;
        }
        return STRATA_OK;
    };
    const Status st = p.wait(ch_, w, done, &err);
    if (st != STRATA_OK) said(err);
    return st;
}

Status Agreements::min(int *values, int n, const Waiter &w, const char *what, std::string *why) {
    if (n > kMinValues) {
        *why = std::string(what) + ": too many values to agree on";
        return STRATA_ERR_INTERNAL;
    }
    ++seq_;
    // Round k: send what this rank knows to rank + 2^k, fold in what rank - 2^k knows.
    // After ceil(log2 size) rounds every rank has folded every rank's values (some
    // twice, which a minimum does not mind).
    std::vector<int> out(size_t(kMinValues) + 1, 0), in(out.size());
    out[0] = int(uint32_t(seq_));
    for (int i = 0; i < n; ++i) out[size_t(i) + 1] = values[i];
    const int rounds = ceil_log2(size_);
    for (int k = 0; k < rounds; ++k) {
        const int step = 1 << k;
        STRATA_CHECK(round(tag_base_ + k, (rank_ + step) % size_, out, (rank_ - step + size_) % size_, &in, w, what,
                           k, why));
        for (int i = 1; i <= n; ++i)
            if (in[size_t(i)] < out[size_t(i)]) out[size_t(i)] = in[size_t(i)];
    }
    for (int i = 0; i < n; ++i) values[i] = out[size_t(i) + 1];
    return STRATA_OK;
}

Status Agreements::allgather(int value, int *all, const Waiter &w, const char *what, std::string *why) {
    ++seq_;
    // known[d] is the value of rank (rank - d) mod size. Round k (have = 2^k known):
    // send the first min(have, size - have) of them to rank + have, receive as many
    // from rank - have, which are the values at distances have, have + 1, ...
    std::vector<int> known{value};
    known.reserve(size_t(size_));
    std::vector<int> out, in;
    for (int k = 0; known.size() < size_t(size_); ++k) {
        const size_t have = known.size(), m = std::min(have, size_t(size_) - have);
        out.assign(m + 1, 0);
        out[0] = int(uint32_t(seq_));
        std::copy(known.begin(), known.begin() + long(m), out.begin() + 1);
        in.assign(m + 1, 0);
        STRATA_CHECK(round(tag_base_ + kGatherTags + k, int((size_t(rank_) + have) % size_t(size_)), out,
                           int((size_t(rank_) + size_t(size_) - have) % size_t(size_)), &in, w, what, k, why));
        known.insert(known.end(), in.begin() + 1, in.end());
    }
    for (int d = 0; d < size_; ++d) all[(rank_ - d + size_) % size_] = known[size_t(d)];
    return STRATA_OK;
}

}  // namespace strata
