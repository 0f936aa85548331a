// SPDX-License-Identifier: BSD-3-Clause
// test/unit/rules_hook_test.cc - coll_strata_rules_file in a team (docs/hook.patch):
// the rules choose, and a team whose ranks do not all hold the same rules uses the
// built-in ones on every rank.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "harness.h"
#include "strata.h"

namespace {

using RulesFile = strata_test::TempFile;

// Two nodes of two ranks; rank r reads paths[r] (nullptr: none). Each rank makes a
// 64-byte and a 64 KiB float allreduce and reports the algorithms that ran ("a b"),
// or what was wrong.
// handback: coll_strata_host_handback (host_test_config turns it off).
std::vector<std::string> algorithms_run(const std::vector<const char *> &paths, bool handback = false) {
    const int size = 4;
    strata_test::ThreadJob job(size);
    std::vector<std::string> out(static_cast<size_t>(size));
    job.run([&](int rank) {
        strata_config_t cfg = strata_test::host_test_config();
        cfg.node_size = 2;
        cfg.rules_file = paths[size_t(rank)];
        cfg.host_handback = handback ? 1 : 0;
        cfg.timeout = 60;  // ranks that chose differently would wait for ever: fail instead
        strata_transport_t tp = job.transport(rank);
        strata_team_t *team = nullptr;
        if (strata_team_create(rank, size, 0, &tp, &cfg, &team) != STRATA_OK) {
            out[size_t(rank)] = "team create";
            return;
        }
        std::string &got = out[size_t(rank)];
        for (size_t n : {size_t(16), size_t(16384)}) {
            std::vector<float> v(n, float(rank + 1));
            const strata_status_t st = strata_allreduce(team, STRATA_IN_PLACE, v.data(), n, STRATA_FLOAT, STRATA_OP_SUM);
            if (st == STRATA_FALLBACK) {  // handed back (the glue would call the replaced component)
                got += std::string(got.empty() ? "" : " ") + (v[0] == float(rank + 1) ? "base" : "base-touched");
                continue;
            }
            if (st != STRATA_OK) {
                got += " failed";
                continue;
            }
            if (v[0] != 10.0f || v[n - 1] != 10.0f) got += " wrong";
            const char *alg = strata_team_last_algorithm(team);
            got += std::string(got.empty() ? "" : " ") + (alg ? alg : "?");
        }
        strata_team_destroy(team);
    });
    return out;
}

const char kSwapped[] =
    "# the built-in choices, the other way round\n"
    "allreduce 0-16K   2 2 host hier_ring\n"
    "allreduce 16K-    2 2 host hier_rd\n";

TEST(RulesHook, TheRulesChooseOnEveryRank) {
    RulesFile f(kSwapped);
    for (const std::string &s : algorithms_run({f.path.c_str(), f.path.c_str(), f.path.c_str(), f.path.c_str()}))
        EXPECT_EQ(s, "hier_ring hier_rd");
    // Without a file, or with one no line of which matches: the built-in rule.
    for (const std::string &s : algorithms_run({nullptr, nullptr, nullptr, nullptr})) EXPECT_EQ(s, "hier_rd hier_ring");
    RulesFile other("allreduce * 3- * * hier_ring\nbcast * * * * hier_tree\n");
    const char *p = other.path.c_str();
    for (const std::string &s : algorithms_run({p, p, p, p})) EXPECT_EQ(s, "hier_rd hier_ring");
}

// "base" hands the calls a line matches back to the component strata replaced, on
// every rank, before anything moves; the other sizes stay strata's.
TEST(RulesHook, ARuleCanHandCallsBack) {
    RulesFile f("allreduce 0-1K 2 2 host base\n");
    const char *p = f.path.c_str();
    for (const std::string &s : algorithms_run({p, p, p, p})) EXPECT_EQ(s, "base hier_ring");
    RulesFile g("allreduce 1K- * * * base\n");
    p = g.path.c_str();
    for (const std::string &s : algorithms_run({p, p, p, p})) EXPECT_EQ(s, "hier_rd base");
}

// By default a host team hands the calls of the built-in host rules back (a 64-byte
// allreduce), and serves the rest; a rules file line decides before them.
TEST(RulesHook, TheBuiltInHostRulesHandBackUnlessTheFileDecides) {
    for (const std::string &s : algorithms_run({nullptr, nullptr, nullptr, nullptr}, true))
        EXPECT_EQ(s, "base hier_ring");
    RulesFile f("allreduce 0-16K 2 2 host hier_rd\n");
    const char *p = f.path.c_str();
    for (const std::string &s : algorithms_run({p, p, p, p}, true)) EXPECT_EQ(s, "hier_rd hier_ring");
}

TEST(RulesHook, RulesThatDifferOrFailAnywhereAreUsedNowhere) {
    RulesFile f(kSwapped), g("allreduce * * * * hier_ring\n"), bad("allreduce * * * * hier_rng\n");
    const char *p = f.path.c_str();
    // One rank reads other rules, one reads none, one cannot parse its file, one
    // cannot open it: every rank takes the built-in rule, so the schedules match.
    for (const char *odd : {g.path.c_str(), static_cast<const char *>(nullptr), bad.path.c_str(), "/nonexistent/r"}) {
        SCOPED_TRACE(odd ? odd : "(none)");
        for (const std::string &s : algorithms_run({p, p, odd, p})) EXPECT_EQ(s, "hier_rd hier_ring");
    }
}

}  // namespace
