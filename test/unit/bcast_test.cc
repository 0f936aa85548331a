// SPDX-License-Identifier: BSD-3-Clause
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
    const int size = int(GetParam().keys.size());
    ASSERT_EQ(strata_algorithm_count(STRATA_COLL_BCAST), 2);
    const std::vector<uint64_t> ran = strata_test::run_layout(
        GetParam(), STRATA_COLL_BCAST, calls(size),
        [](strata_team_t *team, int rank, const Call &c, int n) { return check_rank(team, rank, c, n); },
        [](const Call &c) { return "bytes " + std::to_string(c.bytes) + " root " + std::to_string(c.root); });
    EXPECT_GT(ran[0], 0u) << "hier_chain never ran";
    EXPECT_GT(ran[1], 0u) << "hier_tree never ran";
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, BcastLayouts,
    ::testing::ValuesIn(strata_test::standard_layouts()), strata_test::layout_name);

}  // namespace
