// SPDX-License-Identifier: BSD-3-Clause
// test/unit/gather_test.cc - the gather schedules to every root, ranks as threads.
//
// Each layout runs one long sequence of calls on the same teams: every root, blocks
// below, at and above a window (two segments of 4096 bytes), in place at the root or
// not, blocking and nonblocking. Non-roots pass a receive buffer strata must not touch;
// every byte of the root's buffer is checked, and the bytes just past it must stay
// untouched.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "coll_fixture.h"
#include "harness.h"
#include "strata.h"

namespace {

using strata_test::Layout;

struct Call {
    size_t bytes;  // per rank
    int root;
    bool in_place, nonblocking;
    int alg;
};

unsigned char value(int rank, size_t i, int call) {
    return static_cast<unsigned char>((rank * 41 + i * 13 + size_t(call) * 7 + i / 251) & 0xff);
}

// A nonblocking call's outcome, once it completed (strata_i* has set *req).
strata_status_t wait(strata_status_t st, strata_request_t *const *req) {
    if (st != STRATA_OK || *req == nullptr) return st;
    while (!strata_request_test(*req, &st)) std::this_thread::yield();
    strata_request_free(*req);
    return st;
}

std::string check_rank(strata_team_t *team, int rank, int size, const Call &c, int call) {
    const size_t tail = 16, all = c.bytes * size_t(size);
    const bool root = rank == c.root, in_place = c.in_place && root;
    std::vector<unsigned char> send(c.bytes), recv(all + tail, 0xEE);
    for (size_t i = 0; i < c.bytes; ++i) send[i] = value(rank, i, call);
    if (in_place)
        for (size_t i = 0; i < c.bytes; ++i) recv[size_t(rank) * c.bytes + i] = send[i];
    const void *sbuf = in_place ? STRATA_IN_PLACE : send.data();
    strata_request_t *req = nullptr;
    const strata_status_t st =
        c.nonblocking ? wait(strata_igather(team, sbuf, recv.data(), c.bytes, c.root, nullptr, &req), &req)
                      : strata_gather(team, sbuf, recv.data(), c.bytes, c.root);
    if (st != STRATA_OK) return "status " + std::to_string(st);
    for (size_t i = 0; i < c.bytes; ++i)
        if (send[i] != value(rank, i, call)) return "input modified";
    for (size_t i = 0; i < all + tail; ++i) {
        const unsigned char want = !root ? 0xEE : i < all ? value(int(i / c.bytes), i % c.bytes, call) : 0xEE;
        if (recv[i] != want)
            return "first wrong byte " + std::to_string(i) + " of " + std::to_string(all) + (root ? "" : " (not root)");
    }
    return "";
}

std::vector<Call> calls(int size) {
    std::vector<Call> out;
    const size_t sizes[] = {1, 13, 8192, 8193, 30011};
    int n = 0;
    for (size_t b : sizes)
        for (int root = 0; root < size; ++root, ++n) out.push_back({b, root, n % 2 == 1, n % 3 == 2, STRATA_ALG_AUTO});
    out.push_back({100003, size - 1, false, false, 0});  // many segments in flight
    return out;
}

class GatherLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(GatherLayouts, ExactForEveryRoot) {
    const int size = int(GetParam().keys.size());
    ASSERT_EQ(strata_algorithm_count(STRATA_COLL_GATHER), 1);
    const std::vector<uint64_t> ran = strata_test::run_layout(
        GetParam(), STRATA_COLL_GATHER, calls(size),
        [size](strata_team_t *team, int rank, const Call &c, int n) { return check_rank(team, rank, size, c, n); },
        [](const Call &c) {
            return "bytes " + std::to_string(c.bytes) + " root " + std::to_string(c.root) +
                   (c.in_place ? " in place" : "") + (c.nonblocking ? " nonblocking" : "");
        });
    EXPECT_GT(ran[0], 0u) << "hier_direct never ran";
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, GatherLayouts,
    ::testing::ValuesIn(strata_test::standard_layouts()), strata_test::layout_name);

}  // namespace
