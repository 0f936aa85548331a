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

struct Call {
    size_t count;
    int root;
    int alg;
    bool in_place;
    strata_dtype_t dtype;
    strata_op_t op;
};

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
    const bool root = rank == c.root;
    std::vector<T> send(c.count), recv(root ? c.count : 0, T(-99));
    for (size_t i = 0; i < c.count; ++i) send[i] = value<T>(rank, i, c.op);
    const bool in_place = c.in_place && root;
    if (in_place) recv = send;
    const strata_status_t st = strata_reduce(team, in_place ? nullptr : send.data(),
                                             root ? recv.data() : nullptr, c.count, c.dtype, c.op,
                                             c.root);
    if (st != STRATA_OK) return "status " + std::to_string(st);
    for (size_t i = 0; i < c.count; ++i)
        if (!(send[i] == value<T>(rank, i, c.op))) return "input modified";
    if (!root) return "";
    for (size_t i = 0; i < c.count; ++i) {
        T expect = value<T>(0, i, c.op);
        for (int r = 1; r < size; ++r) expect = fold(expect, value<T>(r, i, c.op), c.op);
        if (memcmp(&expect, &recv[i], sizeof(T)) != 0)
            return "first wrong index " + std::to_string(i) + " of " + std::to_string(c.count);
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

std::vector<Call> calls(int size) {
    std::vector<Call> out;
    const size_t counts[] = {1, 7, 1000, 4099};
    int n = 0;
    for (size_t count : counts) {
        for (int root = 0; root < size; ++root) {
            for (int alg = STRATA_ALG_AUTO; alg < strata_algorithm_count(STRATA_COLL_REDUCE); ++alg) {
                static const strata_dtype_t types[] = {STRATA_INT32, STRATA_DOUBLE, STRATA_FLOAT,
                                                       STRATA_UINT8, STRATA_INT64};
                static const strata_op_t opsv[] = {STRATA_OP_SUM, STRATA_OP_MAX, STRATA_OP_MIN,
                                                   STRATA_OP_PROD, STRATA_OP_BXOR};
                strata_dtype_t dt = types[n % 5];
                strata_op_t op = opsv[(n / 5 + n) % 5];
                if (op == STRATA_OP_BXOR && (dt == STRATA_DOUBLE || dt == STRATA_FLOAT))
                    op = STRATA_OP_SUM;
                out.push_back({count, root, alg, n % 2 == 1, dt, op});
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
    const Layout &lay = GetParam();
    const int size = int(lay.keys.size());
    strata_test::ThreadJob job(size);
    const std::vector<Call> cs = calls(size);
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
        for (int alg = STRATA_ALG_AUTO; alg < strata_algorithm_count(STRATA_COLL_REDUCE); ++alg) {
            strata_config_t c = cfg;
            c.algorithm[STRATA_COLL_REDUCE] = alg;
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
                                   strata_op_name(c.op) + " count " + std::to_string(c.count) +
                                   " root " + std::to_string(c.root) + " alg " +
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
    Layouts, ReduceLayouts,
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
