// SPDX-License-Identifier: BSD-3-Clause
// test/unit/allreduce_test.cc - the allreduce schedules, ranks as threads.
//
// Each layout runs one long sequence of calls on the same teams (so stages,
// flags and tags carry over between calls, as in a real job), over counts that
// do not divide evenly, every algorithm, in place and not, and checks every
// element of every rank exactly.
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
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
    size_t count;
    int alg;  // STRATA_ALG_AUTO or an index
    bool in_place;
    strata_dtype_t dtype;
    strata_op_t op;
};

// Small integers: any reduction order is exact. Values depend on rank and index.
template <class T>
std::string check_rank(strata_team_t *team, int rank, int size, const Call &c) {
    std::vector<T> send(c.count), recv(c.count, T(-99));
    for (size_t i = 0; i < c.count; ++i) send[i] = value<T>(rank, i, c.op);
    if (c.in_place) recv = send;
    const strata_status_t st = strata_allreduce(team, c.in_place ? STRATA_IN_PLACE : send.data(), recv.data(),
                                                c.count, c.dtype, c.op);
    if (st != STRATA_OK) return "status " + std::to_string(st);
    return strata_test::first_mismatch(size, c.op, recv.data(), c.count);
}

std::string run_call(strata_team_t *team, int rank, int size, const Call &c) {
    return strata_test::with_type(c.dtype, [&](auto *p) {
        return check_rank<std::remove_pointer_t<decltype(p)>>(team, rank, size, c);
    });
}

std::vector<Call> calls() {
    std::vector<Call> out;
    const size_t counts[] = {1, 2, 7, 61, 1000, 4099, 30011};
    int n = 0;
    for (size_t count : counts) {
        for (int alg = STRATA_ALG_AUTO; alg < strata_algorithm_count(STRATA_COLL_ALLREDUCE); ++alg) {
            for (bool in_place : {false, true}) {
                // Rotate types and ops so that every combination meets many counts.
                const strata_test::TypeOp to = strata_test::rotate_type_op(n);
                out.push_back({count, alg, in_place, to.dtype, to.op});
                ++n;
            }
        }
    }
    return out;
}

class AllreduceLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(AllreduceLayouts, ExactForEveryCall) {
    const int size = int(GetParam().keys.size());
    strata_test::run_layout(
        GetParam(), STRATA_COLL_ALLREDUCE, calls(),
        [size](strata_team_t *team, int rank, const Call &c, int) { return run_call(team, rank, size, c); },
        [](const Call &c) {
            return std::string(strata_dtype_name(c.dtype)) + "/" + strata_op_name(c.op) + " count " +
                   std::to_string(c.count) + (c.in_place ? " in place" : "");
        });
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, AllreduceLayouts,
    ::testing::ValuesIn(strata_test::standard_layouts()), strata_test::layout_name);

}  // namespace
