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

#include "harness.h"
#include "strata.h"

namespace {

struct Layout {
    const char *name;
    std::vector<int> keys;
    int node_size;
};

std::vector<int> blocks(int nodes, int ppn) {
    std::vector<int> k;
    for (int n = 0; n < nodes; ++n)
        for (int i = 0; i < ppn; ++i) k.push_back(n);
    return k;
}

int count_strata_segments() {
    int n = 0;
    if (DIR *d = opendir("/dev/shm")) {
        while (dirent *e = readdir(d)) n += strncmp(e->d_name, "strata-", 7) == 0;
        closedir(d);
    }
    return n;
}

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
T value(int rank, size_t i, strata_op_t op) {
    if (op == STRATA_OP_PROD) return T((rank + i) % 3 == 0 ? 2 : 1);
    if (op == STRATA_OP_BXOR) return T((size_t(rank) * 2654435761u + i * 40503u) & 0x7f);
    return T(int((size_t(rank) * 7 + i * 3) % 11) - (std::is_signed<T>::value ? 5 : 0));
}

template <class T>
T fold(T a, T b, strata_op_t op) {
    switch (op) {
        case STRATA_OP_SUM: return T(a + b);
        case STRATA_OP_PROD: return T(a * b);
        case STRATA_OP_MAX: return a > b ? a : b;
        case STRATA_OP_MIN: return a < b ? a : b;
        default: return T(int64_t(a) ^ int64_t(b));
    }
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
    const strata_status_t st = strata_reduce_scatter(team, c.in_place ? nullptr : send.data(), rbuf,
                                                     counts.data(), c.dtype, c.op);
    if (st != STRATA_OK) return "status " + std::to_string(st);
    for (size_t i = 0; i < n; ++i) {
        T expect = value<T>(0, lo + i, c.op);
        for (int r = 1; r < size; ++r) expect = fold(expect, value<T>(r, lo + i, c.op), c.op);
        if (memcmp(&expect, &recv[i], sizeof(T)) != 0)
            return "first wrong index " + std::to_string(i) + " of " + std::to_string(n);
    }
    if (!c.in_place) {
        for (size_t i = 0; i < total; ++i)
            if (!(send[i] == value<T>(rank, i, c.op))) return "input modified";
    }
    return "";
}

std::string run_call(strata_team_t *team, int rank, int size, const Call &c) {
    switch (c.dtype) {
        case STRATA_INT32: return check_rank<int32_t>(team, rank, size, c);
        case STRATA_DOUBLE: return check_rank<double>(team, rank, size, c);
        case STRATA_FLOAT: return check_rank<float>(team, rank, size, c);
        case STRATA_UINT8: return check_rank<uint8_t>(team, rank, size, c);
        case STRATA_INT64: return check_rank<int64_t>(team, rank, size, c);
        default: return "type not in this test";
    }
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
                    static const strata_dtype_t types[] = {STRATA_INT32, STRATA_DOUBLE, STRATA_FLOAT,
                                                           STRATA_UINT8, STRATA_INT64};
                    static const strata_op_t opsv[] = {STRATA_OP_SUM, STRATA_OP_MAX, STRATA_OP_MIN,
                                                       STRATA_OP_PROD, STRATA_OP_BXOR};
                    strata_dtype_t dt = types[n % 5];
                    strata_op_t op = opsv[(n / 5 + n) % 5];
                    if (op == STRATA_OP_BXOR && (dt == STRATA_DOUBLE || dt == STRATA_FLOAT))
                        op = STRATA_OP_SUM;
                    out.push_back({unit, shape, alg, in_place, dt, op});
                    ++n;
                }
            }
        }
    }
    return out;
}

class ReduceScatterLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(ReduceScatterLayouts, ExactForEveryCall) {
    const Layout &lay = GetParam();
    const int size = int(lay.keys.size());
    strata_test::ThreadJob job(size);
    const std::vector<Call> cs = calls();
    std::vector<std::string> errors(static_cast<size_t>(size));
    const int before = count_strata_segments();
    job.run([&](int rank) {
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.node_size = lay.node_size;
        cfg.segment_size = 4096;
        cfg.small_msg_size = 2048;
        strata_transport_t tp = job.transport(rank);
        std::vector<strata_team_t *> teams;
        for (int alg = STRATA_ALG_AUTO; alg < strata_algorithm_count(STRATA_COLL_REDUCE_SCATTER);
             ++alg) {
            strata_config_t c = cfg;
            c.algorithm[STRATA_COLL_REDUCE_SCATTER] = alg;
            strata_team_t *team = nullptr;
            if (strata_team_create(rank, size, lay.keys[size_t(rank)], &tp, &c, &team) != STRATA_OK)
                errors[size_t(rank)] = "team create";
            teams.push_back(team);
        }
        for (const Call &c : cs) {
            if (!errors[size_t(rank)].empty()) break;
            const std::string e = run_call(teams[size_t(c.alg + 1)], rank, size, c);
            if (e.empty()) continue;
            errors[size_t(rank)] = std::string(strata_dtype_name(c.dtype)) + "/" +
                                   strata_op_name(c.op) + " unit " + std::to_string(c.unit) +
                                   " shape " + std::to_string(int(c.shape)) + " alg " +
                                   std::to_string(c.alg) + (c.in_place ? " in place" : "") + ": " + e;
            fprintf(stderr, "rank %d: %s\n", rank, errors[size_t(rank)].c_str());
        }
        for (strata_team_t *t : teams) strata_team_destroy(t);
    });
    for (int r = 0; r < size; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
    EXPECT_EQ(job.unreceived(), 0u);
    EXPECT_EQ(count_strata_segments(), before) << "a segment was left in /dev/shm";
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ReduceScatterLayouts,
    ::testing::Values(Layout{"1x1", blocks(1, 1), 0}, Layout{"1x3", blocks(1, 3), 0},
                      Layout{"1x4", blocks(1, 4), 0}, Layout{"2x1", blocks(2, 1), 0},
                      Layout{"2x2", blocks(2, 2), 0}, Layout{"2x3", blocks(2, 3), 0},
                      Layout{"3x2", blocks(3, 2), 0}, Layout{"4x1", blocks(4, 1), 0},
                      Layout{"3x3", blocks(3, 3), 0}, Layout{"4x4", blocks(4, 4), 0},
                      Layout{"virtual_5_by_2", blocks(1, 5), 2},
                      Layout{"virtual_7_by_3", blocks(1, 7), 3},
                      Layout{"uneven_3_2", {0, 0, 0, 1, 1}, 0},
                      Layout{"uneven_1_3_2", {0, 1, 1, 1, 2, 2}, 0},
                      Layout{"uneven_1_1_2", {0, 1, 2, 2}, 0},
                      Layout{"interleaved", {0, 1, 0, 1}, 0}),
    [](const ::testing::TestParamInfo<Layout> &i) { return std::string(i.param.name); });

}  // namespace
