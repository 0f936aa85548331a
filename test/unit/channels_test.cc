// SPDX-License-Identifier: BSD-3-Clause
// test/unit/channels_test.cc - the registry of point-to-point channels (btl/channels.h):
// which kind a setting asks for, and that a team's ranks agree on one.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "btl/channels.h"
#include "harness.h"
#include "strata.h"

namespace {

const strata_transport_t kNoTransport{};

strata::ChannelFacts facts(int rank, int size) { return strata::ChannelFacts{rank, size, &kNoTransport}; }

bool ucx_built() { return strata::channel_kind_index("ucx") > 0; }

TEST(Channels, TheTableStartsWithTheTransport) {
    ASSERT_GE(strata::channel_kind_count(), 1);
    EXPECT_STREQ(strata::channel_kind(0).name, "transport");
    EXPECT_EQ(strata::channel_kind_index("transport"), 0);
    EXPECT_EQ(strata::channel_kind_index(nullptr), -1);
    EXPECT_EQ(strata::channel_kind_index(""), -1);
    EXPECT_EQ(strata::channel_kind_index("auto"), -1);
    EXPECT_EQ(strata::channel_kind_index("carrier-pigeon"), -2);
}

TEST(Channels, AutoIsTheTransportAndAnUnknownNameSaysSo) {
    std::string why;
    EXPECT_EQ(strata::choose_channel(nullptr, facts(0, 2), &why), 0);
    EXPECT_EQ(why, "");
    EXPECT_EQ(strata::choose_channel("auto", facts(0, 2), &why), 0);
    EXPECT_EQ(strata::choose_channel("transport", facts(0, 2), &why), 0);
    EXPECT_EQ(why, "");
    EXPECT_EQ(strata::choose_channel("carrier-pigeon", facts(0, 2), &why), 0);
    EXPECT_NE(why.find("carrier-pigeon names no channel"), std::string::npos) << why;
}

TEST(Channels, UcxWhereBuilt) {
    if (!ucx_built()) GTEST_SKIP() << "built without UCX";
    std::string why;
    EXPECT_EQ(strata::choose_channel("ucx", facts(1, 4), &why), strata::channel_kind_index("ucx")) << why;
    // More ranks than its tag holds: this rank cannot, and says why.
    EXPECT_EQ(strata::choose_channel("ucx", facts(1, 1 << 21), &why), 0);
    EXPECT_NE(why.find("ucx channel cannot connect on rank 1"), std::string::npos) << why;
}

TEST(Channels, ATeamIdIsHeldByOneLiveTeam) {
    const uint32_t id = strata::next_team_id();
    ASSERT_TRUE(strata::claim_team_id(id));
    EXPECT_FALSE(strata::claim_team_id(id)) << "a second team of the process took a live id";
    EXPECT_NE(strata::next_team_id(), id);
    EXPECT_FALSE(strata::claim_team_id(0));
    EXPECT_FALSE(strata::claim_team_id(strata::kTeamIds));
    strata::release_team_id(id);
    EXPECT_TRUE(strata::claim_team_id(id)) << "a released id is free again";
    strata::release_team_id(id);
}

std::mutex g_mu;
std::vector<std::string> g_lines;
void keep_line(int level, const char *msg) {
    std::lock_guard<std::mutex> g(g_mu);
    g_lines.push_back(std::to_string(level) + ": " + msg);
}
size_t lines_with(const std::string &words) {
    std::lock_guard<std::mutex> g(g_mu);
    size_t n = 0;
    for (const std::string &l : g_lines) n += l.find(words) != std::string::npos;
    return n;
}

// Four ranks on two nodes (so point-to-point carries the inter-node part), each with
// its own coll_strata_p2p_channel; a 100000-int allreduce (several segments) must be
// exact everywhere.
void allreduce_with(const std::vector<const char *> &settings) {
    const int size = int(settings.size());
    strata_test::ThreadJob job(size);
    g_lines.clear();
    strata_set_logger(&keep_line);
    job.run([&](int rank) {
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.host_buffers = 1;
        cfg.host_handback = 0;
        cfg.lazy_calls = 0;
        cfg.verbose = 1;
        cfg.segment_size = 64 << 10;
        cfg.p2p_channel = settings[size_t(rank)];
        strata_transport_t tp = job.transport(rank);
        strata_team_t *team = nullptr;
        ASSERT_EQ(strata_team_create(rank, size, rank / 2, &tp, &cfg, &team), STRATA_OK);
        std::vector<int> v(100000);
        for (size_t i = 0; i < v.size(); ++i) v[i] = int(i % 1000) * (rank + 1);
        EXPECT_EQ(strata_allreduce(team, STRATA_IN_PLACE, v.data(), v.size(), STRATA_INT32, STRATA_OP_SUM),
                  STRATA_OK);
        const int ranks_sum = size * (size + 1) / 2;
        size_t wrong = 0;
        for (size_t i = 0; i < v.size(); ++i) wrong += v[i] != int(i % 1000) * ranks_sum;
        EXPECT_EQ(wrong, 0u) << "rank " << rank;
        strata_team_destroy(team);
    });
    strata_set_logger(nullptr);
    EXPECT_EQ(job.unreceived(), 0u);
}

// The thread-ranks of one team share a process, as the teams of one process do under
// MPI: each claims the team's id and only one can hold it, so the ranks never agree on
// an id and keep the transport, after the rounds of claims, all of them, exact.
// (Under MPI, test/mpi/run-tests runs the UCX channel itself.)
TEST(Channels, RanksThatCannotAllClaimTheTeamIdKeepTheTransport) {
    if (!ucx_built()) GTEST_SKIP() << "built without UCX";
    allreduce_with({"ucx", "ucx", "ucx", "ucx"});
    EXPECT_EQ(lines_with("point-to-point over transport"), 4u);
    EXPECT_EQ(lines_with("no team id free on every rank after 8 tries"), 1u);
}

TEST(Channels, RanksThatAskForDifferentChannelsAllUseTheTransport) {
    if (!ucx_built()) GTEST_SKIP() << "built without UCX";
    allreduce_with({"ucx", "ucx", "transport", "ucx"});
    EXPECT_EQ(lines_with("point-to-point over transport"), 4u);
    EXPECT_EQ(lines_with("settings name different channels"), 1u);
}

TEST(Channels, OneRankWithAnUnknownChannelTakesEveryRankToTheTransport) {
    allreduce_with({"auto", "auto", "auto", "carrier-pigeon"});
    EXPECT_EQ(lines_with("point-to-point over transport"), 4u);
    EXPECT_EQ(lines_with("carrier-pigeon names no channel"), 1u);
}

TEST(Channels, AutoKeepsTheTransport) {
    allreduce_with({nullptr, "auto", nullptr, "transport"});
    EXPECT_EQ(lines_with("point-to-point over transport"), 4u);
    EXPECT_EQ(lines_with("channel"), 0u) << "no line about the choice when every rank had its wish";
}

}  // namespace
