// SPDX-License-Identifier: BSD-3-Clause
// test/unit/cuda_team_test.cc - when a team asks again which ranks have a GPU.
//
// A rank counts as having a GPU once a CUDA context is current on its thread. A team
// on which not every rank had one asks again (one allgather) at its 2nd, 4th, 8th,
// ... call, the same calls on every rank, until every rank has one; then it tries the
// GPU path, and the ranks agree on the outcome. Ranks as threads share one process,
// where CUDA IPC cannot open a handle of its own process, so here the GPU setup must
// fail on every rank alike and leave the team on the host path, asking no more.
// Needs a CUDA driver: the real one on a GPU machine, test/fakecuda in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "mem/classify.h"
#include "strata.h"
#include "team.h"
#include "topo/cuda_api.h"

namespace {

using strata_test::ThreadJob;

// A transport that counts each rank's allgathers (how a team asks): the messages of
// their first round.
struct Counting {
    strata_transport_t inner;
    std::atomic<int> allgathers{0};
    static Counting &of(void *ctx) { return *static_cast<Counting *>(ctx); }
    static int isend(void *c, const void *b, size_t n, int p, int t, void **r) {
        if (t == strata::Team::control_tag(strata::Team::kAgreeSub + strata::Agreements::kGatherTags))
            ++of(c).allgathers;
        return of(c).inner.isend(of(c).inner.ctx, b, n, p, t, r);
    }
    static int irecv(void *c, void *b, size_t n, int p, int t, void **r) {
        return of(c).inner.irecv(of(c).inner.ctx, b, n, p, t, r);
    }
    static int test(void *c, void *r, int *d, size_t *n) { return of(c).inner.test(of(c).inner.ctx, r, d, n); }
    static void cancel(void *c, void *req, int is_recv) { of(c).inner.cancel(of(c).inner.ctx, req, is_recv); }
    strata_transport_t transport() { return strata_test::forwarding_transport(this, inner); }
};

// Why a test here cannot run ("" when it can): it needs a CUDA driver.
std::string no_driver() {
    if (strata::cuda_available()) return "";
    std::string why;
    strata::cuda_driver(&why);
    return "no CUDA driver: " + why;
}

// Rank `rank`'s team of `ranks` over its counting transport, set up at its first call
// (or by strata_team_setup), every size run by strata; nullptr with *err on failure.
strata_team_t *counted_team(ThreadJob &job, int rank, int ranks, Counting &counting, int host_buffers,
                            std::string *err) {
    counting.inner = job.transport(rank);
    strata_transport_t tp = counting.transport();
    strata_config_t cfg;
    strata_config_defaults(&cfg);
    cfg.lazy_calls = 0;     // set up at the first call, whatever the component's default
    cfg.host_buffers = host_buffers;
    cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
    strata_team_t *team = nullptr;
    if (strata_team_create(rank, ranks, 0, &tp, &cfg, &team) != STRATA_OK) *err = "team create";
    return team;
}

// What is wrong in call `call`'s sum of {rank + call, 1, rank, call} over two ranks.
std::string wrong_sum(const int v[4], int call) {
    const int want[4] = {1 + 2 * call, 2, 1, 2 * call};
    for (int i = 0; i < 4; ++i)
        if (v[i] != want[i]) return "wrong sum at call " + std::to_string(call);
    return "";
}

TEST(CudaTeamSetup, AsksAgainAtDoublingCallsUntilEveryRankHasAGpu) {
    if (!no_driver().empty()) GTEST_SKIP() << no_driver();
    constexpr int kRanks = 2, kCalls = 20, kRank1GetsGpuAt = 6;
    ThreadJob job(kRanks);
    std::vector<Counting> counting(kRanks);
    std::vector<std::string> errors(kRanks);
    job.run([&](int rank) {
        std::string &err = errors[size_t(rank)];
        strata_team_t *team = counted_team(job, rank, kRanks, counting[size_t(rank)], 1, &err);
        if (team == nullptr) return;
        if (rank == 0 && !strata_test::make_gpu0_current(&err)) return;
        for (int call = 1; call <= kCalls; ++call) {
            if (rank == 1 && call == kRank1GetsGpuAt && !strata_test::make_gpu0_current(&err)) break;
            int v[4] = {rank + call, 1, rank, call};
            if (strata_allreduce(team, STRATA_IN_PLACE, v, 4, STRATA_INT32, STRATA_OP_SUM) != STRATA_OK) {
                err = "allreduce failed at call " + std::to_string(call);
                break;
            }
            err = wrong_sum(v, call);
        }
        strata_team_destroy(team);
    });
    for (int r = 0; r < kRanks; ++r) {
        EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
        // setup, then calls 2, 4 and 8; at 8 both ranks have a GPU, the GPU setup fails
        // alike on both (IPC within one process), and nobody asks at 16.
        EXPECT_EQ(counting[size_t(r)].allgathers.load(), 4) << "rank " << r;
    }
    EXPECT_EQ(job.unreceived(), 0u);
}

// The same question from a team that only ever sees nonblocking calls, set up (as the
// glue sets MPI_COMM_WORLD up inside MPI_Init) before any rank had a GPU: its calls are
// counted as blocking ones are, and the question is asked in steps at the head of the
// queue. host_buffers 0: the team is off at setup (every GPU call handed back) and
// comes on at call 2, where rank 0 has a GPU; 1: it runs on the host from the start.
// Before nonblocking calls counted, such a team asked once (its setup) and never again.
class CudaTeamSetupNonblocking : public ::testing::TestWithParam<int> {};

TEST_P(CudaTeamSetupNonblocking, AsksAgainAtDoublingCallsUntilEveryRankHasAGpu) {
    if (!no_driver().empty()) GTEST_SKIP() << no_driver();
    constexpr int kRanks = 2, kCalls = 20, kRank1GetsGpuAt = 6;
    ThreadJob job(kRanks);
    std::vector<Counting> counting(kRanks);
    std::vector<std::string> errors(kRanks);
    std::vector<int> served(kRanks, 0);
    job.run([&](int rank) {
        std::string &err = errors[size_t(rank)];
        strata_team_t *team = counted_team(job, rank, kRanks, counting[size_t(rank)], GetParam(), &err);
        if (team == nullptr) return;
        const strata_status_t set = strata_team_setup(team);
        if (set != STRATA_OK && set != STRATA_FALLBACK) err = "setup failed";
        if (err.empty() && rank == 0 && !strata_test::make_gpu0_current(&err)) return;
        for (int call = 2; call <= kCalls && err.empty(); ++call) {
            if (rank == 1 && call == kRank1GetsGpuAt && !strata_test::make_gpu0_current(&err)) break;
            int v[4] = {rank + call, 1, rank, call};
            strata_request_t *req = nullptr;
            strata_status_t st = strata_iallreduce(team, STRATA_IN_PLACE, v, 4, STRATA_INT32, STRATA_OP_SUM, nullptr, &req);
            if (st == STRATA_OK && req != nullptr) {
                while (!strata_request_test(req, &st)) std::this_thread::yield();
                strata_request_free(req);
            }
            if (st == STRATA_FALLBACK) continue;  // handed back: the previous component's to run
            if (st != STRATA_OK) {
                err = "iallreduce failed at call " + std::to_string(call);
                break;
            }
            ++served[size_t(rank)];
            err = wrong_sum(v, call);
        }
        strata_team_destroy(team);
    });
    for (int r = 0; r < kRanks; ++r) {
        EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
        // setup, then calls 2, 4 and 8, as blocking calls ask.
        EXPECT_EQ(counting[size_t(r)].allgathers.load(), 4) << "rank " << r;
        // Served from call 2 on (off until then without host buffers).
        EXPECT_EQ(served[size_t(r)], kCalls - 1) << "rank " << r;
    }
    EXPECT_EQ(job.unreceived(), 0u);
}

INSTANTIATE_TEST_SUITE_P(HostBuffers, CudaTeamSetupNonblocking, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int> &p) { return p.param ? "On" : "Off"; });

}  // namespace
