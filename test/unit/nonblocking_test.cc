// SPDX-License-Identifier: BSD-3-Clause
// test/unit/nonblocking_test.cc - nonblocking and persistent calls (strata_i*).
//
// Thread ranks, as the other team tests. What is checked:
//  - several calls outstanding on one team, of every collective, complete with exact
//    values whatever order the ranks test them in (calls run in the order they were
//    made; a test progresses all of them);
//  - a persistent call runs again at each start with new inputs, between blocking
//    calls, and its completion callback comes once per start;
//  - MPI's progress rule across communicators: a rank blocked in a blocking call on
//    one team still advances the call it queued on another team, which a peer waits for;
//  - a team not set up yet hands nonblocking calls back (on every rank), and one set
//    up by its first blocking call takes them;
//  - a rank-local failure of a queued call reaches its peers as an error, not a hang;
//  - coll_strata_check_args: a queued call is agreed at the head of the queue without
//    waiting in its start; a mismatch is an error on every rank, nothing moves and the
//    team goes on; a persistent call agrees at its first start only.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <vector>

#include "harness.h"
#include "strata.h"
#include "team.h"

namespace {

strata_config_t host_config() {
    strata_config_t cfg;
    strata_config_defaults(&cfg);
    cfg.host_buffers = 1;  // no GPU here: schedules in host memory
    cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
    cfg.lazy_calls = 0;
    cfg.segment_size = 1024;  // many segments per call: the stages wrap
    cfg.timeout = 60;         // a hang becomes a failure
    return cfg;
}

strata_team_t *make_team(strata_test::ThreadJob &job, int rank, const std::vector<int> &keys,
                         const strata_config_t &cfg) {
    strata_transport_t tp = job.transport(rank);
    strata_team_t *t = nullptr;
    EXPECT_EQ(strata_team_create(rank, job.size(), keys[size_t(rank)], &tp, &cfg, &t), STRATA_OK);
    return t;
}

// The first blocking call sets the team up.
void set_up(strata_team_t *t, int size) {
    int v = 1;
    ASSERT_EQ(strata_allreduce(t, STRATA_IN_PLACE, &v, 1, STRATA_INT32, STRATA_OP_SUM), STRATA_OK);
    ASSERT_EQ(v, size);
}

// Tests until req completes; returns its status.
strata_status_t wait(strata_request_t *req) {
    strata_status_t st = STRATA_OK;
    while (!strata_request_test(req, &st)) std::this_thread::yield();
    return st;
}

struct Completions {  // called from whichever thread rank's pass completed the call
    std::atomic<int> calls{0};
    std::atomic<strata_status_t> last{STRATA_OK};
    static void note(void *ctx, strata_status_t st) {
        Completions *c = static_cast<Completions *>(ctx);
        ++c->calls;
        c->last = st;
    }
};

void every_collective_outstanding(const std::vector<int> &keys) {
    const int size = int(keys.size());
    strata_test::ThreadJob job(size);
    job.run([&](int rank) {
        strata_team_t *t = make_team(job, rank, keys, host_config());
        set_up(t, size);
        const size_t n = 3001;  // odd: uneven blocks and segments
        const size_t P = size_t(size);
        std::vector<int> ar_in(n), ar_out(n), ag_out(n * P), bc(n), a2a_in(n * P), a2a_out(n * P);
        std::vector<int> rs_in(n * P), rs_out(n), red_out(n), ar2(n);
        for (size_t i = 0; i < n; ++i) {
            ar_in[i] = rank * 7 + int(i % 13);
            ar2[i] = rank + 1;
            bc[i] = rank == 1 ? int(i) * 3 : -1;
        }
        for (size_t i = 0; i < n * P; ++i) {
            a2a_in[i] = rank * 100000 + int(i);
            rs_in[i] = rank + int(i % 5);
        }
        std::vector<size_t> rs_counts(P, n);
        std::vector<strata_request_t *> reqs(8, nullptr);
        ASSERT_EQ(strata_iallreduce(t, ar_in.data(), ar_out.data(), n, STRATA_INT32, STRATA_OP_SUM, nullptr, &reqs[0]),
                  STRATA_OK);
        ASSERT_EQ(strata_iallgather(t, ar_in.data(), ag_out.data(), n * sizeof(int), nullptr, &reqs[1]), STRATA_OK);
        ASSERT_EQ(strata_ibcast(t, bc.data(), n * sizeof(int), 1, nullptr, &reqs[2]), STRATA_OK);
        ASSERT_EQ(strata_ialltoall(t, a2a_in.data(), a2a_out.data(), n * sizeof(int), nullptr, &reqs[3]), STRATA_OK);
        ASSERT_EQ(strata_ireduce_scatter(t, rs_in.data(), rs_out.data(), rs_counts.data(), STRATA_INT32,
                                         STRATA_OP_SUM, nullptr, &reqs[4]),
                  STRATA_OK);
        ASSERT_EQ(strata_ireduce(t, ar_in.data(), red_out.data(), n, STRATA_INT32, STRATA_OP_MAX, 0, nullptr, &reqs[5]),
                  STRATA_OK);
        ASSERT_EQ(strata_iallreduce(t, STRATA_IN_PLACE, ar2.data(), n, STRATA_INT32, STRATA_OP_PROD, nullptr, &reqs[6]),
                  STRATA_OK);
        // One rank waits from the last, the others from the first: any order completes.
        std::vector<size_t> order(7);
        std::iota(order.begin(), order.end(), 0);
        if (rank % 2) std::reverse(order.begin(), order.end());
        for (size_t k : order) {
            ASSERT_NE(reqs[k], nullptr);
            EXPECT_EQ(wait(reqs[k]), STRATA_OK) << "call " << k << " rank " << rank;
            EXPECT_EQ(strata_request_free(reqs[k]), STRATA_OK);
        }
        int wrong = 0;
        for (size_t i = 0; i < n; ++i) {
            int sum = 0, mx = 0, prod = 1;
            for (int r = 0; r < size; ++r) {
                sum += r * 7 + int(i % 13);
                mx = std::max(mx, r * 7 + int(i % 13));
                prod *= r + 1;
            }
            wrong += ar_out[i] != sum;
            wrong += bc[i] != int(i) * 3;
            wrong += ar2[i] != prod;
            if (rank == 0) wrong += red_out[i] != mx;
            int rs = 0;
            for (int r = 0; r < size; ++r) rs += r + int((size_t(rank) * n + i) % 5);
            wrong += rs_out[i] != rs;
            for (int r = 0; r < size; ++r) {
                wrong += ag_out[size_t(r) * n + i] != r * 7 + int(i % 13);
                wrong += a2a_out[size_t(r) * n + i] != r * 100000 + int(size_t(rank) * n + i);
            }
        }
        EXPECT_EQ(wrong, 0) << "rank " << rank;
        strata_team_destroy(t);
    });
    EXPECT_EQ(job.unreceived(), 0u);
}

TEST(Nonblocking, EveryCollectiveOutstandingAtOnceOnTwoNodes) { every_collective_outstanding({0, 0, 2, 2}); }
TEST(Nonblocking, EveryCollectiveOutstandingAtOnceOnOneNode) { every_collective_outstanding({5, 5, 5}); }
TEST(Nonblocking, EveryCollectiveOutstandingAtOnceOneRankPerNode) { every_collective_outstanding({0, 1, 2}); }

// A team's first call nonblocking: setup runs in steps behind it and it is served; the
// stack's own call (internal) never starts a setup, and is handed back.
TEST(Nonblocking, ATeamNeverSetUpSetsUpInStepsAtItsFirstNonblockingCall) {
    strata_test::ThreadJob job(2);
    job.run([&](int rank) {
        strata_team_t *t = make_team(job, rank, {0, 0}, host_config());
        int v = rank, out = 0;
        strata_request_t *req = reinterpret_cast<strata_request_t *>(&v);
        strata_start_t stack_own{0, nullptr, nullptr, 1};
        EXPECT_EQ(strata_iallreduce(t, &v, &out, 1, STRATA_INT32, STRATA_OP_SUM, &stack_own, &req), STRATA_FALLBACK);
        EXPECT_EQ(req, nullptr);
        ASSERT_EQ(strata_iallreduce(t, &v, &out, 1, STRATA_INT32, STRATA_OP_SUM, nullptr, &req), STRATA_OK);
        ASSERT_NE(req, nullptr);
        EXPECT_EQ(wait(req), STRATA_OK);
        EXPECT_EQ(out, 1);
        strata_request_free(req);
        ASSERT_EQ(strata_iallreduce(t, &v, &out, 1, STRATA_INT32, STRATA_OP_SUM, nullptr, &req), STRATA_OK);
        EXPECT_EQ(wait(req), STRATA_OK);
        EXPECT_EQ(out, 1);
        strata_request_free(req);
        // Zero bytes: nothing to do, no request.
        EXPECT_EQ(strata_iallreduce(t, &v, &out, 0, STRATA_INT32, STRATA_OP_SUM, nullptr, &req), STRATA_OK);
        EXPECT_EQ(req, nullptr);
        strata_team_destroy(t);
    });
}

// Calls queued behind a setup in steps are decided at the head of the queue: one the
// built-in host rules hand back completes with STRATA_FALLBACK (the glue then starts it
// in the previous component), on every rank; a large one after it is served.
TEST(Nonblocking, ACallQueuedBehindSetupIsHandedBackAtTheHeadOfTheQueue) {
    strata_test::ThreadJob job(2);
    job.run([&](int rank) {
        strata_config_t cfg = host_config();
        cfg.host_handback = 1;  // allreduce up to 8 KiB: handed back
        strata_team_t *t = make_team(job, rank, {0, 1}, cfg);
        int v = rank, out = -1;
        std::vector<int> in(4096, rank + 1), sum(4096, 0);
        strata_request_t *small = nullptr, *large = nullptr;
        ASSERT_EQ(strata_iallreduce(t, &v, &out, 1, STRATA_INT32, STRATA_OP_SUM, nullptr, &small), STRATA_OK);
        ASSERT_EQ(strata_iallreduce(t, in.data(), sum.data(), in.size(), STRATA_INT32, STRATA_OP_SUM, nullptr, &large),
                  STRATA_OK);
        EXPECT_EQ(wait(small), STRATA_FALLBACK);
        EXPECT_EQ(out, -1);  // untouched: the previous component's to do
        EXPECT_EQ(wait(large), STRATA_OK);
        EXPECT_EQ(sum[4095], 3);
        strata_request_free(small);
        strata_request_free(large);
        strata_team_destroy(t);
    });
}

TEST(Nonblocking, APersistentCallRunsAgainAtEachStartBetweenBlockingCalls) {
    const std::vector<int> keys{0, 0, 2, 2};
    strata_test::ThreadJob job(4);
    job.run([&](int rank) {
        strata_team_t *t = make_team(job, rank, keys, host_config());
        set_up(t, 4);
        const size_t n = 2500;
        std::vector<double> in(n), out(n);
        Completions done;
        strata_start_t how{1, &Completions::note, &done};
        strata_request_t *req = nullptr;
        ASSERT_EQ(strata_iallreduce(t, in.data(), out.data(), n, STRATA_DOUBLE, STRATA_OP_SUM, &how, &req), STRATA_OK);
        ASSERT_NE(req, nullptr);
        EXPECT_EQ(done.calls, 0);  // built, not started
        for (int start = 0; start < 5; ++start) {
            for (size_t i = 0; i < n; ++i) in[i] = rank * 10 + start + double(i % 3);
            ASSERT_EQ(strata_request_start(req), STRATA_OK);
            EXPECT_EQ(strata_request_start(req), STRATA_ERR_ARG);  // still running
            EXPECT_EQ(strata_request_free(req), STRATA_ERR_ARG);
            EXPECT_EQ(wait(req), STRATA_OK);
            EXPECT_EQ(done.calls, start + 1);
            int wrong = 0;
            for (size_t i = 0; i < n; ++i) wrong += out[i] != 60 + 4 * (start + double(i % 3));
            EXPECT_EQ(wrong, 0) << "start " << start << " rank " << rank;
            // A blocking call in between: other numbers, another schedule, the same slots.
            std::vector<int> v(700, rank);
            ASSERT_EQ(strata_allreduce(t, STRATA_IN_PLACE, v.data(), v.size(), STRATA_INT32, STRATA_OP_MAX),
                      STRATA_OK);
            EXPECT_EQ(v[699], 3);
        }
        EXPECT_EQ(strata_request_free(req), STRATA_OK);
        strata_team_destroy(t);
    });
}

// Rank 0 queues a call on team A, then blocks in a call on team B; rank 1 queues the
// same call on A and waits for it before it makes the call on B. Rank 1 can only get
// past its wait if rank 0's blocking call on B advances A.
TEST(Nonblocking, ABlockingCallOnAnotherTeamStillAdvancesTheQueuedOne) {
    strata_test::ThreadJob job_a(2), job_b(2);
    job_a.run([&](int rank) {
        strata_config_t cfg = host_config();
        strata_team_t *a = make_team(job_a, rank, {0, 1}, cfg);
        strata_team_t *b = make_team(job_b, rank, {0, 1}, cfg);
        set_up(a, 2);
        set_up(b, 2);
        std::vector<int> in(5000, rank + 1), out(5000), v(3000, rank + 2);
        strata_request_t *req = nullptr;
        ASSERT_EQ(strata_iallreduce(a, in.data(), out.data(), in.size(), STRATA_INT32, STRATA_OP_SUM, nullptr, &req),
                  STRATA_OK);
        if (rank == 0) {
            ASSERT_EQ(strata_allreduce(b, STRATA_IN_PLACE, v.data(), v.size(), STRATA_INT32, STRATA_OP_SUM), STRATA_OK);
            EXPECT_EQ(wait(req), STRATA_OK);
        } else {
            EXPECT_EQ(wait(req), STRATA_OK);
            ASSERT_EQ(strata_allreduce(b, STRATA_IN_PLACE, v.data(), v.size(), STRATA_INT32, STRATA_OP_SUM), STRATA_OK);
        }
        EXPECT_EQ(out[4999], 3);
        EXPECT_EQ(v[2999], 5);
        strata_request_free(req);
        strata_team_destroy(b);
        strata_team_destroy(a);
    });
}

// A rank whose queued call fails at its start (a NULL buffer with bytes to move)
// fails it for everyone: its peers' requests complete with an error, and later calls
// on the team go to the previous component, instead of waiting for ever. (Without
// check_args: with it, the default across nodes, the agreement fails the call on every
// rank before it starts and the team goes on.)
TEST(Nonblocking, ALocalFailureInAQueuedCallReachesThePeers) {
    strata_test::ThreadJob job(4);
    job.run([&](int rank) {
        strata_config_t cfg = host_config();
        cfg.check_args = STRATA_CHECK_ARGS_OFF;
        strata_team_t *t = make_team(job, rank, {0, 0, 2, 2}, cfg);
        set_up(t, 4);
        std::vector<int> in(4000, 1), out(4000), out2(4000);
        strata_request_t *ok = nullptr, *bad = nullptr;
        ASSERT_EQ(strata_iallreduce(t, in.data(), out.data(), in.size(), STRATA_INT32, STRATA_OP_SUM, nullptr, &ok),
                  STRATA_OK);
        ASSERT_EQ(strata_iallreduce(t, rank == 2 ? nullptr : in.data(), out2.data(), in.size(), STRATA_INT32,
                                    STRATA_OP_SUM, nullptr, &bad),
                  STRATA_OK);
        EXPECT_EQ(wait(bad), rank == 2 ? STRATA_ERR_BUFFER : STRATA_ERR_PEER) << "rank " << rank;
        EXPECT_EQ(wait(ok), STRATA_OK);
        EXPECT_EQ(out[0], 4);
        strata_request_free(ok);
        strata_request_free(bad);
        EXPECT_EQ(strata_allreduce(t, STRATA_IN_PLACE, in.data(), in.size(), STRATA_INT32, STRATA_OP_SUM),
                  STRATA_FALLBACK);
        strata_team_destroy(t);
    });
}

// A transport that counts the messages this rank sends in the rounds of the team's
// min agreements (coll_strata_check_args is one).
struct CountingMins {
    strata_transport_t inner;
    std::atomic<int> sent{0};
    static CountingMins &of(void *ctx) { return *static_cast<CountingMins *>(ctx); }
    static int isend(void *c, const void *b, size_t n, int p, int t, void **r) {
        const int first = strata::Team::control_tag(strata::Team::kAgreeSub);
        if (t >= first && t < first + strata::Agreements::kGatherTags) ++of(c).sent;
        return of(c).inner.isend(of(c).inner.ctx, b, n, p, t, r);
    }
    static int irecv(void *c, void *b, size_t n, int p, int t, void **r) {
        return of(c).inner.irecv(of(c).inner.ctx, b, n, p, t, r);
    }
    static int test(void *c, void *r, int *d, size_t *n) { return of(c).inner.test(of(c).inner.ctx, r, d, n); }
    static void cancel(void *c, void *req, int is_recv) { of(c).inner.cancel(of(c).inner.ctx, req, is_recv); }
};

// A team of job's rank whose agreement messages c counts (nullptr if it cannot be made).
strata_team_t *counting_team(strata_test::ThreadJob &job, int rank, int key, const strata_config_t &cfg,
                             CountingMins *c) {
    c->inner = job.transport(rank);
    strata_transport_t tp = strata_test::forwarding_transport(c, c->inner);
    strata_team_t *t = nullptr;
    return strata_team_create(rank, int(job.size()), key, &tp, &cfg, &t) == STRATA_OK ? t : nullptr;
}

strata_config_t checking_config() {
    strata_config_t cfg = host_config();
    cfg.check_args = 1;
    return cfg;
}

// Rank 0 starts its call before any peer has (the others wait for it to return from
// the start): a start that waited for the agreement would wait for ever (here: until
// the 60 s deadline fails it). Rank 2 passes half the count: every rank's request
// completes with STRATA_ERR_TRUNCATE, no rank's output is written, and the team goes
// on (a matched nonblocking call and a blocking one after it are served, exact).
void queued_mismatch(const std::vector<int> &keys, bool set_up_first, int check_args = STRATA_CHECK_ARGS_ON) {
    const int size = int(keys.size());
    strata_test::ThreadJob job(size);
    std::atomic<bool> rank0_started{false};
    job.run([&](int rank) {
        strata_config_t cfg = checking_config();
        cfg.check_args = check_args;
        strata_team_t *t = make_team(job, rank, keys, cfg);
        if (set_up_first) set_up(t, size);
        std::vector<int> in(4000, rank + 1), out(4000, -7);
        strata_request_t *bad = nullptr, *ok = nullptr;
        if (rank != 0)
            while (!rank0_started) std::this_thread::yield();
        ASSERT_EQ(strata_iallreduce(t, in.data(), out.data(), rank == 2 ? 2000 : 4000, STRATA_INT32, STRATA_OP_SUM,
                                    nullptr, &bad),
                  STRATA_OK);
        if (rank == 0) rank0_started = true;
        EXPECT_EQ(wait(bad), STRATA_ERR_TRUNCATE) << "rank " << rank;
        EXPECT_EQ(std::count(out.begin(), out.end(), -7), 4000) << "rank " << rank << ": the call moved data";
        ASSERT_EQ(strata_iallreduce(t, in.data(), out.data(), in.size(), STRATA_INT32, STRATA_OP_SUM, nullptr, &ok),
                  STRATA_OK);
        EXPECT_EQ(wait(ok), STRATA_OK) << "rank " << rank;
        EXPECT_EQ(std::count(out.begin(), out.end(), size * (size + 1) / 2), 4000) << "rank " << rank;
        strata_request_free(bad);
        strata_request_free(ok);
        std::vector<int> v(3000, rank);
        EXPECT_EQ(strata_allreduce(t, STRATA_IN_PLACE, v.data(), v.size(), STRATA_INT32, STRATA_OP_MAX), STRATA_OK);
        EXPECT_EQ(v[2999], size - 1);
        strata_team_destroy(t);
    });
}

TEST(Nonblocking, CheckArgsAgreesAQueuedCallWithoutWaitingInItsStartTwoNodes) { queued_mismatch({0, 0, 2, 2}, true); }
TEST(Nonblocking, CheckArgsAgreesAQueuedCallWithoutWaitingInItsStartOneRankPerNode) {
    queued_mismatch({0, 1, 2, 3}, true);
}
// The team's first call: queued undecided behind its setup in steps, agreed after it.
TEST(Nonblocking, CheckArgsAgreesACallQueuedBehindSetup) { queued_mismatch({0, 0, 2, 2}, false); }
// check_args auto (the default): a call queued before setup does not know yet whether
// its team spans nodes; its gate asks at the head of the queue, after setup.
TEST(Nonblocking, CheckArgsAutoAgreesACallQueuedBehindSetupOnTwoNodes) {
    queued_mismatch({0, 0, 2, 2}, false, STRATA_CHECK_ARGS_NODES);
}
TEST(Nonblocking, CheckArgsAutoAgreesAQueuedCallOnTwoNodes) {
    queued_mismatch({0, 0, 2, 2}, true, STRATA_CHECK_ARGS_NODES);
}

// On one node auto agrees nothing: no agreement message at any nonblocking call.
TEST(Nonblocking, CheckArgsAutoSendsNoAgreementOnOneNode) {
    strata_test::ThreadJob job(4);
    std::vector<CountingMins> counting(4);
    job.run([&](int rank) {
        CountingMins &c = counting[size_t(rank)];
        strata_config_t cfg = host_config();
        cfg.check_args = STRATA_CHECK_ARGS_NODES;
        strata_team_t *t = counting_team(job, rank, 0, cfg, &c);
        ASSERT_NE(t, nullptr);
        set_up(t, 4);
        const int before = c.sent;
        std::vector<int> in(2500, rank + 1), out(2500, -7);
        for (int k = 0; k < 3; ++k) {
            strata_request_t *req = nullptr;
            ASSERT_EQ(strata_iallreduce(t, in.data(), out.data(), in.size(), STRATA_INT32, STRATA_OP_SUM, nullptr, &req),
                      STRATA_OK);
            EXPECT_EQ(wait(req), STRATA_OK);
            EXPECT_EQ(out[2499], 10);
            strata_request_free(req);
        }
        EXPECT_EQ(c.sent - before, 0) << "rank " << rank << ": agreed on one node";
        strata_team_destroy(t);
    });
}

// A persistent call: a mismatched one (rank 1's op) fails on every rank at each start,
// nothing written; a matched one is agreed at its first start only (this rank sends no
// agreement message at the later starts) and is exact at every start.
TEST(Nonblocking, CheckArgsAgreesAPersistentCallAtItsFirstStartOnly) {
    const std::vector<int> keys{0, 0, 2, 2};
    strata_test::ThreadJob job(4);
    std::vector<CountingMins> counting(4);
    job.run([&](int rank) {
        CountingMins &c = counting[size_t(rank)];
        strata_team_t *t = counting_team(job, rank, keys[size_t(rank)], checking_config(), &c);
        ASSERT_NE(t, nullptr);
        set_up(t, 4);
        const size_t n = 2500;
        std::vector<int> in(n, rank + 1), out(n, -7);
        strata_start_t how{1, nullptr, nullptr, 0};
        strata_request_t *bad = nullptr, *good = nullptr;
        ASSERT_EQ(strata_iallreduce(t, in.data(), out.data(), n, STRATA_INT32, rank == 1 ? STRATA_OP_MAX : STRATA_OP_SUM,
                                    &how, &bad),
                  STRATA_OK);
        for (int start = 0; start < 2; ++start) {
            ASSERT_EQ(strata_request_start(bad), STRATA_OK);
            EXPECT_EQ(wait(bad), STRATA_ERR_ARG) << "start " << start << " rank " << rank;
            EXPECT_EQ(std::count(out.begin(), out.end(), -7), long(n)) << "start " << start << " rank " << rank;
        }
        EXPECT_EQ(strata_request_free(bad), STRATA_OK);
        ASSERT_EQ(strata_iallreduce(t, in.data(), out.data(), n, STRATA_INT32, STRATA_OP_SUM, &how, &good), STRATA_OK);
        for (int start = 0; start < 3; ++start) {
            std::fill(in.begin(), in.end(), rank + 1 + start);
            const int before = c.sent;
            ASSERT_EQ(strata_request_start(good), STRATA_OK);
            EXPECT_EQ(wait(good), STRATA_OK) << "start " << start << " rank " << rank;
            if (start == 0)
                EXPECT_GT(c.sent - before, 0) << "rank " << rank << ": no agreement at the first start";
            else
                EXPECT_EQ(c.sent - before, 0) << "rank " << rank << ": agreed again at start " << start;
            EXPECT_EQ(std::count(out.begin(), out.end(), 10 + 4 * start), long(n)) << "start " << start;
        }
        EXPECT_EQ(strata_request_free(good), STRATA_OK);
        strata_team_destroy(t);
    });
}

}  // namespace
