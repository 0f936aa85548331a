// SPDX-License-Identifier: BSD-3-Clause
// test/unit/cuda_driver_test.cc - which CUDA driver this build's kernels need, and what
// drivers older and newer than that do with them.
//
// The build lowers the kernels' PTX to ISA 8.0, CUDA 12.0's (src/mem/Makefile.inc), so
// that r525+ drivers compile it; cuda_driver_needed() states that fact. Checked here:
// the release table behind it; that the embedded fatbin carries what the fact says (the
// fake driver, which reads a fatbin's entries as the real one picks them, loads it on
// exactly the needed driver and refuses it one release earlier); that the kernels run
// on a 12.4 driver; and that an older driver, or PTX newer than the driver, is refused
// in one line. The driver tests need the fake (LD_LIBRARY_PATH=test/fakecuda), whose
// FAKECUDA_DRIVER_VERSION is read on every call, and skip otherwise.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mem/classify.h"
#include "mem/cuda_domain.h"
#include "mem/cuda_kernels.h"
#include "mem/domain.h"
#include "strata.h"
#include "test/fakecuda/fakecuda.h"
#include "topo/cuda_api.h"
#include "topo/sys_probe.h"

namespace {

namespace cu = strata::topo::cu;
constexpr cu::CUresult kUnsupportedPtxVersion = 222;  // CUDA_ERROR_UNSUPPORTED_PTX_VERSION

bool fake_driver() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib != nullptr && dlsym(lib, "fakecuda_stats") != nullptr;
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// The CUDA release before v (11.8 before 12.0, 12.9 before 13.0).
int release_before(int v) { return v % 1000 != 0 ? v - 10 : v == 12000 ? 11080 : v == 13000 ? 12090 : v - 1000; }

// Sets an environment variable for one scope and puts back what was there: the suite
// may itself run under FAKECUDA_DRIVER_VERSION.
class ScopedEnv {
  public:
    ScopedEnv(const char *name, const std::string &value) : name_(name) {
        const char *old = getenv(name);
        had_ = old != nullptr;
        if (had_) old_ = old;
        setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_, old_.c_str(), 1);
        else unsetenv(name_);
    }

  private:
    const char *name_;
    bool had_;
    std::string old_;
};

// What the process writes to stderr (fd 2) while it lives, kept in a file.
class CaptureStderr {
  public:
    CaptureStderr() {
        fflush(stderr);
        saved_ = dup(2);
        char path[] = "/tmp/strata-stderr-XXXXXX";
        fd_ = mkstemp(path);
        unlink(path);
        dup2(fd_, 2);
    }
    ~CaptureStderr() { restore(); }
    std::string text() {
        restore();
        std::string out;
        char buf[4096];
        ssize_t n;
        lseek(fd_, 0, SEEK_SET);
        while ((n = read(fd_, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
        return out;
    }

  private:
    void restore() {
        if (saved_ < 0) return;
        fflush(stderr);
        dup2(saved_, 2);
        close(saved_);
        saved_ = -1;
    }
    int saved_ = -1, fd_ = -1;
};

int count_lines(const std::string &text, const char *start) {
    int n = 0;
    for (size_t at = 0; at < text.size();) {
        const size_t end = std::min(text.find('\n', at), text.size());
        if (text.compare(at, strlen(start), start) == 0) ++n;
        at = end + 1;
    }
    return n;
}

// PTX ISA versions name the CUDA release whose driver first reads them, and that
// release the driver branch NVIDIA shipped it in.
TEST(CudaReleaseTest, PtxIsaNamesTheDriverThatReadsIt) {
    EXPECT_EQ(strata::cuda_ptx_isa_driver(8, 0), 12000);
    EXPECT_EQ(strata::cuda_ptx_isa_driver(9, 0), 13000);
    EXPECT_EQ(strata::cuda_ptx_isa_driver(9, 1), 13010);
    EXPECT_EQ(strata::cuda_ptx_isa_driver(7, 8), 11080);
    EXPECT_EQ(strata::cuda_ptx_isa_driver(7, 0), 11000);
    EXPECT_EQ(strata::cuda_ptx_isa_driver(8, 4), 12040);
    EXPECT_EQ(strata::cuda_ptx_isa_driver(8, 5), 12050);
    EXPECT_EQ(strata::cuda_ptx_isa_driver(8, 6), 12080) << "12.7 was never released";
    EXPECT_EQ(strata::cuda_ptx_isa_driver(8, 8), 12090);
    EXPECT_EQ(strata::cuda_ptx_isa_driver(9, 9), 0) << "unknown ISA";
    EXPECT_STREQ(strata::cuda_driver_branch(12000), "r525");
    EXPECT_STREQ(strata::cuda_driver_branch(13000), "r580");
    EXPECT_STREQ(strata::cuda_driver_branch(12040), "r550");
    EXPECT_STREQ(strata::cuda_driver_branch(12080), "r570");
    EXPECT_STREQ(strata::cuda_driver_branch(11080), "r520");
    EXPECT_STREQ(strata::cuda_driver_branch(12070), "r560");
    EXPECT_STREQ(strata::cuda_driver_branch(10020), "");
}

// The build fact: a toolkit from CUDA 12.0 on has its PTX lowered to ISA 8.0, so the
// kernels need a 12.0 driver (r525+), and the one line says so; a CUDA 11 toolkit's 7.x
// stays. Builds without CUDA need nothing.
TEST(CudaBuildTest, KernelsNeedTheDriverOfTheirPtxIsa) {
    const int need = strata::cuda_driver_needed();
    const std::string isa = strata::cuda_kernels_ptx_isa();
    const strata::topo::BuildInfo b = strata::topo::build_info();
    if (!b.cuda) {
        EXPECT_EQ(need, 0);
        EXPECT_EQ(isa, "");
        EXPECT_EQ(strata::cuda_driver_mismatch(1000), "");
        return;
    }
    int major = 0, minor = 0;
    ASSERT_EQ(sscanf(isa.c_str(), "%d.%d", &major, &minor), 2) << isa;
    EXPECT_EQ(need, strata::cuda_ptx_isa_driver(major, minor));
    if (atoi(b.cuda_version.c_str()) >= 12) {
        EXPECT_EQ(isa, "8.0") << "toolkit " << b.cuda_version << ": the PTX keeps the toolkit's own ISA";
        EXPECT_EQ(need, 12000);
    } else {
        EXPECT_EQ(major, 7) << isa;
    }
    EXPECT_EQ(b.cuda_driver_needed, need);
    EXPECT_EQ(b.cuda_ptx_isa, isa);
    EXPECT_EQ(strata::cuda_driver_mismatch(need), "");
    EXPECT_EQ(strata::cuda_driver_mismatch(need + 990), "");
    const std::string line = strata::cuda_driver_mismatch(release_before(need));
    const std::string want = "this build's kernels need " + version_text(need) + " or newer (" +
                             strata::cuda_driver_branch(need) + "+; PTX ISA " + isa + ", built with CUDA " +
                             b.cuda_version + ")";
    EXPECT_NE(line.find("GPU path off: the CUDA driver is " + version_text(release_before(need)) + ", " + want),
              std::string::npos)
        << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << "one line";
}

// Loads `image` with the raw driver on GPU 0's primary context, the current one for
// the call; the driver's result.
cu::CUresult load(const cu::Driver &d, const void *image) {
    cu::CUdevice dev = 0;
    cu::CUcontext ctx = nullptr, before = nullptr;
    if (d.DeviceGet(&dev, 0) != cu::SUCCESS || d.DevicePrimaryCtxRetain(&ctx, dev) != cu::SUCCESS) return -1;
    d.CtxGetCurrent(&before);
    d.CtxSetCurrent(ctx);
    cu::CUmodule m = nullptr;
    const cu::CUresult rc = d.ModuleLoadData(&m, image);
    cu::CUfunction f = nullptr;
    // A module that loads has the kernels.
    const bool found = rc != cu::SUCCESS || d.ModuleGetFunction(&f, m, strata::kern::kKernels[0].name) == cu::SUCCESS;
    if (rc == cu::SUCCESS) d.ModuleUnload(m);
    d.CtxSetCurrent(before);
    d.DevicePrimaryCtxRelease(dev);
    return found ? rc : -2;
}

class CudaKernelImageTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        if ((d_ = strata::cuda_driver(&why)) == nullptr) GTEST_SKIP() << "needs a CUDA driver: " << why;
        if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (FAKECUDA_DRIVER_VERSION)";
        image_ = strata::cuda_kernels_image(&bytes_);
        if (image_ == nullptr) GTEST_SKIP() << "built without CUDA";
    }
    const cu::Driver *d_ = nullptr;
    const void *image_ = nullptr;
    size_t bytes_ = 0;
};

// The fatbin itself (not the fact about it): its entries load on the needed driver
// (on the fake's sm_90 that is the PTX, the cubins being CUDA 13's) and not one release
// earlier, where the driver says, in one line, which entries it had.
TEST_F(CudaKernelImageTest, TheFatbinLoadsFromTheNeededDriverOn) {
    const int need = strata::cuda_driver_needed();
    {
        ScopedEnv v("FAKECUDA_DRIVER_VERSION", std::to_string(need));
        EXPECT_EQ(load(*d_, image_), cu::SUCCESS) << "driver " << version_text(need);
    }
    {
        ScopedEnv v("FAKECUDA_DRIVER_VERSION", "12040");
        EXPECT_EQ(load(*d_, image_), need <= 12040 ? cu::SUCCESS : kUnsupportedPtxVersion) << "driver 12.4";
    }
    const int older = release_before(need);
    ScopedEnv v("FAKECUDA_DRIVER_VERSION", std::to_string(older));
    ScopedEnv verbose("FAKECUDA_VERBOSE", "1");
    CaptureStderr err;
    const cu::CUresult rc = load(*d_, image_);
    const std::string text = err.text();
    EXPECT_EQ(rc, kUnsupportedPtxVersion) << "driver " << version_text(older) << "\n" << text;
    EXPECT_EQ(count_lines(text, "fakecuda: cuModuleLoadData: "), 1) << text;
    EXPECT_NE(text.find("compute_75 PTX ISA " + strata::cuda_kernels_ptx_isa()), std::string::npos) << text;
}

// PTX newer than the driver is refused (the driver cannot compile it), in one line
// that names its ISA; the build's own ISA loads on the driver it needs.
TEST_F(CudaKernelImageTest, PtxNewerThanTheDriverIsRefusedInOneLine) {
    ScopedEnv v("FAKECUDA_DRIVER_VERSION", "12040");
    ScopedEnv verbose("FAKECUDA_VERBOSE", "1");
    static const char newer[] = "//\n.version 9.0\n.target sm_75\n.address_size 64\n";
    CaptureStderr err;
    const cu::CUresult rc = load(*d_, newer);
    const std::string text = err.text();
    EXPECT_EQ(rc, kUnsupportedPtxVersion) << text;
    EXPECT_EQ(count_lines(text, "fakecuda: cuModuleLoadData: driver 12.4, GPU sm_90: compute_75 PTX ISA 9.0"), 1)
        << text;
    EXPECT_EQ(count_lines(text, ""), 1) << text;
    const std::string own = "//\n.version " + strata::cuda_kernels_ptx_isa() + "\n.target sm_75\n.address_size 64\n";
    ScopedEnv needed("FAKECUDA_DRIVER_VERSION", std::to_string(strata::cuda_driver_needed()));
    EXPECT_EQ(load(*d_, own.c_str()), cu::SUCCESS);
}

// The children of the death tests below run in fresh processes: a process makes the
// domain of a GPU once. Each writes what strata said and what it did on stderr.

// On a driver older than the build needs: one line says so; the domain still copies
// both ways and refuses to prepare its kernels.
void old_driver_child() {
    CaptureStderr err;
    std::string w;
    strata::MemDomain *d = strata::cuda_domain(0, &w);
    bool copied = false;
    void *dev = nullptr, *host = nullptr;
    if (d != nullptr && d->alloc(64, &dev) == STRATA_OK && d->alloc_host(64, &host) == STRATA_OK) {
        memset(host, 7, 64);
        strata::Ticket t{};
        bool done = false;
        copied = d->copy(dev, host, 64, &t) == STRATA_OK;
        while (copied && !done) copied = d->poll(&t, &done) == STRATA_OK;
        memset(host, 0, 64);
        copied = copied && d->copy(host, dev, 64, &t) == STRATA_OK;
        for (done = false; copied && !done;) copied = d->poll(&t, &done) == STRATA_OK;
        copied = copied && static_cast<unsigned char *>(host)[63] == 7;
    }
    const bool refused = d != nullptr && d->prepare() != STRATA_OK && d->prepare() != STRATA_OK;
    const std::string said = err.text();
    const int lines = count_lines(said, "strata: ");
    fprintf(stderr, "%sdomain %s, %s, %s, %d strata line(s)\n", said.c_str(), d ? "made" : "none",
            copied ? "copies" : "no copies", refused ? "kernels refused" : "kernels prepared", lines);
    exit(copied && refused && lines == 1 ? 0 : 1);
}

// A driver one release older than the build needs (11.8 under a CUDA 12/13 build,
// which needs 12.0) refuses the kernels: the domain says so in one line, naming the
// driver it needs and its branch, and refuses to prepare (no team runs its schedules
// in GPU memory), but it still copies, which is all staging device buffers through
// the host needs.
TEST(CudaDriverVersionTest, AnOlderDriverRefusesTheKernelsInOneLineAndStillCopies) {
    std::string why;
    if (strata::cuda_driver(&why) == nullptr) GTEST_SKIP() << "needs a CUDA driver: " << why;
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (FAKECUDA_DRIVER_VERSION)";
    const int need = strata::cuda_driver_needed();
    if (need == 0) GTEST_SKIP() << "built without CUDA";
    const int older = release_before(need);
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";  // re-run this test in a new process
    ScopedEnv v("FAKECUDA_DRIVER_VERSION", std::to_string(older));
    EXPECT_EXIT(old_driver_child(), ::testing::ExitedWithCode(0),
                "strata: GPU path off: the CUDA driver is " + version_text(older) + ", this build's kernels need " +
                    version_text(need) + " or newer \\(" + strata::cuda_driver_branch(need) +
                    "\\+; (.|\n)*domain made, copies, kernels refused, 1 strata line");
}

// On a 12.4 driver the kernels load and reduce, exactly, and strata says nothing.
void driver_12_4_child() {
    CaptureStderr err;
    std::string w;
    strata::MemDomain *d = strata::cuda_domain(0, &w);
    constexpr size_t n = 1000;
    uint32_t a[n], b[n], out[n] = {};
    for (size_t i = 0; i < n; ++i) a[i] = uint32_t(i), b[i] = uint32_t(3 * i + 1);
    void *da = nullptr, *db = nullptr;
    bool ok = d != nullptr && d->prepare() == STRATA_OK && d->alloc(sizeof a, &da) == STRATA_OK &&
              d->alloc(sizeof b, &db) == STRATA_OK;
    strata::Ticket t{};
    bool done = false;
    auto wait = [&] {
        for (done = false; ok && !done;) ok = d->poll(&t, &done) == STRATA_OK;
    };
    ok = ok && d->copy(da, a, sizeof a, &t) == STRATA_OK;
    wait();
    ok = ok && d->copy(db, b, sizeof b, &t) == STRATA_OK;
    wait();
    const void *srcs[] = {da, db};
    ok = ok && d->reduce(da, srcs, 2, n, STRATA_UINT32, STRATA_OP_SUM, &t) == STRATA_OK;
    wait();
    ok = ok && d->copy(out, da, sizeof out, &t) == STRATA_OK;
    wait();
    size_t wrong = n;
    for (size_t i = 0; ok && i < n && wrong == n; ++i)
        if (out[i] != uint32_t(4 * i + 1)) wrong = i;
    const std::string said = err.text();
    const int lines = count_lines(said, "strata: ");
    fprintf(stderr, "%sdomain %s, %s, first wrong %zu, %d strata line(s)\n", said.c_str(), d ? "made" : "none",
            ok ? "reduced" : "failed", wrong, lines);
    exit(ok && wrong == n && lines == 0 ? 0 : 1);
}

TEST(CudaDriverVersionTest, A12_4DriverRunsTheKernels) {
    std::string why;
    if (strata::cuda_driver(&why) == nullptr) GTEST_SKIP() << "needs a CUDA driver: " << why;
    if (!fake_driver()) GTEST_SKIP() << "needs the fake driver (FAKECUDA_DRIVER_VERSION)";
    const int need = strata::cuda_driver_needed();
    if (need == 0) GTEST_SKIP() << "built without CUDA";
    ::testing::FLAGS_gtest_death_test_style = "threadsafe";
    ScopedEnv v("FAKECUDA_DRIVER_VERSION", "12040");
    EXPECT_EXIT(driver_12_4_child(), ::testing::ExitedWithCode(0),
                "domain made, reduced, first wrong 1000, 0 strata line");
}

}  // namespace
