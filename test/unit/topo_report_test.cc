// SPDX-License-Identifier: BSD-3-Clause
// strata-info's report: build facts, parsers of tool output, JSON round trip.
#include "topo/info_report.h"
#include "topo/json_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <map>
#include <memory>
#include <string>

using namespace strata::topo;

namespace {

// Just enough JSON to read our own output back: a value tree, and a parser
// that rejects anything malformed (trailing commas, bad escapes, junk).
struct J {
    enum Kind { NUL, BOOL, NUM, STR, ARR, OBJ } kind = NUL;
    bool b = false;
    double n = 0;
    std::string s;
    std::vector<J> a;
    std::map<std::string, J> o;
    const J &operator[](const std::string &k) const {
        static J none;
        auto it = o.find(k);
        return it == o.end() ? none : it->second;
    }
    bool has(const std::string &k) const { return o.count(k) != 0; }
};

struct Parser {
    const std::string &t;
    size_t i = 0;
    bool ok = true;
    explicit Parser(const std::string &text) : t(text) {}
    void ws() { while (i < t.size() && isspace((unsigned char)t[i])) ++i; }
    bool lit(const char *w) {
        size_t n = strlen(w);
        if (t.compare(i, n, w) != 0) return false;
        i += n;
        return true;
    }
    std::string str() {
        std::string out;
        if (t[i] != '"') { ok = false; return out; }
        for (++i; i < t.size() && t[i] != '"'; ++i) {
            if ((unsigned char)t[i] < 0x20) { ok = false; return out; }
            if (t[i] != '\\') { out += t[i]; continue; }
            char e = t[++i];
            if (e == 'n') out += '\n';
            else if (e == 't') out += '\t';
            else if (e == 'r') out += '\r';
            else if (e == '"' || e == '\\' || e == '/') out += e;
            else if (e == 'u' && i + 4 < t.size()) { out += (char)std::stoi(t.substr(i + 1, 4), nullptr, 16); i += 4; }
            else { ok = false; return out; }
        }
        if (i >= t.size()) ok = false;
        ++i;
        return out;
    }
    J value() {
        J v;
        ws();
        if (i >= t.size()) { ok = false; return v; }
        char c = t[i];
        if (c == '{') {
            v.kind = J::OBJ;
            ++i; ws();
            if (t[i] == '}') { ++i; return v; }
            for (;;) {
                ws();
                std::string k = str();
                ws();
                if (!ok || t[i] != ':') { ok = false; return v; }
                ++i;
                v.o[k] = value();
                ws();
                if (t[i] == ',') { ++i; continue; }
                if (t[i] == '}') { ++i; return v; }
                ok = false;
                return v;
            }
        }
        if (c == '[') {
            v.kind = J::ARR;
            ++i; ws();
            if (t[i] == ']') { ++i; return v; }
            for (;;) {
                v.a.push_back(value());
                ws();
                if (t[i] == ',') { ++i; continue; }
                if (t[i] == ']') { ++i; return v; }
                ok = false;
                return v;
            }
        }
        if (c == '"') { v.kind = J::STR; v.s = str(); return v; }
        if (lit("true")) { v.kind = J::BOOL; v.b = true; return v; }
        if (lit("false")) { v.kind = J::BOOL; return v; }
        if (lit("null")) return v;
        size_t used = 0;
        try { v.n = std::stod(t.substr(i), &used); } catch (...) { ok = false; }
        if (used == 0) ok = false;
        v.kind = J::NUM;
        i += used;
        return v;
    }
};

bool parse(const std::string &text, J *out) {
    Parser p(text);
    *out = p.value();
    p.ws();
    return p.ok && p.i == text.size();
}

Report sample() {
    Report r;
    r.build = build_info();
    r.ompi.found = true;
    r.ompi.version = "4.1.4";
    r.ompi.cuda_aware = 0;
    r.hwloc_ok = true;
    r.node.cpu = {2, 2, 64, 128, {{0, 1ull << 40}, {1, 1ull << 40}}};
    r.cuda.driver_found = true;
    r.cuda.driver_version = 12040;
    r.nvml.found = true;
    for (int g = 0; g < 2; ++g) {
        GpuInfo gi;
        gi.index = g;
        gi.name = "NVIDIA H200 \"test\"";
        gi.memory_bytes = 150000000000ull;
        gi.cc_major = 9;
        gi.pci.bus = 0x10 + g;
        gi.numa_node = g;
        gi.nearest_nic = g;
        gi.nic_distance = 2;
        gi.nvswitch_links = 18;
        r.node.gpus.push_back(gi);
    }
    r.node.peer_access = {{1, 1}, {1, 1}};
    r.node.nvlinks = {{0, 0}, {0, 0}};
    NicInfo n0, n1;
    n0.name = "mlx5_0"; n0.kind = "openfabrics"; n0.has_pci = true; n0.aliases = {"ib0"};
    n1.name = "eth\\1"; n1.kind = "network";
    r.node.nics = {n0, n1};
    r.ranks_per_node = 4;
    r.rails = assign_rails(r.node, 4);
    r.ucx.found = true;
    r.ucx.version = "1.13.1";
    r.ucx.transports = {"tcp/eth0", "cuda_ipc/cuda"};
    r.ucx.cuda_memory = true;
    r.shm.ok = true;
    r.shm.total_bytes = 1ull << 34;
    r.has_selftest = true;
    r.selftest = {{"shm.create", "OK", 0.25, ""}, {"gpu0.ipc_event", "FAIL", 3.5, "line\nbreak\ttab"}};
    return r;
}

}  // namespace

TEST(JsonWriter, EscapesAndCommas) {
    JsonWriter w;
    w.begin_object().kv("a", "q\"b\\s\n\x01").key("l").begin_array().num((int64_t)1).null().boolean(false)
        .begin_object().end_object().end_array().kv_or_null("e", "").end_object();
    EXPECT_EQ(w.text(), "{\"a\":\"q\\\"b\\\\s\\n\\u0001\",\"l\":[1,null,false,{}],\"e\":null}");
    J j;
    ASSERT_TRUE(parse(w.text(), &j));
    EXPECT_EQ(j["a"].s, "q\"b\\s\n\x01");
}

TEST(Report, JsonRoundTripFollowsSchema) {
    Report r = sample();
    J j;
    std::string text = render_json(r);
    ASSERT_TRUE(parse(text, &j)) << text;
    ASSERT_EQ(j.kind, J::OBJ);
    EXPECT_EQ(j["schema"].s, "strata-info/1");
    for (const char *k : {"build", "open_mpi", "cpu", "cuda", "gpus", "peer_access", "nvlinks", "nics", "rails",
                          "ucx", "gpudirect_rdma", "shm", "selftest"})
        EXPECT_TRUE(j.has(k)) << k;
    EXPECT_EQ(j["build"]["strata_version"].s, STRATA_VERSION_STRING);
    EXPECT_EQ(j["build"]["cuda"].kind, J::BOOL);
    EXPECT_EQ(j["open_mpi"]["cuda_aware"].kind, J::BOOL);
    EXPECT_FALSE(j["open_mpi"]["cuda_aware"].b);
    EXPECT_EQ(j["cpu"]["pus"].n, 128);
    EXPECT_EQ(j["cpu"]["numa"].a.size(), 2u);
    EXPECT_EQ(j["cuda"]["driver_version"].s, "12.4");
    ASSERT_EQ(j["gpus"].a.size(), 2u);
    const J &g1 = j["gpus"].a[1];
    EXPECT_EQ(g1["name"].s, "NVIDIA H200 \"test\"");
    EXPECT_EQ(g1["compute_capability"].s, "9.0");
    EXPECT_EQ(g1["pci_bus_id"].s, "0000:11:00.0");
    EXPECT_EQ(g1["memory_bytes"].n, 150000000000.0);
    EXPECT_EQ(g1["nearest_nic"].s, "eth\\1");
    EXPECT_EQ(j["peer_access"].a[0].a[1].n, 1);
    EXPECT_EQ(j["nics"].a[0]["aliases"].a[0].s, "ib0");
    EXPECT_EQ(j["nics"].a[1]["pci_bus_id"].kind, J::NUL);
    EXPECT_EQ(j["rails"]["ranks_per_node"].n, 4);
    ASSERT_EQ(j["rails"]["map"].a.size(), 4u);
    EXPECT_EQ(j["rails"]["map"].a[3]["gpu"].n, 1);
    EXPECT_EQ(j["rails"]["map"].a[2]["nic"].s, "mlx5_0");
    EXPECT_TRUE(j["ucx"]["cuda_memory"].b);
    EXPECT_EQ(j["selftest"].a[1]["status"].s, "FAIL");
    EXPECT_EQ(j["selftest"].a[1]["reason"].s, "line\nbreak\ttab");
}

TEST(Report, TableSaysWhatIsMissing) {
    Report r;
    r.build = build_info();
    r.cuda.note = "no CUDA driver (test)";
    r.ucx.note = "no UCX (test)";
    r.ompi.note = "no Open MPI (test)";
    r.shm.note = "/dev/shm: missing (test)";
    r.rails = assign_rails(r.node, 1);
    std::string t = render_table(r);
    for (const char *s : {"no CUDA driver (test)", "no UCX (test)", "no Open MPI (test)", "/dev/shm: missing (test)"})
        EXPECT_NE(t.find(s), std::string::npos) << s;
    J j;
    EXPECT_TRUE(parse(render_json(r), &j));
    EXPECT_FALSE(j.has("selftest"));
    EXPECT_EQ(j["open_mpi"]["cuda_aware"].kind, J::NUL);
}

TEST(BuildFacts, VersionsPresent) {
    BuildInfo b = build_info();
    EXPECT_EQ(b.strata_version, STRATA_VERSION_STRING);
    EXPECT_FALSE(b.hwloc_compile.empty());
    EXPECT_FALSE(b.hwloc_runtime.empty());
#ifdef STRATA_HAVE_CUDA
    EXPECT_TRUE(b.cuda);
    EXPECT_FALSE(b.cuda_version.empty());
#else
    EXPECT_FALSE(b.cuda);
#endif
    EXPECT_EQ(cuda_version_string(12040), "12.4");
    EXPECT_EQ(cuda_version_string(13000), "13.0");
    EXPECT_EQ(cuda_version_string(0), "");
}

// The driver the build's kernels need is the build's fact (the driver that reads their
// PTX's ISA), not the toolkit's release: a CUDA 13 build whose PTX is ISA 8.0 needs
// 12.0 (r525+), so a 12.4 driver gets no warning and an 11.8 one does.
TEST(Report, SaysWhichDriverTheKernelsNeed) {
    Report r = sample();
    r.build.cuda = true;
    r.build.cuda_version = "13.0";
    r.build.cuda_ptx_isa = "8.0";
    r.build.cuda_driver_needed = 12000;
    std::string t = render_table(r);
    EXPECT_NE(t.find("yes (toolkit 13.0, PTX ISA 8.0; kernels need a CUDA driver >= 12.0, r525+)"), std::string::npos)
        << t;
    EXPECT_EQ(t.find("older than this build needs"), std::string::npos) << t;
    J j;
    ASSERT_TRUE(parse(render_json(r), &j));
    EXPECT_EQ(j["cuda"]["driver_needed"].s, "12.0");
    EXPECT_EQ(j["build"]["cuda_ptx_isa"].s, "8.0");
    r.cuda.driver_version = 11080;
    t = render_table(r);
    EXPECT_NE(t.find("driver 11.8 is older than this build needs (>= 12.0, r525+): strata's GPU path is off"),
              std::string::npos)
        << t;
    r.build.cuda_ptx_isa = "9.0";
    r.build.cuda_driver_needed = 13000;
    r.cuda.driver_version = 12040;
    t = render_table(r);
    EXPECT_NE(t.find("driver 12.4 is older than this build needs (>= 13.0, r580+)"), std::string::npos) << t;
}

TEST(Parsers, OmpiInfo) {
    OmpiInfo o;
    parse_ompi_info("ompi:version:full:4.1.4\nmca:mpi:base:param:mpi_built_with_cuda_support:value:true\n"
                    "mca:mpi:base:param:mpi_built_with_cuda_support:enumerator:value:0:false\n", &o);
    EXPECT_TRUE(o.found);
    EXPECT_EQ(o.version, "4.1.4");
    EXPECT_EQ(o.cuda_aware, 1);
    OmpiInfo none;
    parse_ompi_info("", &none);
    EXPECT_FALSE(none.found);
    EXPECT_EQ(none.cuda_aware, -1);
    OmpiInfo missing = probe_ompi("/nonexistent/ompi_info");
    EXPECT_FALSE(missing.found);
    EXPECT_FALSE(missing.note.empty());
}

TEST(Parsers, UcxInfoD) {
    const char *text =
        "# Memory domain: posix\n#     Component: posix\n#     memory types: host (access,alloc,cache)\n"
        "#      Transport: posix\n#         Device: memory\n"
        "# Memory domain: cuda_cpy\n#     memory types: host (reg), cuda (access,alloc,reg,cache)\n"
        "#      Transport: cuda_copy\n#         Device: cuda\n";
    bool cuda = false;
    auto tls = parse_ucx_info_d(text, &cuda);
    ASSERT_EQ(tls.size(), 2u);
    EXPECT_EQ(tls[0], "posix/memory");
    EXPECT_EQ(tls[1], "cuda_copy/cuda");
    EXPECT_TRUE(cuda);
}

TEST(Probes, GdrModuleFromProcModules) {
    char path[] = "/tmp/strata-modules-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    FILE *f = fdopen(fd, "w");
    std::fputs("nvidia_uvm 1 0 - Live 0x0\nnvidia_peermem 16384 0 - Live 0x0\n", f);
    std::fclose(f);
    GdrInfo g = probe_gdr(path);
    EXPECT_TRUE(g.loaded);
    EXPECT_EQ(g.module, "nvidia_peermem");
    std::remove(path);
    EXPECT_FALSE(probe_gdr("/nonexistent").loaded);
}

TEST(Probes, ShmSpaceAndMissingPath) {
    ShmSpace s = probe_shm("/tmp");
    EXPECT_TRUE(s.ok);
    EXPECT_GT(s.total_bytes, 0u);
    ShmSpace bad = probe_shm("/nonexistent-strata");
    EXPECT_FALSE(bad.ok);
    EXPECT_FALSE(bad.note.empty());
}

TEST(Report, LiveGatherNeverCrashes) {
    Report r;
    gather_report(&r, 0);
    EXPECT_GE(r.ranks_per_node, 1);
    EXPECT_EQ(r.rails.size(), (size_t)r.ranks_per_node);
    J j;
    EXPECT_TRUE(parse(render_json(r), &j));
    EXPECT_FALSE(render_table(r).empty());
}

// Own main, so the test links whether or not GTEST_LIBS brings gtest_main
// (an archive's main is not pulled in when one is already defined).
int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
