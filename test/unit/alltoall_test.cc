// SPDX-License-Identifier: BSD-3-Clause
// test/unit/alltoall_test.cc - alltoall and alltoallv schedules, ranks as threads.
//
// Each layout runs one long sequence of calls on the same teams: uniform block sizes
// (alltoall), per-pair sizes with zeros and displacements in reverse order with gaps
// (alltoallv), every algorithm, in place and not; every byte is compared exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "coll_fixture.h"
#include "harness.h"
#include "strata.h"

namespace {

using strata_test::blocks;
using strata_test::count_strata_segments;
using strata_test::Layout;

struct Call {
    size_t unit;  // bytes per block (uniform) or scale of the per-pair sizes
    bool uniform;
    int alg;
    bool in_place;
    int seq;      // varies the data from call to call
};

// Bytes from src to dst. Symmetric so that in place (send sizes == receive sizes) is legal.
size_t pair_bytes(const Call &c, int src, int dst) {
    if (c.uniform) return c.unit;
    const size_t a = size_t(src < dst ? src : dst), b = size_t(src < dst ? dst : src);
    return (a * 7 + b * 3 + size_t(c.seq)) % 4 == 0 ? 0 : (a * 13 + b * 5 + c.unit) % (2 * c.unit + 1);
}

unsigned char byte(const Call &c, int src, int dst, size_t i) {
    return static_cast<unsigned char>(src * 31 + dst * 17 + int(i) * 7 + c.seq);
}

// Blocks laid out in reverse rank order with a 3-byte gap between them.
std::vector<size_t> displs_for(const std::vector<size_t> &bytes, size_t *total) {
    std::vector<size_t> d(bytes.size());
    size_t at = 0;
    for (size_t r = bytes.size(); r-- > 0;) {
        d[r] = at;
        at += bytes[r] + 3;
    }
    *total = at;
    return d;
}

std::string check_rank(strata_team_t *team, int rank, int size, const Call &c) {
    std::vector<size_t> sb(static_cast<size_t>(size)), rb(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        sb[size_t(r)] = pair_bytes(c, rank, r);
        rb[size_t(r)] = pair_bytes(c, r, rank);
    }
    size_t stotal = 0, rtotal = 0;
    const std::vector<size_t> sd = displs_for(sb, &stotal), rd = displs_for(rb, &rtotal);
    std::vector<unsigned char> send(stotal, 0xee), recv(rtotal, 0xdd);
    for (int r = 0; r < size; ++r)
        for (size_t i = 0; i < sb[size_t(r)]; ++i) send[sd[size_t(r)] + i] = byte(c, rank, r, i);
    if (c.in_place) recv = send;  // sb == rb and sd == rd here
    strata_status_t st;
    if (c.uniform) {
        // Contiguous blocks in rank order, as MPI_Alltoall lays them out.
        // (one spare byte: a zero-size call still passes a real buffer, as MPI programs do)
        std::vector<unsigned char> s(c.unit * size_t(size) + 1), r(c.unit * size_t(size) + 1, 0xdd);
        for (int p = 0; p < size; ++p)
            for (size_t i = 0; i < c.unit; ++i) s[size_t(p) * c.unit + i] = byte(c, rank, p, i);
        if (c.in_place) r = s;
        st = strata_alltoall(team, c.in_place ? STRATA_IN_PLACE : s.data(), r.data(), c.unit);
        if (st != STRATA_OK) return "status " + std::to_string(st);
        for (int p = 0; p < size; ++p)
            for (size_t i = 0; i < c.unit; ++i)
                if (r[size_t(p) * c.unit + i] != byte(c, p, rank, i))
                    return "from rank " + std::to_string(p) + " first wrong byte " + std::to_string(i);
        return "";
    }
    st = strata_alltoallv(team, c.in_place ? STRATA_IN_PLACE : send.data(), sb.data(), sd.data(), recv.data(),
                          rb.data(), rd.data());
    if (st != STRATA_OK) return "status " + std::to_string(st);
    for (int p = 0; p < size; ++p)
        for (size_t i = 0; i < rb[size_t(p)]; ++i)
            if (recv[rd[size_t(p)] + i] != byte(c, p, rank, i))
                return "v: from rank " + std::to_string(p) + " first wrong byte " + std::to_string(i);
    // The gaps are untouched.
    for (int p = 0; p < size; ++p)
        for (size_t i = 0; i < 3; ++i) {
            const unsigned char expect = c.in_place ? 0xee : 0xdd;
            if (recv[rd[size_t(p)] + rb[size_t(p)] + i] != expect) return "v: gap overwritten";
        }
    return "";
}

std::vector<Call> calls() {
    std::vector<Call> out;
    const size_t units[] = {0, 1, 7, 100, 3001, 9000};
    int seq = 0;
    for (size_t unit : units)
        for (bool uniform : {true, false})
            for (int alg = STRATA_ALG_AUTO; alg < strata_algorithm_count(STRATA_COLL_ALLTOALL); ++alg)
                for (bool in_place : {false, true}) out.push_back({unit, uniform, alg, in_place, seq++});
    return out;
}

class AlltoallLayouts : public ::testing::TestWithParam<Layout> {};

TEST_P(AlltoallLayouts, ExactForEveryCall) {
    const Layout &lay = GetParam();
    const int size = int(lay.keys.size());
    strata_test::ThreadJob job(size);
    const std::vector<Call> cs = calls();
    std::vector<std::string> errors(static_cast<size_t>(size));
    const int nalg = strata_algorithm_count(STRATA_COLL_ALLTOALL);
    // ran[rank][team][alg]: calls each team ran with each algorithm.
    std::vector<std::vector<std::vector<uint64_t>>> ran(
        static_cast<size_t>(size), std::vector<std::vector<uint64_t>>(
                                       size_t(nalg + 1), std::vector<uint64_t>(size_t(nalg), 0)));
    const int before = count_strata_segments();
    job.run([&](int rank) {
        strata_config_t cfg;
        strata_config_defaults(&cfg);
        cfg.host_buffers = 1;   // a team of host ranks runs, and sets up at the first call,
        cfg.host_handback = 0;  // every size runs strata (not the built-in host rules)
        cfg.lazy_calls = 0;     // whatever the defaults users get
        cfg.node_size = lay.node_size;
        cfg.segment_size = lay.segment;
        cfg.small_msg_size = 2048;
        std::vector<strata_team_t *> teams =
            strata_test::make_teams(job, rank, lay.keys[size_t(rank)], cfg, STRATA_COLL_ALLTOALL);
        if (teams.empty()) errors[size_t(rank)] = "team create";
        for (const Call &c : cs) {
            if (teams.empty()) break;  // after a wrong result keep going: peers wait for this rank
            const std::string e = check_rank(teams[size_t(c.alg + 1)], rank, size, c);
            if (e.empty() || !errors[size_t(rank)].empty()) continue;
            errors[size_t(rank)] = std::string(c.uniform ? "alltoall" : "alltoallv") + " unit " +
                                   std::to_string(c.unit) + " alg " + std::to_string(c.alg) +
                                   (c.in_place ? " in place" : "") + ": " + e;
            fprintf(stderr, "rank %d: %s\n", rank, errors[size_t(rank)].c_str());
        }
        for (size_t i = 0; i < teams.size(); ++i) {
            for (int alg = 0; alg < nalg && teams[i]; ++alg)
                ran[size_t(rank)][i][size_t(alg)] = strata_team_calls(teams[i], STRATA_COLL_ALLTOALL, alg);
            strata_team_destroy(teams[i]);
        }
    });
    // A forced algorithm ran every call of its team; the rule picked one algorithm
    // for the layout (sizes are not agreed for alltoallv), the same on every rank.
    for (int r = 0; r < size; ++r) {
        for (int alg = 0; alg < nalg; ++alg)
            for (int other = 0; other < nalg; ++other)
                EXPECT_EQ(ran[size_t(r)][size_t(alg + 1)][size_t(other)] > 0, alg == other)
                    << "rank " << r << " forced " << alg << " ran " << other;
        EXPECT_EQ(ran[size_t(r)][0], ran[0][0]) << "rank " << r << ": rule disagrees";
    }
    const int expect_auto = 0;  // pairwise, whatever the layout (see choose_alltoall)
    EXPECT_GT(ran[0][0][size_t(expect_auto)], 0u) << "rule did not pick "
                                                  << strata_algorithm_name(STRATA_COLL_ALLTOALL, expect_auto);
    for (int r = 0; r < size; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
    EXPECT_EQ(job.unreceived(), 0u);
    EXPECT_EQ(count_strata_segments(), before) << "a segment was left in /dev/shm";
}

// The shared layouts, and alltoall's own: more uneven shapes (every pair of nodes
// exchanges a different amount) and slots smaller than one block.
std::vector<Layout> alltoall_layouts() {
    std::vector<Layout> v = strata_test::standard_layouts();
    v.insert(v.end(), {Layout{"uneven_4_1_3", {0, 0, 0, 0, 1, 2, 2, 2}, 0},
                       Layout{"uneven_2_5", {0, 0, 1, 1, 1, 1, 1}, 0},
                       Layout{"interleaved_uneven", {0, 1, 2, 0, 1, 0, 2, 0}, 0},
                       Layout{"3x3_tiny_slots", blocks(3, 3), 0, 64},
                       Layout{"uneven_3_1_2_tiny_slots", {0, 0, 0, 1, 2, 2}, 0, 100}});
    return v;
}

INSTANTIATE_TEST_SUITE_P(Layouts, AlltoallLayouts, ::testing::ValuesIn(alltoall_layouts()),
                         strata_test::layout_name);

}  // namespace
