// SPDX-License-Identifier: BSD-3-Clause
// test/unit/reduce_test.cc - reduce schedules to every root, ranks as threads.
//
// Each layout runs one long sequence of calls on the same teams: every root, counts
// that do not divide evenly, every algorithm, in place (root) and not, several types
// and ops. Non-roots pass recvbuf NULL; the root's result is compared exactly.
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "coll_fixture.h"
#include "harness.h"
#include "strata.h"

namespace {

using strata_test::Layout;
using strata_test::value;

struct Call {
    size_t count;
    int root;
    int alg;
    bool in_place;
    strata_dtype_t dtype;
    strata_op_t op;
};

template <class T>
std::string check_rank(strata_team_t *team, int rank, int size, const Call &c) {
    const bool root = rank == c.root;
    std::vector<T> send(c.count), recv(root ? c.count : 0, T(-99));
    for (size_t i = 0; i < c.count; ++i) send[i] = value<T>(rank, i, c.op);
    const bool in_place = c.in_place && root;
    if (in_place) recv = send;
    const strata_status_t st = strata_reduce(team, in_place ? STRATA_IN_PLACE : send.data(),
                                             root ? recv.data() : nullptr, c.count, c.dtype, c.op,
                                             c.root);
    if (st != STRATA_OK) return "status " + std::to_string(st);
    for (size_t i = 0; i < c.count; ++i)
        if (!(send[i] == value<T>(rank, i, c.op))) return "input modified";
    if (!root) return "";
    return strata_test::first_mismatch(size, c.op, recv.data(), c.count);
}

std::string run_call(strata_team_t *team, int rank, int size, const Call &c) {
    return strata_test::with_type(c.dtype, [&](auto *p) {
        return check_rank<std::remove_pointer_t<decltype(p)>>(team, rank, size, c);
    });
}

std::vector<Call> calls(int size) {
    std::vector<Call> out;
    const size_t counts[] = {1, 7, 1000, 4099};
    int n = 0;
    for (size_t count : counts) {
        for (int root = 0; root < size; ++root) {
            for (int alg = STRATA_ALG_AUTO; alg < strata_algorithm_count(STRATA_COLL_REDUCE); ++alg) {
                const strata_test::TypeOp to = strata_test::rotate_type_op(n);
                out.push_back({count, root, alg, n % 2 == 1, to.dtype, to.op});
                ++n;
            }
        }
    }
    // A long one: many segments in flight.
    out.push_back({30011, size - 1, STRATA_ALG_AUTO, false, STRATA_DOUBLE, STRATA_OP_SUM});
    return out;
}

class ReduceLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(ReduceLayouts, ExactForEveryRoot) {
    const int size = int(GetParam().keys.size());
    strata_test::run_layout(
        GetParam(), STRATA_COLL_REDUCE, calls(size),
        [size](strata_team_t *team, int rank, const Call &c, int) { return run_call(team, rank, size, c); },
        [](const Call &c) {
            return std::string(strata_dtype_name(c.dtype)) + "/" + strata_op_name(c.op) + " count " +
                   std::to_string(c.count) + " root " + std::to_string(c.root) +
                   (c.in_place ? " in place" : "");
        });
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ReduceLayouts,
    ::testing::ValuesIn(strata_test::standard_layouts()), strata_test::layout_name);

}  // namespace
