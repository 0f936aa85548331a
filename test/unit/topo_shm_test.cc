// SPDX-License-Identifier: BSD-3-Clause
// Shared-memory segments made the strata way, and the two-process self-test.
#include "topo/selftest.h"
#include "topo/shm_segment.h"

#include <gtest/gtest.h>

#include <cstring>
#include <dirent.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace strata;

namespace {
int count_strata_segments() {
    int n = 0;
    std::string prefix = "strata-" + std::to_string(getuid()) + "-";
    DIR *d = opendir("/dev/shm");
    if (d == nullptr) return -1;
    while (struct dirent *e = readdir(d))
        if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) ++n;
    closedir(d);
    return n;
}
}  // namespace

TEST(ShmSegment, NamesAreFreshAndWellFormed) {
    std::string a, b;
    ASSERT_EQ(shm::make_name(&a), 0);
    ASSERT_EQ(shm::make_name(&b), 0);
    EXPECT_NE(a, b);
    std::string prefix = "/strata-" + std::to_string(getuid()) + "-";
    ASSERT_EQ(a.compare(0, prefix.size(), prefix), 0) << a;
    EXPECT_EQ(a.size(), prefix.size() + 32);
    EXPECT_EQ(a.find_first_not_of("0123456789abcdef", prefix.size()), std::string::npos);
}

TEST(ShmSegment, CreateOpenUnlink) {
    const size_t size = 1 << 16;
    std::string name;
    int fd = -1;
    ASSERT_EQ(shm::create(size, &name, &fd), 0);
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ((size_t)st.st_size, size);
    void *p = nullptr;
    ASSERT_EQ(shm::map(fd, size, &p), 0);
    std::memset(p, 0x5a, size);

    int fd2 = -1;
    size_t got = 0;
    ASSERT_EQ(shm::open(name, &fd2, &got), 0);
    EXPECT_EQ(got, size);
    void *q = nullptr;
    ASSERT_EQ(shm::map(fd2, size, &q), 0);
    EXPECT_EQ(static_cast<unsigned char *>(q)[size - 1], 0x5a);

    EXPECT_EQ(shm::unlink(name), 0);
    EXPECT_NE(access(shm::path_of(name).c_str(), F_OK), 0);
    EXPECT_EQ(shm::unlink(name), ENOENT);
    int fd3 = -1;
    EXPECT_EQ(shm::open(name, &fd3), ENOENT);
    // Mappings outlive the name.
    static_cast<unsigned char *>(p)[0] = 7;
    EXPECT_EQ(static_cast<unsigned char *>(q)[0], 7);
    shm::unmap(p, size);
    shm::unmap(q, size);
    close(fd);
    close(fd2);
}

TEST(ShmSegment, ZeroSizeIsRefusedAndLeavesNothing) {
    int before = count_strata_segments();
    std::string name;
    int fd = 123;
    EXPECT_EQ(shm::create(0, &name, &fd), EINVAL);
    EXPECT_EQ(fd, -1);
    EXPECT_EQ(count_strata_segments(), before);
}

TEST(ShmSegment, DirectoryBacked) {
    char dir[] = "/tmp/strata-shm-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    std::string name;
    int fd = -1;
    ASSERT_EQ(shm::create(4096, &name, &fd, dir), 0);
    EXPECT_EQ(access(shm::path_of(name, dir).c_str(), F_OK), 0);
    int fd2 = -1;
    EXPECT_EQ(shm::open(name, &fd2, nullptr, dir), 0);
    EXPECT_EQ(shm::unlink(name, dir), 0);
    close(fd);
    close(fd2);
    EXPECT_EQ(rmdir(dir), 0);  // empty: nothing left behind
}

TEST(Selftest, SharedMemoryAcrossProcesses) {
    int before = count_strata_segments();
    topo::SelftestOptions opt;
    opt.gpu = false;
    opt.timeout_s = 30;
    std::vector<topo::CheckResult> res;
    EXPECT_TRUE(topo::run_selftest(opt, &res));
    std::vector<std::string> want = {"shm.create", "shm.open_map", "shm.read", "shm.unlink", "shm.write_back"};
    for (const std::string &w : want) {
        bool seen = false;
        for (const auto &r : res)
            if (r.name == w) {
                seen = true;
                EXPECT_EQ(r.status, "OK") << w << ": " << r.reason;
                EXPECT_GE(r.ms, 0.0);
            }
        EXPECT_TRUE(seen) << w;
    }
    EXPECT_EQ(count_strata_segments(), before) << "a segment was left in /dev/shm";
}

TEST(Selftest, ReportsFailureInsteadOfHanging) {
    // A directory that does not exist: create fails in the exporter, the
    // importer must not wait forever and the failure carries a reason.
    topo::SelftestOptions opt;
    opt.gpu = false;
    opt.timeout_s = 30;
    opt.shm_dir = "/nonexistent-strata-dir";
    std::vector<topo::CheckResult> res;
    EXPECT_FALSE(topo::run_selftest(opt, &res));
    ASSERT_FALSE(res.empty());
    EXPECT_EQ(res[0].name, "shm.create");
    EXPECT_EQ(res[0].status, "FAIL");
    EXPECT_NE(res[0].reason.find("No such file"), std::string::npos) << res[0].reason;
}

TEST(Selftest, GpuChecksSkipOrPass) {
    topo::SelftestOptions opt;
    opt.shm = false;
    opt.gpu_bytes = 4 << 20;
    std::vector<topo::CheckResult> res;
    bool ok = topo::run_selftest(opt, &res);
    ASSERT_FALSE(res.empty());
    if (res[0].status == "SKIP") {
        EXPECT_EQ(res[0].name, "gpu");
        GTEST_SKIP() << "no GPU: " << res[0].reason;
    }
    for (const auto &r : res) EXPECT_NE(r.status, "FAIL") << r.name << ": " << r.reason;
    EXPECT_TRUE(ok);
}
