// SPDX-License-Identifier: BSD-3-Clause
// test/unit/call_test.cc - one call of a team: numbering, failure, deadline, agreement.
//
// Thread ranks over the in-process transport, node keys giving two nodes of two
// ranks (0,1 | 2,3) unless said otherwise. Each test shows what a rank's peers see
// when one rank goes wrong, and that the next call is exact or handed back to the
// previous component (recovery), never wrong.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "harness.h"
#include "strata.h"

namespace {

struct Ranks {
    std::vector<strata_status_t> st;
    std::vector<std::string> err;
};

// Runs body(rank, team) on thread ranks with the given node keys.
template <class Body>
Ranks on_teams(const std::vector<int> &keys, const Body &body, double timeout = 0, int check_args = 0) {
    const int size = int(keys.size());
    strata_test::ThreadJob job(size);
    Ranks out{std::vector<strata_status_t>(size, STRATA_ERR_INTERNAL), std::vector<std::string>(size)};
    job.run([&](int rank) {
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.host_buffers = 1;   // a team of host ranks runs, and sets up at the first call,
        cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
        cfg.lazy_calls = 0;     // whatever the defaults users get
        cfg.timeout = timeout;
        cfg.check_args = check_args;
        strata_transport_t tp = job.transport(rank);
        strata_team_t *team = nullptr;
        ASSERT_EQ(strata_team_create(rank, size, keys[rank], &tp, &cfg, &team), STRATA_OK);
        out.st[rank] = body(rank, team);
        out.err[rank] = strata_team_last_error(team);
        strata_team_destroy(team);
    });
    return out;
}

strata_status_t sum(strata_team_t *team, int rank, size_t n, int size, int *wrong) {
    std::vector<int> v(n, rank + 1);
    const strata_status_t st = strata_allreduce(team, STRATA_IN_PLACE, v.data(), n, STRATA_INT32, STRATA_OP_SUM);
    *wrong = 0;
    for (int x : v) *wrong += x != size * (size + 1) / 2;
    return st;
}

const std::vector<int> kTwoNodes{0, 0, 2, 2};

TEST(Call, NullBufferFailsTheCallOnEveryRankAndLaterCallsGoToThePreviousComponent) {
    const Ranks r = on_teams(kTwoNodes, [](int rank, strata_team_t *team) {
        int wrong = 0;
        EXPECT_EQ(sum(team, rank, 100, 4, &wrong), STRATA_OK);  // set up, all present
        std::vector<int> v(100, 1);
        const strata_status_t st =
            strata_allreduce(team, STRATA_IN_PLACE, rank == 0 ? nullptr : v.data(), 100, STRATA_INT32, STRATA_OP_SUM);
        EXPECT_EQ(sum(team, rank, 100, 4, &wrong), STRATA_FALLBACK) << "rank " << rank;
        return st;
    });
    EXPECT_EQ(r.st[0], STRATA_ERR_BUFFER);
    for (int k = 1; k < 4; ++k) {
        EXPECT_EQ(r.st[k], STRATA_ERR_PEER) << "rank " << k;
        EXPECT_NE(r.err[k].find("failed"), std::string::npos) << r.err[k];
    }
    // Node peer by the shared flag, the other node by a notice from rank 0.
    EXPECT_NE(r.err[1].find("on this node"), std::string::npos) << r.err[1];
    // (the first of ranks 2 and 3 to hear may tell the other through their node's flag)
    EXPECT_TRUE(r.err[2].find("rank 0 (on another node)") != std::string::npos ||
                r.err[3].find("rank 0 (on another node)") != std::string::npos)
        << r.err[2] << " / " << r.err[3];
}

// Both ranks find it at the call's end; the call fails as any failure does, so both
// hand the next call back (the glue runs it in the previous component).
TEST(Call, DifferentCountOnANodeIsTruncateAndTheNextCallIsHandedBackEverywhere) {
    const Ranks r = on_teams({0, 0}, [](int rank, strata_team_t *team) {
        std::vector<int> v(200000, 1);
        const strata_status_t st = strata_allreduce(team, STRATA_IN_PLACE, v.data(), rank == 0 ? 100000 : 200000,
                                                    STRATA_INT32, STRATA_OP_SUM);
        int wrong = 0;
        EXPECT_EQ(sum(team, rank, 1000, 2, &wrong), STRATA_FALLBACK) << "rank " << rank;
        return st;
    });
    EXPECT_EQ(r.st[0], STRATA_ERR_TRUNCATE);
    EXPECT_EQ(r.st[1], STRATA_ERR_TRUNCATE);
}

// The deadline of the two tests below: the first call (the team's setup) must make
// progress within it on a loaded machine (at 0.5 s, a busy 2-core machine stalled a
// setup that long and failed them), and the late rank sleeps well past it.
constexpr double kDeadline = 2.0;

// The rank waited for is late: its node peer times out and names it, and the late
// rank, arriving, hears of the failure instead of waiting.
TEST(Call, DeadlineNamesTheRankWaitedFor) {
    const uint64_t expired = strata_stat(STRATA_STAT_DEADLINES);
    const Ranks r = on_teams(
        {0, 0},
        [](int rank, strata_team_t *team) {
            int wrong = 0;
            EXPECT_EQ(sum(team, rank, 100000, 2, &wrong), STRATA_OK);
            if (rank == 1) usleep(6000 * 1000);
            return sum(team, rank, 100000, 2, &wrong);
        },
        kDeadline);
    EXPECT_EQ(r.st[0], STRATA_ERR_TIMEOUT);
    EXPECT_NE(r.err[0].find("for rank 1"), std::string::npos) << r.err[0];
    EXPECT_EQ(r.st[1], STRATA_ERR_PEER) << r.err[1];
    // the performance variable coll_strata_deadline_expiries: rank 0's, not rank 1's
    EXPECT_EQ(strata_stat(STRATA_STAT_DEADLINES) - expired, 1u);
}

// Across nodes: whoever waits longest times out (naming the rank it waits for, which
// may be a node peer itself waiting for the late one); nobody returns OK. With a CUDA
// driver loadable (and no context) the late rank's call also asks again about GPUs,
// an agreement under the same deadline: the wait is then named there.
TEST(Call, DeadlineEndsTheCallOnEveryNode) {
    const uint64_t expired = strata_stat(STRATA_STAT_DEADLINES);
    const Ranks r = on_teams(
        kTwoNodes,
        [](int rank, strata_team_t *team) {
            int wrong = 0;
            EXPECT_EQ(sum(team, rank, 100000, 4, &wrong), STRATA_OK);
            if (rank == 3) usleep(6000 * 1000);
            return sum(team, rank, 100000, 4, &wrong);
        },
        kDeadline);
    int timed_out = 0;
    for (int k = 0; k < 4; ++k) {
        EXPECT_NE(r.st[k], STRATA_OK) << "rank " << k << ": " << r.err[k];
        if (r.st[k] == STRATA_ERR_TIMEOUT) {
            ++timed_out;
            EXPECT_TRUE(r.err[k].find("waiting in step") != std::string::npos ||
                        r.err[k].find("waiting for rank") != std::string::npos)
                << r.err[k];
        }
    }
    EXPECT_GE(timed_out, 1);
    EXPECT_EQ(strata_stat(STRATA_STAT_DEADLINES) - expired, uint64_t(timed_out));  // one per rank that timed out
}

TEST(Call, CheckArgsAgreesBeforeAnythingMovesAndKeepsTheTeam) {
    const Ranks r = on_teams(
        kTwoNodes,
        [](int rank, strata_team_t *team) {
            std::vector<int> v(64, 1);
            const strata_status_t st =
                strata_allreduce(team, STRATA_IN_PLACE, v.data(), rank == 2 ? 32 : 64, STRATA_INT32, STRATA_OP_SUM);
            EXPECT_EQ(strata_allreduce(team, STRATA_IN_PLACE, v.data(), 64, STRATA_INT32, STRATA_OP_MAX), STRATA_OK);
            // A bad argument is agreed too: this rank's error, an error everywhere, nothing broken.
            EXPECT_NE(strata_allreduce(team, STRATA_IN_PLACE, rank == 1 ? nullptr : v.data(), 64, STRATA_INT32,
                                       STRATA_OP_SUM),
                      STRATA_OK);
            int wrong = 0;
            EXPECT_EQ(sum(team, rank, 64, 4, &wrong), STRATA_OK);
            EXPECT_EQ(wrong, 0);
            return st;
        },
        0, 1);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(r.st[k], STRATA_ERR_TRUNCATE) << "rank " << k;
}

// coll_strata_check_args auto (the default): a team across nodes agrees every call, so
// a mismatch that the data cannot show (an op, a datatype of the same size) fails on
// every rank and moves nothing; the same call with check_args off returns success on
// the ranks of the node that did not see it (rank 3's node compares it at the end).
strata_status_t max_on_rank3(int rank, strata_team_t *team, bool *moved) {
    std::vector<int> v(64, rank + 1);
    const strata_status_t st = strata_allreduce(team, STRATA_IN_PLACE, v.data(), v.size(), STRATA_INT32,
                                                rank == 3 ? STRATA_OP_MAX : STRATA_OP_SUM);
    *moved = v[0] != rank + 1;
    return st;
}

TEST(Call, CheckArgsAutoAgreesEveryCallAcrossNodes) {
    bool moved[4] = {};
    const Ranks r = on_teams(
        kTwoNodes,
        [&moved](int rank, strata_team_t *team) {
            int wrong = 0;
            EXPECT_EQ(sum(team, rank, 64, 4, &wrong), STRATA_OK);  // set up
            const strata_status_t st = max_on_rank3(rank, team, &moved[rank]);
            EXPECT_EQ(sum(team, rank, 64, 4, &wrong), STRATA_OK) << "rank " << rank << ": the team goes on";
            EXPECT_EQ(wrong, 0);
            return st;
        },
        0, STRATA_CHECK_ARGS_NODES);
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(r.st[k], STRATA_ERR_ARG) << "rank " << k;
        EXPECT_FALSE(moved[k]) << "rank " << k;
    }
    // The control: off, nothing is agreed before the data moves, so rank 3's node only
    // finds the mismatch at the call's end, rank 2's buffer already written (rank 3's
    // own is unchanged only because MAX gives its value back). Whether a rank of node
    // 0 writes its buffer and returns success, or learns of the failure first and
    // returns it with its buffer untouched, is a race (CI met both): either way it
    // never returns success with nothing written.
    bool moved_off[4] = {};
    const Ranks off = on_teams(kTwoNodes, [&moved_off](int rank, strata_team_t *team) {
        int wrong = 0;
        EXPECT_EQ(sum(team, rank, 64, 4, &wrong), STRATA_OK);
        return max_on_rank3(rank, team, &moved_off[rank]);
    });
    EXPECT_NE(off.st[2], STRATA_OK);
    EXPECT_NE(off.st[3], STRATA_OK);
    EXPECT_TRUE(moved_off[2]) << "check_args off: rank 2's buffer was written before its node found the mismatch";
    for (int k = 0; k < 2; ++k)
        EXPECT_TRUE(moved_off[k] || off.st[k] != STRATA_OK) << "check_args off: rank " << k << " returned success unwritten";
}

// On one node auto sends no agreement message (the node compares each call's
// signature in shared memory at its end) and a mismatch still fails on every rank.
TEST(Call, CheckArgsAutoOnOneNodeLeavesItToTheNode) {
    const Ranks r = on_teams(
        {0, 0, 0, 0},
        [](int rank, strata_team_t *team) {
            int wrong = 0;
            EXPECT_EQ(sum(team, rank, 64, 4, &wrong), STRATA_OK);
            bool moved = false;
            return max_on_rank3(rank, team, &moved);
        },
        0, STRATA_CHECK_ARGS_NODES);
    for (int k = 0; k < 4; ++k) EXPECT_NE(r.st[k], STRATA_OK) << "rank " << k;
}

TEST(Call, ManyCallsNumberedAlikeStayExact) {
    // More calls than tag slots: tags and flags come from the call number, not counts.
    const Ranks r = on_teams(kTwoNodes, [](int rank, strata_team_t *team) {
        int wrong = 0, total = 0;
        for (int i = 0; i < 1100; ++i) {
            if (sum(team, rank, size_t(1 + i % 7), 4, &wrong) != STRATA_OK) return STRATA_ERR_INTERNAL;
            total += wrong;
        }
        return total == 0 ? STRATA_OK : STRATA_ERR_INTERNAL;
    });
    for (int k = 0; k < 4; ++k) EXPECT_EQ(r.st[k], STRATA_OK) << "rank " << k;
}

}  // namespace

// The core says which algorithm served the last call (the glue's verbose line uses it).
TEST(Call, TheTeamNamesTheAlgorithmOfItsLastCall) {
    const Ranks r = on_teams(kTwoNodes, [](int rank, strata_team_t *team) {
        EXPECT_EQ(strata_team_last_algorithm(team), nullptr);
        int wrong = 0;
        strata_status_t st = sum(team, rank, 8, 4, &wrong);  // small: the latency rule
        const uint64_t rd = strata_team_calls(team, STRATA_COLL_ALLREDUCE, 1);
        EXPECT_STREQ(strata_team_last_algorithm(team), strata_algorithm_name(STRATA_COLL_ALLREDUCE, rd ? 1 : 0));
        if (st == STRATA_OK) st = sum(team, rank, 200000, 4, &wrong);  // large: the bandwidth rule
        EXPECT_STREQ(strata_team_last_algorithm(team), "hier_ring");
        EXPECT_EQ(wrong, 0);
        return st;
    });
    for (int k = 0; k < 4; ++k) EXPECT_EQ(r.st[k], STRATA_OK) << "rank " << k;
}
