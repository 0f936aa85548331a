// SPDX-License-Identifier: BSD-3-Clause
// test/unit/reduce_scatter_test.cc - reduce_scatter (and _block) schedules, ranks as threads.
//
// Each layout runs one long sequence of calls on the same teams: uniform (block),
// uneven and zero counts (recvbuf NULL where a rank gets nothing), every algorithm,
// in place and not, several types and ops; every element is compared exactly.
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

enum class Shape { Block, Uneven, Sparse };  // Sparse: most ranks get nothing

struct Call {
    size_t unit;  // block count, or scale of the uneven counts
    Shape shape;
    int alg;
    bool in_place;
    strata_dtype_t dtype;
    strata_op_t op;
};

std::vector<size_t> counts_for(const Call &c, int size) {
    std::vector<size_t> v(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        switch (c.shape) {
            case Shape::Block: v[size_t(r)] = c.unit; break;
            case Shape::Uneven: v[size_t(r)] = (size_t(r) * 5 + c.unit) % (2 * c.unit + 3); break;
            case Shape::Sparse: v[size_t(r)] = r == size / 2 ? c.unit : (r == 0 ? 1 : 0); break;
        }
    }
    return v;
}

template <class T>
std::string check_rank(strata_team_t *team, int rank, int size, const Call &c) {
    const std::vector<size_t> counts = counts_for(c, size);
    size_t total = 0, lo = 0;
    for (int r = 0; r < size; ++r) {
        if (r == rank) lo = total;
        total += counts[size_t(r)];
    }
    const size_t n = counts[size_t(rank)];
    std::vector<T> send(total), recv(c.in_place ? total : n, T(-99));
    for (size_t i = 0; i < total; ++i) send[i] = value<T>(rank, i, c.op);
    if (c.in_place) recv = send;
    // A rank that gets nothing may pass NULL (not in place: MPI needs the input there).
    T *rbuf = recv.empty() ? nullptr : recv.data();
    const strata_status_t st = strata_reduce_scatter(team, c.in_place ? STRATA_IN_PLACE : send.data(), rbuf,
                                                     counts.data(), c.dtype, c.op);
    if (st != STRATA_OK) return "status " + std::to_string(st);
    const std::string wrong = strata_test::first_mismatch(size, c.op, recv.data(), n, lo);
    if (!wrong.empty()) return wrong;
    if (!c.in_place) {
        for (size_t i = 0; i < total; ++i)
            if (!(send[i] == value<T>(rank, i, c.op))) return "input modified";
    }
    return "";
}

std::string run_call(strata_team_t *team, int rank, int size, const Call &c) {
    return strata_test::with_type(c.dtype, [&](auto *p) {
        return check_rank<std::remove_pointer_t<decltype(p)>>(team, rank, size, c);
    });
}

std::vector<Call> calls() {
    std::vector<Call> out;
    const size_t units[] = {1, 2, 7, 61, 1000, 4099};
    int n = 0;
    for (size_t unit : units) {
        for (Shape shape : {Shape::Block, Shape::Uneven, Shape::Sparse}) {
            for (int alg = STRATA_ALG_AUTO; alg < strata_algorithm_count(STRATA_COLL_REDUCE_SCATTER);
                 ++alg) {
                for (bool in_place : {false, true}) {
                    const strata_test::TypeOp to = strata_test::rotate_type_op(n);
                    out.push_back({unit, shape, alg, in_place, to.dtype, to.op});
                    ++n;
                }
            }
        }
    }
    return out;
}

class ReduceScatterLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(ReduceScatterLayouts, ExactForEveryCall) {
    const int size = int(GetParam().keys.size());
    strata_test::run_layout(
        GetParam(), STRATA_COLL_REDUCE_SCATTER, calls(),
        [size](strata_team_t *team, int rank, const Call &c, int) { return run_call(team, rank, size, c); },
        [](const Call &c) {
            return std::string(strata_dtype_name(c.dtype)) + "/" + strata_op_name(c.op) + " unit " +
                   std::to_string(c.unit) + " shape " + std::to_string(int(c.shape)) +
                   (c.in_place ? " in place" : "");
        });
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ReduceScatterLayouts,
    ::testing::ValuesIn(strata_test::standard_layouts()), strata_test::layout_name);

}  // namespace
