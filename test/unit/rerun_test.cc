// SPDX-License-Identifier: BSD-3-Clause
// test/unit/rerun_test.cc - a built schedule runs again as a later call.
//
// What persistent collectives rest on (call.h): a builder numbers segments, flag
// values and tags from 0, and the call's numbering shifts them when it runs, so one
// schedule built for call n runs again as call n + k with the flags and tags of
// n + k, between other calls of the same team, and gives exact results each time.
// Thread ranks on two nodes of two (0,1 | 2,3) and one node of three; a segment of
// 1 KiB, so every call wraps the stages many times.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algo/algo.h"
#include "call.h"
#include "harness.h"
#include "runner.h"
#include "strata.h"
#include "team.h"

namespace {

using strata::Call;
using strata::CollArgs;
using strata::Team;

constexpr size_t kCount = 3000;  // 12 KiB of int32: 12 segments of 1 KiB

int expected(int size, int rep) {  // sum over ranks r of (r + 1) * 10 + rep
    return 10 * size * (size + 1) / 2 + size * rep;
}

void rerun_every_algorithm(const std::vector<int> &keys) {
    const int size = int(keys.size());
    strata_test::ThreadJob job(size);
    const strata::AlgorithmTable &table = strata::allreduce_table();
    job.run([&](int rank) {
        strata_config_t cfg = strata_test::host_test_config();  // no GPU here: schedules in host memory
        cfg.segment_size = 1024;
        strata_transport_t tp = job.transport(rank);
        strata_team_t *handle = nullptr;
        ASSERT_EQ(strata_team_create(rank, size, keys[rank], &tp, &cfg, &handle), STRATA_OK);
        Team &team = *static_cast<Team *>(handle);
        ASSERT_EQ(team.ensure_setup(true), STRATA_OK);
        for (int alg = 0; alg < table.count; ++alg) {
            Call call(team);
            std::vector<int> in(kCount), out(kCount);
            CollArgs a;
            a.sendbuf = in.data();
            a.recvbuf = out.data();
            a.count = kCount;
            a.dtype = STRATA_INT32;
            a.op = STRATA_OP_SUM;
            for (int rep = 0; rep < 4; ++rep) {
                for (size_t i = 0; i < kCount; ++i) in[i] = (rank + 1) * 10 + rep;
                call.info.sig = 7;
                ASSERT_EQ(strata::calls_of(team).begin_call(call), STRATA_OK);
                if (rep == 0) {
                    ASSERT_EQ(table.algorithms[alg].build(call, a), STRATA_OK);
                }
                ASSERT_EQ(call.run(), STRATA_OK) << table.algorithms[alg].name << " start " << rep;
                ASSERT_EQ(strata::calls_of(team).end_call(), STRATA_OK);
                int wrong = 0;
                for (int x : out) wrong += x != expected(size, rep);
                EXPECT_EQ(wrong, 0) << table.algorithms[alg].name << " start " << rep << " rank " << rank;
                // An ordinary call in between: other numbers, another schedule, same slots.
                std::vector<int> v(kCount / 3 + 1, rank);
                ASSERT_EQ(strata_allreduce(handle, STRATA_IN_PLACE, v.data(), v.size(), STRATA_INT32, STRATA_OP_MAX),
                          STRATA_OK);
                EXPECT_EQ(v[0], size - 1);
            }
        }
        strata_team_destroy(handle);
    });
}

TEST(Rerun, ABuiltAllreduceRunsAgainAsLaterCallsOnTwoNodes) { rerun_every_algorithm({0, 0, 2, 2}); }

TEST(Rerun, ABuiltAllreduceRunsAgainAsLaterCallsOnOneNode) { rerun_every_algorithm({5, 5, 5}); }

// A blocking call like the previous one runs the previous one's schedule again
// (runner.cc, build_key): new data in the same buffers, and per-rank counts changed in
// the same arrays, must give exact results all the same.
TEST(Rerun, RepeatedBlockingCallsReuseTheirScheduleOnlyWhenNothingChanged) {
    const std::vector<int> keys{0, 0, 2, 2};
    const int size = int(keys.size());
    strata_test::ThreadJob job(size);
    job.run([&](int rank) {
        strata_config_t cfg = strata_test::host_test_config();
        cfg.segment_size = 1024;
        strata_transport_t tp = job.transport(rank);
        strata_team_t *handle = nullptr;
        ASSERT_EQ(strata_team_create(rank, size, keys[rank], &tp, &cfg, &handle), STRATA_OK);
        Team &team = *static_cast<Team *>(handle);
        std::vector<int> in(kCount), out(kCount);
        for (int rep = 0; rep < 3; ++rep) {
            for (size_t i = 0; i < kCount; ++i) in[i] = (rank + 1) * 10 + rep;
            ASSERT_EQ(strata_allreduce(handle, in.data(), out.data(), kCount, STRATA_INT32, STRATA_OP_SUM), STRATA_OK);
            int wrong = 0;
            for (int x : out) wrong += x != expected(size, rep);
            EXPECT_EQ(wrong, 0) << "allreduce, repetition " << rep;
            EXPECT_FALSE(strata::calls_of(team).blocking_call().built_for.empty()) << "the call was not kept for reuse";
        }
        // allgatherv: the same arrays, other sizes in them each time.
        std::vector<size_t> len(static_cast<size_t>(size)), at_(static_cast<size_t>(size));
        std::vector<char> mine(4096), all(4096 * size_t(size));
        for (int rep = 0; rep < 4; ++rep) {
            size_t at = 0;
            for (int r = 0; r < size; ++r) {
                // rank 0's own count stays, the others' change: only the arrays differ there
                len[size_t(r)] = r == 0 ? 100 : size_t(100 + 300 * ((r + rep) % 3));
                at_[size_t(r)] = at;
                at += len[size_t(r)] + 8;
            }
            for (size_t i = 0; i < mine.size(); ++i) mine[i] = char(rank * 31 + rep + int(i % 7));
            std::fill(all.begin(), all.end(), char(-1));
            ASSERT_EQ(strata_allgatherv(handle, mine.data(), all.data(), len.data(), at_.data()), STRATA_OK);
            int wrong = 0;
            for (int r = 0; r < size; ++r) {
                for (size_t i = 0; i < len[size_t(r)]; ++i)
                    wrong += all[at_[size_t(r)] + i] != char(r * 31 + rep + int(i % 7));
                for (size_t i = 0; i < 8; ++i) wrong += all[at_[size_t(r)] + len[size_t(r)] + i] != char(-1);
            }
            EXPECT_EQ(wrong, 0) << "allgatherv, repetition " << rep << ", rank " << rank;
        }
        strata_team_destroy(handle);
    });
}

}  // namespace
