// SPDX-License-Identifier: BSD-3-Clause
// test/unit/allgather_test.cc - the allgather(v) schedules, ranks as threads.
//
// Each layout runs one long sequence of calls on the same teams (stages, flags
// and tags carry over between calls): uniform blocks through strata_allgather,
// and uneven, zero-size, reordered and gapped blocks through strata_allgatherv,
// every algorithm, in place and not. Every byte of every rank's receive buffer is
// checked, including the gaps between blocks, which must stay untouched.
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
using strata_test::value;

enum class Shape { Uniform, Uneven, SomeZero, Reversed };

struct Call {
    size_t bytes;  // per rank (uniform) or the scale of the uneven sizes
    Shape shape;
    int alg;       // STRATA_ALG_AUTO or an index
    bool in_place;
};

const unsigned char kJunk = 0xEE;

unsigned char value(int rank, size_t i, int call) {
    return static_cast<unsigned char>((rank * 131 + i * 7 + size_t(call) * 13 + i / 251) & 0xff);
}

// Per-rank sizes and offsets in the receive buffer (gaps of 3 bytes between
// blocks outside the uniform shape, reversed order for Reversed).
void shape(const Call &c, int size, std::vector<size_t> *cnt, std::vector<size_t> *dsp,
           size_t *total) {
    cnt->assign(size_t(size), 0);
    dsp->assign(size_t(size), 0);
    for (int r = 0; r < size; ++r) {
        switch (c.shape) {
            case Shape::Uniform: (*cnt)[r] = c.bytes; break;
            case Shape::Uneven: (*cnt)[r] = c.bytes * size_t(r + 1) / 3 + size_t(r); break;
            case Shape::SomeZero: (*cnt)[r] = r % 3 == 1 ? 0 : c.bytes + size_t(r) * 5; break;
            case Shape::Reversed: (*cnt)[r] = r % 2 ? c.bytes / 2 : c.bytes; break;
        }
    }
    const size_t gap = c.shape == Shape::Uniform ? 0 : 3;
    size_t pos = 0;
    for (int k = 0; k < size; ++k) {
        const int r = c.shape == Shape::Reversed ? size - 1 - k : k;
        (*dsp)[r] = pos;
        pos += (*cnt)[r] + gap;
    }
    *total = pos + 8;  // a tail that must stay untouched
}

std::string check_rank(strata_team_t *team, int rank, int size, const Call &c, int call) {
    std::vector<size_t> cnt, dsp;
    size_t total = 0;
    shape(c, size, &cnt, &dsp, &total);
    std::vector<unsigned char> send(cnt[rank] + 1), recv(total, kJunk), expect(total, kJunk);
    for (int r = 0; r < size; ++r)
        for (size_t i = 0; i < cnt[r]; ++i) expect[dsp[r] + i] = value(r, i, call);
    for (size_t i = 0; i < cnt[rank]; ++i) send[i] = value(rank, i, call);
    if (c.in_place) memcpy(recv.data() + dsp[rank], send.data(), cnt[rank]);
    const void *sbuf = c.in_place ? STRATA_IN_PLACE : send.data();
    const strata_status_t st =
        c.shape == Shape::Uniform ? strata_allgather(team, sbuf, recv.data(), c.bytes)
                                  : strata_allgatherv(team, sbuf, recv.data(), cnt.data(), dsp.data());
    if (st != STRATA_OK) return "status " + std::to_string(st);
    for (size_t i = 0; i < total; ++i) {
        if (recv[i] != expect[i])
            return "first wrong byte " + std::to_string(i) + " of " + std::to_string(total);
    }
    return "";
}

std::vector<Call> calls() {
    std::vector<Call> out;
    const size_t sizes[] = {1, 7, 100, 1000, 4099, 13001};
    for (size_t b : sizes)
        for (Shape sh : {Shape::Uniform, Shape::Uneven, Shape::SomeZero, Shape::Reversed})
            for (int alg : {STRATA_ALG_AUTO, 0, 1})
                for (bool in_place : {false, true}) out.push_back({b, sh, alg, in_place});
    return out;
}

class AllgatherLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(AllgatherLayouts, ExactForEveryCall) {
    const int size = int(GetParam().keys.size());
    ASSERT_EQ(strata_algorithm_count(STRATA_COLL_ALLGATHER), 2);
    const std::vector<uint64_t> ran = strata_test::run_layout(
        GetParam(), STRATA_COLL_ALLGATHER, calls(),
        [size](strata_team_t *team, int rank, const Call &c, int n) { return check_rank(team, rank, size, c, n); },
        [](const Call &c) {
            return "bytes " + std::to_string(c.bytes) + " shape " + std::to_string(int(c.shape)) +
                   (c.in_place ? " in place" : "");
        });
    EXPECT_GT(ran[0], 0u) << "hier_ring never ran";
    EXPECT_GT(ran[1], 0u) << "hier_direct never ran";
}

// The rule picks by the total, which is the same on every rank even when one
// rank's own block is empty (a rule on the own block would split the job).
TEST(AllgatherRule, AgreesWhenOwnBlocksDiffer) {
    const int size = 4;
    strata_test::ThreadJob job(size);
    std::vector<std::string> errors(size);
    std::vector<std::vector<uint64_t>> ran(size, std::vector<uint64_t>(2));
    job.run([&](int rank) {
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.host_buffers = 1;   // a team of host ranks runs, and sets up at the first call,
        cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
        cfg.lazy_calls = 0;     // whatever the defaults users get
        cfg.node_size = 2;
        cfg.segment_size = 4096;
        cfg.small_msg_size = 1000;
        strata_transport_t tp = job.transport(rank);
        strata_team_t *team = nullptr;
        if (strata_team_create(rank, size, 0, &tp, &cfg, &team) != STRATA_OK) {
            errors[rank] = "team create";
            return;
        }
        const std::vector<size_t> cnt{0, 3000, 0, 5}, dsp{0, 0, 3000, 3000};
        std::vector<unsigned char> send(cnt[rank] + 1, static_cast<unsigned char>(rank + 1));
        std::vector<unsigned char> recv(3005, 0);
        if (strata_allgatherv(team, send.data(), recv.data(), cnt.data(), dsp.data()) != STRATA_OK)
            errors[rank] = "status";
        for (size_t i = 0; i < 3005 && errors[rank].empty(); ++i)
            if (recv[i] != (i < 3000 ? 2 : 4)) errors[rank] = "byte " + std::to_string(i);
        for (int a = 0; a < 2; ++a) ran[rank][a] = strata_team_calls(team, STRATA_COLL_ALLGATHER, a);
        strata_team_destroy(team);
    });
    for (int r = 0; r < size; ++r) {
        EXPECT_EQ(errors[r], "") << "rank " << r;
        EXPECT_EQ(ran[r], ran[0]) << "rank " << r << " chose another algorithm";
    }
    EXPECT_EQ(job.unreceived(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, AllgatherLayouts,
    ::testing::ValuesIn(strata_test::standard_layouts()), strata_test::layout_name);

}  // namespace
