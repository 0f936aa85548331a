// test/unit/bcast_test.cc - the bcast schedules, ranks as threads.
//
// Each layout runs one long sequence of calls on the same teams (stages, flags
// and tags carry over between calls): every root, sizes below, at and above a
// segment, every algorithm. Every byte is checked, and the bytes just past the
// buffer must stay untouched.
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "coll_fixture.h"
#include "harness.h"
#include "strata.h"

namespace {

using strata_test::Layout;
using strata_test::blocks;
using strata_test::count_strata_segments;
using strata_test::fold;
using strata_test::value;

struct Call {
    size_t bytes;
    int root;
    int alg;  // STRATA_ALG_AUTO or an index
};

unsigned char value(int root, size_t i, int call) {
    return static_cast<unsigned char>((root * 59 + i * 11 + size_t(call) * 17 + i / 509) & 0xff);
}

std::string check_rank(strata_team_t *team, int rank, const Call &c, int call) {
    const size_t tail = 16;
    std::vector<unsigned char> buf(c.bytes + tail, 0xEE);
    if (rank == c.root)
        for (size_t i = 0; i < c.bytes; ++i) buf[i] = value(c.root, i, call);
    const strata_status_t st = strata_bcast(team, buf.data(), c.bytes, c.root);
    if (st != STRATA_OK) return "status " + std::to_string(st);
    for (size_t i = 0; i < c.bytes + tail; ++i) {
        const unsigned char want = i < c.bytes ? value(c.root, i, call) : 0xEE;
        if (buf[i] != want)
            return "first wrong byte " + std::to_string(i) + " of " + std::to_string(c.bytes);
    }
    return "";
}

std::vector<Call> calls(int size) {
    std::vector<Call> out;
    const size_t sizes[] = {1, 13, 2048, 8192, 8193, 30011};
    int n = 0;
    for (size_t b : sizes)
        for (int alg : {STRATA_ALG_AUTO, 0, 1})
            for (int root = 0; root < size; ++root) out.push_back({b, (root + n++) % size, alg});
    return out;
}

class BcastLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(BcastLayouts, ExactForEveryRootAndCall) {
    const Layout &lay = GetParam();
    const int size = int(lay.keys.size());
    ASSERT_EQ(strata_algorithm_count(STRATA_COLL_BCAST), 2);
    strata_test::ThreadJob job(size);
    const std::vector<Call> cs = calls(size);
    std::vector<std::string> errors(size);
    std::vector<uint64_t> ran(2, 0);
    const int before = count_strata_segments();
    job.run([&](int rank) {
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.node_size = lay.node_size;
        cfg.segment_size = 4096;  // 8 KiB stages: several segments per call
        cfg.small_msg_size = 2048;
        std::vector<strata_team_t *> teams =
            strata_test::make_teams(job, rank, lay.keys[size_t(rank)], cfg, STRATA_COLL_BCAST);
        if (teams.empty()) errors[size_t(rank)] = "team create";
        int n = 0;
        for (const Call &c : cs) {
            if (teams.empty()) break;  // after a wrong result keep going: peers wait for this rank
            const std::string e = check_rank(teams[size_t(c.alg + 1)], rank, c, n++);
            if (!e.empty() && errors[rank].empty()) {
                errors[rank] = "bytes " + std::to_string(c.bytes) + " root " +
                               std::to_string(c.root) + " alg " + std::to_string(c.alg) + ": " + e;
                fprintf(stderr, "rank %d: %s\n", rank, errors[rank].c_str());
            }
        }
        if (rank == 0)
            for (int alg = 0; alg < 2; ++alg)
                for (strata_team_t *t : teams) ran[size_t(alg)] += strata_team_calls(t, STRATA_COLL_BCAST, alg);
        for (strata_team_t *t : teams) strata_team_destroy(t);
    });
    for (int r = 0; r < size; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_GT(ran[0], 0u) << "hier_chain never ran";
    EXPECT_GT(ran[1], 0u) << "hier_tree never ran";
    EXPECT_EQ(job.unreceived(), 0u);
    EXPECT_EQ(count_strata_segments(), before) << "a segment was left in /dev/shm";
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, BcastLayouts,
    ::testing::ValuesIn(strata_test::standard_layouts()), strata_test::layout_name);

}  // namespace
