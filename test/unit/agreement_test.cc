// SPDX-License-Identifier: BSD-3-Clause
// test/unit/agreement_test.cc - strata's own agreements (btl/exchange.h): exact at
// every team size, under the deadline, and never reading another agreement's values;
// a team whose setup cannot finish falls back, saying what it waited for.
#include <gtest/gtest.h>

#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

#include "btl/exchange.h"
#include "btl/p2p.h"
#include "harness.h"
#include "strata.h"

namespace {

using strata::Agreements;
using strata::TransportChannel;
using strata::Waiter;
using strata_test::ThreadJob;

constexpr int kTag = 100;

TEST(Agreements, MinAndAllgatherAreExactAtEveryTeamSize) {
    for (int size = 1; size <= 9; ++size) {
        ThreadJob job(size);
        std::vector<std::string> errors(static_cast<size_t>(size));
        job.run([&](int rank) {
            strata_transport_t tp = job.transport(rank);
            TransportChannel ch(tp);
            Agreements agree(ch, rank, size, kTag);
            std::string why, &err = errors[size_t(rank)];
            for (int round = 0; round < 5 && err.empty(); ++round) {
                // min: value i of rank r is (r * 7 + i * 3 + round) % (size + 2) - 1
                int v[3];
                for (int i = 0; i < 3; ++i) v[i] = (rank * 7 + i * 3 + round) % (size + 2) - 1;
                if (agree.min(v, 3, Waiter{}, "test", &why) != STRATA_OK) err = "min: " + why;
                for (int i = 0; i < 3 && err.empty(); ++i) {
                    int want = INT_MAX;
                    for (int r = 0; r < size; ++r) want = std::min(want, (r * 7 + i * 3 + round) % (size + 2) - 1);
                    if (v[i] != want) err = "min " + std::to_string(i) + " at round " + std::to_string(round);
                }
                std::vector<int> all(size_t(size), -1);
                if (err.empty() && agree.allgather(rank * 10 + round, all.data(), Waiter{}, "test", &why) != STRATA_OK)
                    err = "allgather: " + why;
                for (int r = 0; r < size && err.empty(); ++r)
                    if (all[size_t(r)] != r * 10 + round) err = "allgather entry " + std::to_string(r);
            }
            if (err.empty() && agree.count() != 10) err = "count " + std::to_string(agree.count());
        });
        for (int r = 0; r < size; ++r) EXPECT_EQ(errors[size_t(r)], "") << "size " << size << " rank " << r;
        EXPECT_EQ(job.unreceived(), 0u) << "size " << size;
    }
}

// Rank 0 gives up agreement 1 at its deadline (rank 1 is late) and goes on to
// agreement 2. Rank 1, arriving, finishes agreement 1 with what rank 0 had sent; rank
// 0 drops rank 1's late message of agreement 1 and both agree exactly on agreement 2.
TEST(Agreements, AGivenUpAgreementNeverFeedsTheNextOne) {
    ThreadJob job(2);
    std::vector<std::string> errors(2);
    std::vector<strata_status_t> first(2, STRATA_ERR_INTERNAL);
    job.run([&](int rank) {
        strata_transport_t tp = job.transport(rank);
        TransportChannel ch(tp);
        Agreements agree(ch, rank, 2, kTag);
        std::string why, &err = errors[size_t(rank)];
        if (rank == 1) usleep(400 * 1000);
        int v = rank == 0 ? 5 : 9;
        first[size_t(rank)] = agree.min(&v, 1, Waiter{nullptr, rank == 0 ? 0.1 : 0}, "first", &why);
        if (rank == 0 && why.find("waiting for rank 1") == std::string::npos) err = "no rank named: " + why;
        int w = rank == 0 ? 40 : 30;
        if (agree.min(&w, 1, Waiter{}, "second", &why) != STRATA_OK) err = "second: " + why;
        else if (w != 30) err = "second agreed " + std::to_string(w);
    });
    EXPECT_EQ(first[0], STRATA_ERR_TIMEOUT);
    EXPECT_EQ(first[1], STRATA_OK);
    EXPECT_EQ(errors[0], "");
    EXPECT_EQ(errors[1], "");
    EXPECT_EQ(job.unreceived(), 0u);
}

// A rank that never sets up: its peers' setup ends at their deadline with a line that
// names the rank waited for, and the communicator falls back on them (no hang).
TEST(Agreements, AStuckSetupEndsAtTheDeadlineAndFallsBack) {
    constexpr int kRanks = 3;
    ThreadJob job(kRanks);
    std::vector<strata_status_t> setup(kRanks, STRATA_ERR_INTERNAL), after(kRanks, STRATA_ERR_INTERNAL);
    std::vector<std::string> said(kRanks);
    job.run([&](int rank) {
        strata_config_t cfg = strata_test::host_test_config();
        cfg.timeout = 0.3;
        strata_transport_t tp = job.transport(rank);
        strata_team_t *team = nullptr;
        ASSERT_EQ(strata_team_create(rank, kRanks, rank, &tp, &cfg, &team), STRATA_OK);
        if (rank != 2) {
            setup[size_t(rank)] = strata_team_setup(team);
            said[size_t(rank)] = strata_team_last_error(team);
            int v = 1;
            after[size_t(rank)] = strata_allreduce(team, STRATA_IN_PLACE, &v, 1, STRATA_INT32, STRATA_OP_SUM);
        }
        strata_team_destroy(team);
    });
    for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(setup[size_t(r)], STRATA_ERR_TIMEOUT) << "rank " << r;
        EXPECT_NE(said[size_t(r)].find("waiting for rank"), std::string::npos) << said[size_t(r)];
        EXPECT_NE(said[size_t(r)].find("coll_strata_timeout"), std::string::npos) << said[size_t(r)];
        EXPECT_EQ(after[size_t(r)], STRATA_FALLBACK) << "rank " << r;
    }
}

}  // namespace

namespace {

// The info key strata=off, read by each rank alone, on one rank only: setup agrees on
// it and every rank hands its calls back (none runs strata while another does not).
TEST(Agreements, OneRankOptingOutHandsEveryRankBack) {
    constexpr int kRanks = 3;
    ThreadJob job(kRanks);
    std::vector<strata_status_t> st(kRanks, STRATA_ERR_INTERNAL);
    job.run([&](int rank) {
        strata_config_t cfg = strata_test::host_test_config();
        cfg.opt_out = rank == 1;
        strata_transport_t tp = job.transport(rank);
        strata_team_t *team = nullptr;
        ASSERT_EQ(strata_team_create(rank, kRanks, rank, &tp, &cfg, &team), STRATA_OK);
        std::vector<int> v(4096, 1);
        st[size_t(rank)] = strata_allreduce(team, STRATA_IN_PLACE, v.data(), v.size(), STRATA_INT32, STRATA_OP_SUM);
        strata_team_destroy(team);
    });
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(st[size_t(r)], STRATA_FALLBACK) << "rank " << r;
    EXPECT_EQ(job.unreceived(), 0u);
}

}  // namespace
