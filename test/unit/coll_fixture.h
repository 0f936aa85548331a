/* SPDX-License-Identifier: BSD-3-Clause */
// test/unit/coll_fixture.h - what every collective's schedule test shares:
// the layouts, exact small-integer inputs and their reference fold, one team per
// algorithm setting, and the /dev/shm check.
#ifndef STRATA_TEST_COLL_FIXTURE_H
#define STRATA_TEST_COLL_FIXTURE_H

#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"
#include "strata.h"

namespace strata_test {

struct Layout {
    const char *name;
    std::vector<int> keys;  // node key per rank
    int node_size;          // virtual nodes (0: real layout)
    size_t segment = 4096;  // pipeline segment: small, so that blocks span several slots
};

inline std::vector<int> blocks(int nodes, int ppn) {
    std::vector<int> k;
    for (int n = 0; n < nodes; ++n)
        for (int i = 0; i < ppn; ++i) k.push_back(n);
    return k;
}

// 1..4 nodes x 1..4 ranks, many single-rank nodes, virtual nodes, uneven nodes
// (the rails take j % L on smaller nodes) and ranks interleaved over nodes.
inline std::vector<Layout> standard_layouts() {
    return {Layout{"1x1", blocks(1, 1), 0},       Layout{"1x2", blocks(1, 2), 0},
            Layout{"1x3", blocks(1, 3), 0},       Layout{"1x4", blocks(1, 4), 0},
            Layout{"2x1", blocks(2, 1), 0},       Layout{"2x2", blocks(2, 2), 0},
            Layout{"2x3", blocks(2, 3), 0},       Layout{"3x2", blocks(3, 2), 0},
            Layout{"4x1", blocks(4, 1), 0},       Layout{"3x3", blocks(3, 3), 0},
            Layout{"4x4", blocks(4, 4), 0},       Layout{"5x1", blocks(5, 1), 0},
            Layout{"virtual_5_by_2", blocks(1, 5), 2},
            Layout{"virtual_7_by_3", blocks(1, 7), 3},
            Layout{"uneven_3_2", {0, 0, 0, 1, 1}, 0},
            Layout{"uneven_1_3_2", {0, 1, 1, 1, 2, 2}, 0},
            Layout{"uneven_1_1_2", {0, 1, 2, 2}, 0},
            Layout{"uneven_4_1_2", {0, 0, 0, 0, 1, 2, 2}, 0},
            Layout{"interleaved", {0, 1, 0, 1}, 0}};
}

inline std::string layout_name(const ::testing::TestParamInfo<Layout> &i) { return i.param.name; }

inline int count_strata_segments() {
    int n = 0;
    if (DIR *d = opendir("/dev/shm")) {
        while (dirent *e = readdir(d)) n += strncmp(e->d_name, "strata-", 7) == 0;
        closedir(d);
    }
    return n;
}

// Small integers: any reduction order gives the same exact result.
template <class T>
T value(int rank, size_t i, strata_op_t op) {
    if (op == STRATA_OP_PROD) return T((size_t(rank) + i) % 3 == 0 ? 2 : 1);
    if (op == STRATA_OP_BXOR) return T((size_t(rank) * 2654435761u + i * 40503u) & 0x7f);
    return T(int((size_t(rank) * 7 + i * 3) % 11) - (std::is_signed<T>::value ? 5 : 0));
}

// The reference for the ops value() serves, computed plainly.
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

// Element i of the reduction over all ranks.
template <class T>
T expected(int size, size_t i, strata_op_t op) {
    T e = value<T>(0, i, op);
    for (int r = 1; r < size; ++r) e = fold(e, value<T>(r, i, op), op);
    return e;
}

// "" when got[0..n) equals, bit for bit, the reduction of elements first..first+n
// over all ranks; otherwise the first wrong index.
template <class T>
std::string first_mismatch(int size, strata_op_t op, const T *got, size_t n, size_t first = 0) {
    for (size_t i = 0; i < n; ++i) {
        const T expect = expected<T>(size, first + i, op);
        if (memcmp(&expect, &got[i], sizeof(T)) != 0)
            return "first wrong index " + std::to_string(first + i) + " of " + std::to_string(n);
    }
    return "";
}

// The types and ops the schedule tests rotate through: call n gets pair n.
struct TypeOp {
    strata_dtype_t dtype;
    strata_op_t op;
};
inline TypeOp rotate_type_op(int n) {
    static const strata_dtype_t types[] = {STRATA_INT32, STRATA_DOUBLE, STRATA_FLOAT, STRATA_UINT8,
                                           STRATA_INT64};
    static const strata_op_t ops[] = {STRATA_OP_SUM, STRATA_OP_MAX, STRATA_OP_MIN, STRATA_OP_PROD,
                                      STRATA_OP_BXOR};
    TypeOp t{types[n % 5], ops[(n / 5 + n) % 5]};
    if (t.op == STRATA_OP_BXOR && (t.dtype == STRATA_DOUBLE || t.dtype == STRATA_FLOAT))
        t.op = STRATA_OP_SUM;
    return t;
}

// Calls f(static_cast<T *>(nullptr)) for the C++ type of a rotated dtype.
template <class F>
std::string with_type(strata_dtype_t dtype, F &&f) {
    switch (dtype) {
        case STRATA_INT32: return f(static_cast<int32_t *>(nullptr));
        case STRATA_DOUBLE: return f(static_cast<double *>(nullptr));
        case STRATA_FLOAT: return f(static_cast<float *>(nullptr));
        case STRATA_UINT8: return f(static_cast<uint8_t *>(nullptr));
        case STRATA_INT64: return f(static_cast<int64_t *>(nullptr));
        default: return "type not in this test";
    }
}

// One team per setting of coll's algorithm variable: [0] auto, [1 + a] forced to
// algorithm a. Forcing goes through the field the MCA variable fills. Empty on failure.
inline std::vector<strata_team_t *> make_teams(ThreadJob &job, int rank, int key,
                                               const strata_config_t &cfg, strata_coll_t coll) {
    std::vector<strata_team_t *> teams;
    strata_transport_t tp = job.transport(rank);
    for (int alg = STRATA_ALG_AUTO; alg < strata_algorithm_count(coll); ++alg) {
        strata_config_t c = cfg;
        c.algorithm[coll] = alg;
        strata_team_t *team = nullptr;
        if (strata_team_create(rank, job.size(), key, &tp, &c, &team) != STRATA_OK) {
            for (strata_team_t *t : teams) strata_team_destroy(t);
            return {};
        }
        teams.push_back(team);
    }
    return teams;
}

// Runs a sequence of calls on one layout, one team per algorithm setting on every
// rank (segments of 4096 bytes, "small" up to 2048, so that pipelines have many
// segments and both kinds of algorithm run). run(team, rank, call, index) returns ""
// or what was wrong; describe(call) names the call in the failure. A rank that saw a
// wrong result keeps making calls, so that its peers never wait for it. Checks every
// rank's result, that no message was left unreceived and no segment in /dev/shm, and
// returns how often each algorithm ran on rank 0 (over all its teams).
template <class Call, class Run, class Describe>
std::vector<uint64_t> run_layout(const Layout &lay, strata_coll_t coll, const std::vector<Call> &calls,
                                 Run run, Describe describe) {
    const int size = int(lay.keys.size());
    ThreadJob job(size);
    std::vector<std::string> errors(size_t(size), "");
    std::vector<uint64_t> ran(size_t(strata_algorithm_count(coll)), 0);
    const int before = count_strata_segments();
    job.run([&](int rank) {
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.host_buffers = 1;   // a team of host ranks runs, and sets up at the first call,
        cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
        cfg.lazy_calls = 0;     // whatever the defaults users get
        cfg.node_size = lay.node_size;
        cfg.segment_size = lay.segment;
        cfg.device_segment_size = 0;  // the layout's segment on GPU teams of one node too
        cfg.device_multinode_segment_size = 0;  // and across nodes
        cfg.small_msg_size = 2048;
        cfg.zero_copy_size = 2048;  // (device teams)
        std::vector<strata_team_t *> teams = make_teams(job, rank, lay.keys[size_t(rank)], cfg, coll);
        std::string &err = errors[size_t(rank)];
        if (teams.empty()) err = "team create";
        int n = 0;
        for (const Call &c : calls) {
            if (teams.empty()) break;
            const std::string e = run(teams[size_t(c.alg + 1)], rank, c, n++);
            if (e.empty() || !err.empty()) continue;
            err = describe(c) + " alg " + std::to_string(c.alg) + ": " + e;
            fprintf(stderr, "rank %d: %s\n", rank, err.c_str());
        }
        for (strata_team_t *t : teams) {
            for (size_t a = 0; rank == 0 && a < ran.size(); ++a) ran[a] += strata_team_calls(t, coll, int(a));
            strata_team_destroy(t);
        }
    });
    for (int r = 0; r < size; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
    EXPECT_EQ(job.unreceived(), 0u);
    EXPECT_EQ(count_strata_segments(), before) << "a segment was left in /dev/shm";
    return ran;
}

}  // namespace strata_test

#endif
