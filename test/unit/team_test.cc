// SPDX-License-Identifier: BSD-3-Clause
// test/unit/team_test.cc - team setup: agreement, fallback, cleanup, bad input.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "btl/node_channel.h"
#include "harness.h"
#include "strata.h"
#include "topo/shm_segment.h"

namespace {

int strata_files(const char *dir) {
    int n = 0;
    if (DIR *d = opendir(dir)) {
        while (dirent *e = readdir(d)) n += strncmp(e->d_name, "strata-", 7) == 0;
        closedir(d);
    }
    return n;
}

// While it lives, a team makes its node's segment anew rather than taking up one a
// freed team kept (for the tests of how segments are made).
struct NoKeptSegments {
    NoKeptSegments() { strata::NodeChannel::set_kept_segments_for_testing(0); }
    ~NoKeptSegments() { strata::NodeChannel::set_kept_segments_for_testing(2); }
};

// Runs one int32 sum allreduce on every rank; returns each rank's status.
std::vector<strata_status_t> one_allreduce(const std::vector<int> &keys, const char *shm_dir,
                                           std::vector<int> *results = nullptr) {
    const int size = int(keys.size());
    strata_test::ThreadJob job(size);
    std::vector<strata_status_t> st(size, STRATA_ERR_INTERNAL);
    if (results) results->assign(size, -1);
    job.run([&](int rank) {
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.host_buffers = 1;   // a team of host ranks runs, and sets up at the first call,
        cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
        cfg.lazy_calls = 0;     // whatever the defaults users get
        cfg.shm_dir = shm_dir;
        strata_transport_t tp = job.transport(rank);
        strata_team_t *team = nullptr;
        ASSERT_EQ(strata_team_create(rank, size, keys[rank], &tp, &cfg, &team), STRATA_OK);
        int v = rank + 1;
        st[rank] = strata_allreduce(team, STRATA_IN_PLACE, &v, 1, STRATA_INT32, STRATA_OP_SUM);
        if (results) (*results)[rank] = v;
        // A team that fell back keeps falling back, without communicating.
        if (st[rank] == STRATA_FALLBACK) {
            EXPECT_EQ(strata_allreduce(team, STRATA_IN_PLACE, &v, 1, STRATA_INT32, STRATA_OP_SUM), STRATA_FALLBACK);
        }
        strata_team_destroy(team);
    });
    return st;
}

TEST(Team, SegmentInADirectoryAndNothingLeft) {
    char dir[] = "/tmp/strata-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    std::vector<int> res;
    const auto st = one_allreduce({0, 0, 0, 3}, dir, &res);
    for (size_t r = 0; r < st.size(); ++r) {
        EXPECT_EQ(st[r], STRATA_OK) << "rank " << r;
        EXPECT_EQ(res[r], 10) << "rank " << r;
    }
    EXPECT_EQ(strata_files(dir), 0);
    rmdir(dir);
}

TEST(Team, FailedSetupOnOneNodeMeansEveryRankFallsBack) {
    // Node 0 (two ranks) cannot create its segment; node 1 (one rank) needs none.
    // The agreement must still take every rank, node 1 included, off strata.
    const int before = strata_files("/dev/shm");  // another job's may be there
    const auto st = one_allreduce({0, 0, 2}, "/nonexistent/strata-dir");
    for (size_t r = 0; r < st.size(); ++r) EXPECT_EQ(st[r], STRATA_FALLBACK) << "rank " << r;
    EXPECT_LE(strata_files("/dev/shm"), before);
}

// Log lines (level: text) while a guard lives.
std::mutex g_lines_mu;
std::vector<std::string> g_lines;
void keep_line(int level, const char *msg) {
    std::lock_guard<std::mutex> g(g_lines_mu);
    g_lines.push_back(std::to_string(level) + ": " + msg);
}
struct Lines {
    Lines() {
        g_lines.clear();
        strata_set_logger(&keep_line);
    }
    ~Lines() { strata_set_logger(nullptr); }
    // The lines of level that contain every one of words.
    std::vector<std::string> with(int level, const std::vector<std::string> &words) {
        std::lock_guard<std::mutex> g(g_lines_mu);
        std::vector<std::string> out;
        const std::string head = std::to_string(level) + ": ";
        for (const std::string &l : g_lines) {
            bool all = l.compare(0, head.size(), head) == 0;
            for (const std::string &w : words) all = all && l.find(w) != std::string::npos;
            if (all) out.push_back(l);
        }
        return out;
    }
};

TEST(Team, NamedSegmentWhereProcIsRefusedAndNothingLeft) {
    // Peers cannot open the leader's unnamed segment (as where /proc is refused): the
    // node agrees on a named one, says so at verbose level, and unlinks it at once.
    // In a directory of its own: /dev/shm is shared with whatever else runs on the
    // machine, and a file another job makes there meanwhile is not this test's.
    char dir[] = "/tmp/strata-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    NoKeptSegments fresh;
    Lines lines;
    strata::shm::refuse_proc_for_testing(true);
    std::vector<int> res;
    const auto st = one_allreduce({0, 0, 0, 3}, dir, &res);
    strata::shm::refuse_proc_for_testing(false);
    for (size_t r = 0; r < st.size(); ++r) {
        EXPECT_EQ(st[r], STRATA_OK) << "rank " << r;
        EXPECT_EQ(res[r], 10) << "rank " << r;
    }
    EXPECT_EQ(lines.with(1, {"2 local peer(s) of node 0", "named segment"}).size(), 1u);
    const auto warnings = lines.with(0, {});
    EXPECT_TRUE(warnings.empty()) << warnings[0];
    EXPECT_EQ(strata_files(dir), 0);
    rmdir(dir);
}

TEST(Team, SegmentTheNodeCannotSpareFallsBackWithOneLine) {
    // Ranks 0-2 on node 0 want 3 x 4 x 4 MiB; the node "has" 16 MiB of memory, so may
    // give 8 MiB: every rank falls back, one level-0 line names bytes and the setting.
    NoKeptSegments fresh;
    strata::shm::Room room;
    room.fs_free = uint64_t(1) << 40;
    room.memory = 16 << 20;
    strata::shm::set_room_for_testing(&room);
    Lines lines;
    const auto st = one_allreduce({0, 0, 0, 3}, nullptr);
    strata::shm::set_room_for_testing(nullptr);
    for (size_t r = 0; r < st.size(); ++r) EXPECT_EQ(st[r], STRATA_FALLBACK) << "rank " << r;
    const auto said = lines.with(0, {"coll_strata_segment_size", "more than the 8388608 bytes strata may take",
                                  std::to_string(16 << 20) + " bytes of memory available"});
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find("falls back"), std::string::npos) << said[0];
    EXPECT_EQ(lines.with(0, {}).size(), 1u);
}

// A dup/free cycle: the next team of the same ranks on a node takes up the segment the
// freed one kept, with its flags and mailboxes cleared (the old team's would let the new
// team's first calls through unwaited, or, after a failed call, break it), and is exact.
TEST(Team, TheNextTeamOfTheSameRanksTakesUpTheFreedOnesSegment) {
    constexpr int kRanks = 3, kCalls = 40, kTeams = 3;
    Lines lines;
    strata_test::ThreadJob job(kRanks);
    std::vector<std::string> errors(kRanks);
    job.run([&](int rank) {
        std::string &err = errors[size_t(rank)];
        for (int t = 0; t < kTeams && err.empty(); ++t) {
            strata_config_t cfg;
            strata_config_defaults(&cfg);
            cfg.host_buffers = 1;
            cfg.host_handback = 0;
            cfg.lazy_calls = 0;
            cfg.verbose = 2;
            cfg.segment_size = 4096;  // calls of several segments: both stages, flags well past 1
            const int r = rank;
            strata_transport_t tp = job.transport(rank);
            strata_team_t *team = nullptr;
            if (strata_team_create(r, kRanks, 0, &tp, &cfg, &team) != STRATA_OK) {
                err = "team create";
                break;
            }
            if (strata_team_setup(team) != STRATA_OK) err = "team " + std::to_string(t) + " setup";
            // Team 0 runs more calls than the others, so that its flags end higher
            // than any of theirs before it is freed.
            for (int c = 1; c <= (t == 0 ? 3 * kCalls : kCalls) && err.empty(); ++c) {
                // The last rank comes late to the first call of a new team (set up
                // already): a peer that took a stale flag of the old team for its input
                // would read too soon.
                if (t > 0 && c == 1 && rank == kRanks - 1) usleep(50000);
                std::vector<int> v(8192, r + c);  // above small_msg_size: through the slots
                if (strata_allreduce(team, STRATA_IN_PLACE, v.data(), int(v.size()), STRATA_INT32, STRATA_OP_SUM) !=
                    STRATA_OK)
                    err = "team " + std::to_string(t) + " call " + std::to_string(c) + " failed";
                for (size_t i = 0; i < v.size() && err.empty(); ++i)
                    if (v[i] != 3 * c + 3) err = "team " + std::to_string(t) + " call " + std::to_string(c) + ": wrong sum";
            }
            // Team 0 ends with a call that fails (a NULL buffer on one rank): its flags
            // name that failed call, which would break the next team's first calls.
            if (t == 0 && err.empty()) {
                std::vector<int> v(8192, 1), out(8192);
                const strata_status_t st = strata_allreduce(team, v.data(), rank == 1 ? nullptr : out.data(),
                                                            int(v.size()), STRATA_INT32, STRATA_OP_SUM);
                if (st == STRATA_OK) err = "the call with a NULL buffer succeeded";
            }
            strata_team_destroy(team);
        }
    });
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
    // Teams 1 and 2 take up their predecessor's segment (the node leader says so).
    EXPECT_EQ(lines.with(2, {"taken up again"}).size(), 2u);
}

TEST(Team, BadArguments) {
    strata_config_t cfg;
    strata_config_defaults(&cfg);
    strata_test::ThreadJob job(1);
    strata_transport_t tp = job.transport(0);
    strata_team_t *team = nullptr;
    EXPECT_EQ(strata_team_create(1, 1, 0, &tp, &cfg, &team), STRATA_ERR_ARG);
    EXPECT_EQ(team, nullptr);
    cfg.segment_size = 8;
    EXPECT_EQ(strata_team_create(0, 1, 0, &tp, &cfg, &team), STRATA_ERR_ARG);
    strata_config_defaults(&cfg);
    cfg.host_buffers = 1;   // a team of host ranks runs, and sets up at the first call,
    cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
    cfg.lazy_calls = 0;     // whatever the defaults users get
    ASSERT_EQ(strata_team_create(0, 1, 0, &tp, &cfg, &team), STRATA_OK);
    int v = 1;
    // A NULL buffer is this rank's error (never "in place"); later calls go to the
    // previous component.
    EXPECT_EQ(strata_allreduce(team, &v, nullptr, 1, STRATA_INT32, STRATA_OP_SUM), STRATA_ERR_BUFFER);
    EXPECT_NE(std::string(strata_team_last_error(team)).find("receive buffer is NULL"), std::string::npos);
    EXPECT_EQ(strata_allreduce(team, STRATA_IN_PLACE, &v, 1, STRATA_INT32, STRATA_OP_SUM), STRATA_FALLBACK);
    // No kernel: the caller must fall back.
    EXPECT_EQ(strata_allreduce(team, STRATA_IN_PLACE, &v, 1, STRATA_FLOAT, STRATA_OP_BXOR), STRATA_FALLBACK);
    strata_team_destroy(team);
    strata_team_destroy(nullptr);
    ASSERT_EQ(strata_team_create(0, 1, 0, &tp, &cfg, &team), STRATA_OK);
    EXPECT_EQ(strata_allreduce(team, nullptr, &v, 1, STRATA_INT32, STRATA_OP_SUM), STRATA_ERR_BUFFER);
    strata_team_destroy(team);
}

TEST(Tables, NamesForEveryAlgorithm) {
    ASSERT_GE(strata_algorithm_count(STRATA_COLL_ALLREDUCE), 2);
    for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
        for (int i = 0; i < strata_algorithm_count(strata_coll_t(c)); ++i) {
            EXPECT_NE(strata_algorithm_name(strata_coll_t(c), i), nullptr);
            EXPECT_NE(strata_algorithm_description(strata_coll_t(c), i), nullptr);
        }
    }
    EXPECT_STREQ(strata_algorithm_name(STRATA_COLL_ALLREDUCE, 0), "hier_ring");
}

}  // namespace
