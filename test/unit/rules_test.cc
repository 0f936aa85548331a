// SPDX-License-Identifier: BSD-3-Clause
// test/unit/rules_test.cc - rules files (src/algo/rules.h): parsing, choosing,
// errors with their line numbers, hashes.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "algo/algo.h"
#include "algo/rules.h"
#include "harness.h"

using strata::parse_rules;
using strata::load_rules;
using strata::Rules;
using strata::Status;

namespace {

constexpr size_t K = 1024, M = 1024 * 1024;

Rules parsed(const std::string &text) {
    Rules r;
    std::string error;
    const Status st = parse_rules(text, "rules.txt", &r, &error);
    EXPECT_EQ(st, STRATA_OK) << error;
    return r;
}

// choose() as a string, "-" for no match, with ":segment" when one is given.
std::string pick(const Rules &r, strata_coll_t coll, size_t bytes, int nodes, int rpn, bool device) {
    size_t seg = 12345;
    const char *a = r.choose(coll, bytes, nodes, rpn, device, &seg);
    if (a == nullptr) return seg == 0 ? "-" : "-:segment not cleared";
    return seg ? std::string(a) + ":" + std::to_string(seg) : std::string(a);
}

const char kGood[] =
    "# collective  bytes    nodes  ranks/node  memory  algorithm  [segment=BYTES]\n"
    "allreduce     0-16K    *      *           *       hier_rd\n"
    "allreduce     16K-     2-     *           device  hier_ring  segment=1M\n"
    "allreduce     16k-     *      1-4         host    hier_rd    # shadowed below 16K by line 2\n"
    "allreduce     *        *      *           *       hier_ring\n"
    "\n"
    "bcast         1K-64K   2-8    2           *       hier_tree\n"
    "bcast         64K-     *      *           host    hier_chain segment=256K\n"
    "   \t# only a comment, indented\n"
    "reduce_scatter 4M      4      8           device  hier_direct\n"
    "alltoall      0-1G     *      *           *       hier_agg\n";

TEST(Rules, GoodFileChoosesAsWritten) {
    const Rules r = parsed(kGood);
    ASSERT_EQ(r.size(), 8u);
    EXPECT_EQ(r.source(), "rules.txt");
    EXPECT_EQ(r.rules()[1].line, 3);
    EXPECT_EQ(r.rules()[4].line, 7);
    // allreduce: 16K itself is in both of the first two lines: the first wins.
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 0, 1, 1, false), "hier_rd");
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 16 * K, 8, 8, true), "hier_rd");
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 16 * K + 1, 2, 8, true), "hier_ring:" + std::to_string(M));
    // Line 3 needs a device team; on host with 4 ranks a node the next line serves.
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 16 * K + 1, 2, 4, false), "hier_rd");
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 16 * K + 1, 2, 5, false), "hier_ring");
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 16 * K + 1, 1, 8, true), "hier_ring");  // one node: not line 3
    // bcast: inclusive ends, exact ranks per node, memory.
    EXPECT_EQ(pick(r, STRATA_COLL_BCAST, K - 1, 2, 2, false), "-");
    EXPECT_EQ(pick(r, STRATA_COLL_BCAST, K, 2, 2, false), "hier_tree");
    EXPECT_EQ(pick(r, STRATA_COLL_BCAST, 64 * K, 8, 2, true), "hier_tree");
    EXPECT_EQ(pick(r, STRATA_COLL_BCAST, 64 * K, 9, 2, true), "-");
    EXPECT_EQ(pick(r, STRATA_COLL_BCAST, 64 * K, 9, 2, false), "hier_chain:" + std::to_string(256 * K));
    EXPECT_EQ(pick(r, STRATA_COLL_BCAST, 4 * K, 2, 3, false), "-");
    // A single size matches itself only.
    EXPECT_EQ(pick(r, STRATA_COLL_REDUCE_SCATTER, 4 * M, 4, 8, true), "hier_direct");
    EXPECT_EQ(pick(r, STRATA_COLL_REDUCE_SCATTER, 4 * M + 1, 4, 8, true), "-");
    EXPECT_EQ(pick(r, STRATA_COLL_REDUCE_SCATTER, 4 * M, 4, 8, false), "-");
    EXPECT_EQ(pick(r, STRATA_COLL_ALLTOALL, size_t(1) << 30, 3, 3, false), "hier_agg");
    EXPECT_EQ(pick(r, STRATA_COLL_ALLTOALL, (size_t(1) << 30) + 1, 3, 3, false), "-");
    // No line for these collectives: the built-in rule applies.
    EXPECT_EQ(pick(r, STRATA_COLL_ALLGATHER, 100, 2, 2, false), "-");
    EXPECT_EQ(pick(r, STRATA_COLL_REDUCE, 100, 2, 2, false), "-");
    EXPECT_EQ(r.choose(STRATA_COLL_REDUCE, 100, 2, 2, false, nullptr), nullptr);
}

TEST(Rules, EveryAlgorithmOfEveryTableIsAccepted) {
    std::string text;
    int n = 0;
    for (int c = 0; c < STRATA_COLL_COUNT; ++c) {
        const strata::AlgorithmTable &t = strata::algorithm_table(strata_coll_t(c));
        for (int i = 0; i < t.count; ++i, ++n)
            text += std::string(strata_coll_name(strata_coll_t(c))) + " * * * * " + t.algorithms[i].name + "\n";
    }
    EXPECT_EQ(parsed(text).size(), size_t(n));
    EXPECT_GT(n, 6);
}

struct Bad {
    const char *line;
    const char *error;  // after "rules.txt:3: "
};

// Each malformed line, as line 3 of a file whose other lines are good.
const Bad kBad[] = {
    {"allreduce 0-16K * * *", "expected 'collective bytes nodes ranks/node memory algorithm [segment=BYTES]', found 5 fields"},
    {"allreduce", "expected 'collective bytes nodes ranks/node memory algorithm [segment=BYTES]', found 1 field"},
    {"allredcue * * * * hier_rd",
     "unknown collective 'allredcue' (known: allreduce, allgather, reduce_scatter, bcast, alltoall, reduce, gather, scatter)"},
    {"allreduce * * * * hier_rng", "unknown algorithm 'hier_rng' for allreduce (known: hier_ring, hier_rd, base)"},
    {"bcast * * * * hier_ring", "unknown algorithm 'hier_ring' for bcast (known: hier_chain, hier_tree, base)"},
    {"allreduce 16Q- * * * hier_rd",
     "bytes range '16Q-' is not N, A-B, A- or * (sizes may end in K, M or G)"},
    {"allreduce -16K * * * hier_rd", "bytes range '-16K' is not N, A-B, A- or * (sizes may end in K, M or G)"},
    {"allreduce 1K-2K-3K * * * hier_rd", "bytes range '1K-2K-3K' is not N, A-B, A- or * (sizes may end in K, M or G)"},
    {"allreduce 99999999999999999999 * * * hier_rd",
     "bytes range '99999999999999999999' is not N, A-B, A- or * (sizes may end in K, M or G)"},
    {"allreduce 17179869184G * * * hier_rd",
     "bytes range '17179869184G' is not N, A-B, A- or * (sizes may end in K, M or G)"},
    {"allreduce 16K-1K * * * hier_rd", "bytes range '16K-1K' is empty (its low end is above its high end)"},
    {"allreduce * 2K * * hier_rd", "nodes range '2K' is not N, A-B, A- or *"},
    {"allreduce * 0 * * hier_rd", "nodes range '0' matches no team (it starts at 1)"},
    {"allreduce * * 8-4 * hier_rd", "ranks/node range '8-4' is empty (its low end is above its high end)"},
    {"allreduce * * x * hier_rd", "ranks/node range 'x' is not N, A-B, A- or *"},
    {"allreduce * * * gpu hier_rd", "unknown memory 'gpu' (known: host, device, *)"},
    {"allreduce * * * * hier_rd seg=1M", "unknown option 'seg=1M' (known: segment=BYTES)"},
    {"allreduce * * * * hier_rd segment", "unknown option 'segment' (known: segment=BYTES)"},
    {"allreduce * * * * hier_rd segment=32", "segment '32' is not a size from 64 to 1G"},
    {"allreduce * * * * hier_rd segment=2G", "segment '2G' is not a size from 64 to 1G"},
    {"allreduce * * * * hier_rd segment=1M segment=2M", "segment given twice"},
    {"allreduce * * * * hier_rd -> 1M", "unknown option '->' (known: segment=BYTES)"},
};

TEST(Rules, EachMalformedLineIsReportedWithItsLineNumber) {
    for (const Bad &b : kBad) {
        SCOPED_TRACE(b.line);
        const std::string text = std::string("# good lines around the bad one\nbcast * * * * hier_tree\n") +
                                 b.line + "\nallreduce * * * * hier_ring\n";
        Rules r = parsed("allreduce * * * * hier_rd\n");  // loaded before: must not survive
        ASSERT_EQ(r.size(), 1u);
        std::string error;
        EXPECT_EQ(parse_rules(text, "rules.txt", &r, &error), STRATA_ERR_ARG);
        EXPECT_EQ(error, std::string("rules.txt:3: ") + b.error);
        EXPECT_TRUE(r.empty());
        EXPECT_EQ(r.choose(STRATA_COLL_ALLREDUCE, 8, 1, 1, false, nullptr), nullptr);
    }
}

TEST(Rules, TheFirstBadLineIsTheOneReported) {
    Rules r;
    std::string error;
    EXPECT_EQ(parse_rules("\n\n\n\n\n\nallreduce * * * * hier_rng\nfoo\n", "t.rules", &r, &error), STRATA_ERR_ARG);
    EXPECT_EQ(error, "t.rules:7: unknown algorithm 'hier_rng' for allreduce (known: hier_ring, hier_rd, base)");
    // Windows line ends and a last line without one count like any other.
    EXPECT_EQ(parse_rules("bcast * * * * hier_tree\r\nbcast * * * host hier_chan", "t.rules", &r, &error),
              STRATA_ERR_ARG);
    EXPECT_EQ(error, "t.rules:2: unknown algorithm 'hier_chan' for bcast (known: hier_chain, hier_tree, base)");
    // A token shown in a message is cut and made printable.
    EXPECT_EQ(parse_rules(std::string("allreduce * * * \x01") + std::string(60, 'a') + " hier_rd\n", "t", &r, &error),
              STRATA_ERR_ARG);
    EXPECT_EQ(error, "t:1: unknown memory '?" + std::string(39, 'a') + "...' (known: host, device, *)");
}

TEST(Rules, EmptyFilesAndCommentsLoadNoRules) {
    for (const char *text : {"", "\n\n", "# nothing but comments\n   # and blanks\n\t\n", "#", "  "}) {
        const Rules r = parsed(text);
        EXPECT_TRUE(r.empty());
        EXPECT_EQ(r.choose(STRATA_COLL_ALLREDUCE, 8, 2, 2, false, nullptr), nullptr);
        EXPECT_EQ(r.hash(), Rules().hash());
    }
}

TEST(Rules, HashFollowsContentNotText) {
    const char base[] = "allreduce 0-16K * * * hier_rd\nbcast 64K- 2 * host hier_chain segment=1M\n";
    const uint64_t h = parsed(base).hash();
    // The same rules written differently: spacing, comments, suffixes, blank lines.
    EXPECT_EQ(parsed("# tuned\nallreduce\t0-16384 * * *   hier_rd # small\n\n"
                     "bcast 65536- 2-2 * host hier_chain segment=1024K\n")
                  .hash(),
              h);
    EXPECT_EQ(parsed(base).hash(), h);
    // Any difference that changes a choice changes the hash.
    const char *const others[] = {
        "allreduce 0-16K * * * hier_rd\n",                                             // a line less
        "bcast 64K- 2 * host hier_chain segment=1M\nallreduce 0-16K * * * hier_rd\n",  // order
        "allreduce 0-16K * * * hier_ring\nbcast 64K- 2 * host hier_chain segment=1M\n",
        "allreduce 0-8K * * * hier_rd\nbcast 64K- 2 * host hier_chain segment=1M\n",
        "allreduce 0-16K 2- * * hier_rd\nbcast 64K- 2 * host hier_chain segment=1M\n",
        "allreduce 0-16K * 2 * hier_rd\nbcast 64K- 2 * host hier_chain segment=1M\n",
        "allreduce 0-16K * * host hier_rd\nbcast 64K- 2 * host hier_chain segment=1M\n",
        "allreduce 0-16K * * * hier_rd\nbcast 64K- 2 * host hier_chain segment=2M\n",
        "allreduce 0-16K * * * hier_rd\nbcast 64K- 2 * host hier_chain\n",
        "allreduce 0-16K * * * hier_rd\nreduce 64K- 2 * host hier_chain segment=1M\n",
        "",
    };
    for (const char *o : others) EXPECT_NE(parsed(o).hash(), h) << o;
}

using TempFile = strata_test::TempFile;

TEST(Rules, LoadReadsAFileAndNamesItInErrors) {
    TempFile good(kGood);
    Rules r;
    std::string error;
    ASSERT_EQ(load_rules(good.path.c_str(), &r, &error), STRATA_OK) << error;
    EXPECT_EQ(r.size(), 8u);
    EXPECT_EQ(r.source(), good.path);
    EXPECT_EQ(r.hash(), parsed(kGood).hash());

    TempFile bad("allreduce * * * * hier_rd\n\nallreduce * * * * hier_rng\n");
    EXPECT_EQ(load_rules(bad.path.c_str(), &r, &error), STRATA_ERR_ARG);
    EXPECT_EQ(error, bad.path + ":3: unknown algorithm 'hier_rng' for allreduce (known: hier_ring, hier_rd, base)");
    EXPECT_TRUE(r.empty());

    r = parsed(kGood);
    EXPECT_EQ(load_rules("/nonexistent/strata.rules", &r, &error), STRATA_ERR_SYS);
    EXPECT_EQ(error, "/nonexistent/strata.rules: cannot read: No such file or directory");
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(load_rules("/tmp", &r, &error), STRATA_ERR_ARG);
    EXPECT_EQ(error, "/tmp: not a regular file");
    // A FIFO with no writer: refused at once, not waited on (it would block MPI_Init).
    char fifo[] = "/tmp/strata_fifo_XXXXXX";
    ASSERT_NE(mkdtemp(fifo), nullptr);
    const std::string pipe = std::string(fifo) + "/rules";
    ASSERT_EQ(mkfifo(pipe.c_str(), 0600), 0);
    EXPECT_EQ(load_rules(pipe.c_str(), &r, &error), STRATA_ERR_ARG);
    EXPECT_EQ(error, pipe + ": not a regular file");
    unlink(pipe.c_str());
    rmdir(fifo);
    EXPECT_EQ(load_rules("", &r, &error), STRATA_ERR_ARG);
    EXPECT_EQ(load_rules(nullptr, &r, &error), STRATA_ERR_ARG);
}

// What perf/strata-tune wrote on the development machine (docs/rules.md): the
// format the tuner writes is the format the core reads.
TEST(Rules, TheTunersOutputLoads) {
    std::string path = __FILE__;
    path = path.substr(0, path.rfind('/') + 1) + "rules_tuned.txt";
    Rules r;
    std::string error;
    ASSERT_EQ(load_rules(path.c_str(), &r, &error), STRATA_OK) << error;
    ASSERT_FALSE(r.empty());
    // Written for 2 nodes of 2 ranks in host memory, from 1K to 4M.
    EXPECT_NE(r.choose(STRATA_COLL_ALLREDUCE, 4 * K, 2, 2, false, nullptr), nullptr);
    EXPECT_NE(r.choose(STRATA_COLL_BCAST, 4 * M, 2, 2, false, nullptr), nullptr);
    EXPECT_EQ(r.choose(STRATA_COLL_ALLREDUCE, 4 * K, 2, 2, true, nullptr), nullptr);
    EXPECT_EQ(r.choose(STRATA_COLL_ALLREDUCE, 4 * K, 4, 2, false, nullptr), nullptr);
}

}  // namespace

namespace {

// The built-in host rules (coll_strata_host_handback): they parse, only ever hand
// calls back, and only on host memory; alltoallv (size 0 to the rules) stays strata's.
TEST(Rules, TheBuiltInHostRulesHandSmallHostCallsBack) {
    Rules again;
    std::string error;
    ASSERT_EQ(parse_rules(strata::builtin_host_rules_text(), "built-in", &again, &error), STRATA_OK) << error;
    const Rules &r = strata::builtin_host_rules();
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r.hash(), again.hash());
    for (const strata::Rule &rule : r.rules()) EXPECT_EQ(rule.algorithm, strata::kHandBack) << "line " << rule.line;
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 1 * K, 2, 1, false), "base");
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 1 * K, 2, 1, true), "-");  // device teams: strata's
    EXPECT_EQ(pick(r, STRATA_COLL_ALLREDUCE, 64 * K, 2, 2, false), "-");
    EXPECT_EQ(pick(r, STRATA_COLL_ALLTOALL, 0, 2, 2, false), "-");  // alltoallv
    EXPECT_EQ(pick(r, STRATA_COLL_ALLTOALL, 4 * K, 2, 2, false), "base");
    EXPECT_EQ(pick(r, STRATA_COLL_REDUCE, 64 * M, 4, 1, false), "base");  // one rank per node
    EXPECT_EQ(pick(r, STRATA_COLL_REDUCE, 64 * M, 4, 2, false), "-");
    EXPECT_TRUE(r.owns(r.match(STRATA_COLL_BCAST, 1 * K, 2, 2, false)));
    EXPECT_FALSE(r.owns(again.match(STRATA_COLL_BCAST, 1 * K, 2, 2, false)));
}

}  // namespace
