// SPDX-License-Identifier: BSD-3-Clause
// Shared-memory segments made the strata way, and the two-process self-test.
#include "btl/shm.h"
#include "topo/selftest.h"
#include "topo/shm_segment.h"

#include <gtest/gtest.h>

#include <cstring>
#include <dirent.h>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
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
// Every entry of dir (sorted). Strata's own names are all that /dev/shm is checked
// for; another job's entries there may come and go.
std::set<std::string> entries(const char *dir, bool strata_only) {
    std::set<std::string> out;
    const std::string prefix = "strata-";
    if (DIR *d = opendir(dir)) {
        while (struct dirent *e = readdir(d)) {
            const std::string n = e->d_name;
            if (n == "." || n == "..") continue;
            if (!strata_only || n.compare(0, prefix.size(), prefix) == 0) out.insert(n);
        }
        closedir(d);
    }
    return out;
}

// The entries of where that were not there before (the names, joined).
std::string new_entries(const char *where, const std::set<std::string> &before, bool strata_only) {
    std::string got;
    for (const std::string &n : entries(where, strata_only))
        if (before.count(n) == 0) got += " " + n;
    return got;
}

// Creates an unnamed segment in dir (nullptr: /dev/shm) and has a forked child open
// it through /proc, read the parent's pattern and write its own; nothing may appear
// in the directory at any step, in either process. Returns "" or what went wrong.
std::string share_with_child(const char *dir) {
    const char *where = dir ? dir : "/dev/shm";
    const bool strata_only = dir == nullptr;
    const std::set<std::string> before = entries(where, strata_only);
    const size_t size = 3 << 16;
    int fd = -1;
    std::string how;
    int rc = shm::create_unnamed(size, &fd, dir, &how);
    if (rc != 0) return std::string("create_unnamed: ") + strerror(rc);
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_nlink != 0) return "the segment has a name (" + how + ")";
    if ((st.st_mode & 0777) != 0600 || size_t(st.st_size) != size) return "wrong mode or size (" + how + ")";
    std::string seen = new_entries(where, before, strata_only);
    if (!seen.empty()) return "after create:" + seen;
    void *p = nullptr;
    if ((rc = shm::map(fd, size, &p)) != 0) return std::string("map: ") + strerror(rc);
    auto *b = static_cast<unsigned char *>(p);
    for (size_t i = 0; i < size / 2; ++i) b[i] = (unsigned char)(i * 7 + 1);
    shm::Locator loc;
    if ((rc = shm::locate(fd, &loc)) != 0) return std::string("locate: ") + strerror(rc);

    const pid_t child = fork();
    if (child == 0) {
        // The child's exit code says which step failed (0: none).
        int cfd = -1;
        size_t got = 0;
        if (shm::open_unnamed(loc, &cfd, &got) != 0 || got != size) _exit(2);
        if (!new_entries(where, before, strata_only).empty()) _exit(3);
        void *q = nullptr;
        if (shm::map(cfd, size, &q) != 0) _exit(4);
        close(cfd);
        close(fd);  // the child's copy of the parent's: the mapping alone must keep it
        auto *c = static_cast<unsigned char *>(q);
        for (size_t i = 0; i < size / 2; ++i)
            if (c[i] != (unsigned char)(i * 7 + 1)) _exit(5);
        for (size_t i = size / 2; i < size; ++i) c[i] = (unsigned char)(i * 3 + 2);
        if (!new_entries(where, before, strata_only).empty()) _exit(6);
        _exit(0);
    }
    if (child < 0) return std::string("fork: ") + strerror(errno);
    int status = 0;
    waitpid(child, &status, 0);
    close(fd);
    seen = new_entries(where, before, strata_only);
    std::string wrong;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        wrong = "the child failed at step " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else if (!seen.empty())
        wrong = "after the child:" + seen;
    for (size_t i = size / 2; i < size && wrong.empty(); ++i)
        if (b[i] != (unsigned char)(i * 3 + 2)) wrong = "byte " + std::to_string(i) + " is not the child's";
    shm::unmap(p, size);
    return wrong;
}
}  // namespace

TEST(ShmUnnamed, SharedWithAChildAndNeverNamedInDevShm) {
    EXPECT_EQ(share_with_child(nullptr), "");
}

TEST(ShmUnnamed, SharedWithAChildAndNeverNamedInADirectory) {
    char dir[] = "/tmp/strata-shm-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    EXPECT_EQ(share_with_child(dir), "");
    EXPECT_EQ(rmdir(dir), 0);  // it stayed empty
}

TEST(ShmUnnamed, OpensOnlyTheSameFile) {
    int fd = -1, other = -1, got = -1;
    ASSERT_EQ(shm::create_unnamed(4096, &fd), 0);
    ASSERT_EQ(shm::create_unnamed(4096, &other), 0);
    shm::Locator loc;
    ASSERT_EQ(shm::locate(fd, &loc), 0);
    EXPECT_EQ(loc.pid, getpid());
    EXPECT_EQ(shm::open_unnamed(loc, &got), 0);  // this process may open its own
    close(got);

    shm::Locator wrong = loc;
    wrong.fd = other;  // another segment behind that fd: refused, not opened
    EXPECT_EQ(shm::open_unnamed(wrong, &got), ESTALE);
    EXPECT_EQ(got, -1);
    wrong = loc;
    wrong.pid = 0x3ffffff0;  // no such process (or one in another pid namespace)
    EXPECT_EQ(shm::open_unnamed(wrong, &got), ENOENT);
    close(fd);  // the creator let go before the peer opened it
    EXPECT_NE(shm::open_unnamed(loc, &got), 0);
    close(other);

    shm::refuse_proc_for_testing(true);
    ASSERT_EQ(shm::create_unnamed(4096, &fd), 0);
    ASSERT_EQ(shm::locate(fd, &loc), 0);
    EXPECT_EQ(shm::open_unnamed(loc, &got), EACCES);
    shm::refuse_proc_for_testing(false);
    close(fd);
}

TEST(ShmUnnamed, AnotherUserIsRefused) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
    int fd = -1;
    ASSERT_EQ(shm::create_unnamed(4096, &fd), 0);
    shm::Locator loc;
    ASSERT_EQ(shm::locate(fd, &loc), 0);
    const pid_t child = fork();
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(9);
        int got = -1;
        const int rc = shm::open_unnamed(loc, &got);
        _exit(rc == EACCES || rc == EPERM ? 0 : 1);
    }
    ASSERT_GT(child, 0);
    int status = 0;
    waitpid(child, &status, 0);
    close(fd);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 9) GTEST_SKIP() << "cannot become uid 65534 here";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "another user opened the segment, or failed other than EACCES/EPERM";
}

// ---- sizing: what a node can spare

TEST(ShmRoom, SpareIsHalfTheLeastKnown) {
    shm::Room r;
    EXPECT_EQ(shm::spare(r), shm::kUnknown);
    r.fs_free = 1000;
    EXPECT_EQ(shm::spare(r), 500u);
    r.memory = 600;
    EXPECT_EQ(shm::spare(r), 300u);
    r.fs_free = shm::kUnknown;
    EXPECT_EQ(shm::spare(r), 300u);
    // The case: segment 1 GiB at np 4 on one node (4 ranks x 4 GiB of slots)
    // on a 24 GiB node, /dev/shm sized to RAM.
    const uint64_t gib = uint64_t(1) << 30;
    const uint64_t want = ShmChannel::segment_bytes(4, 4 * gib);
    r.fs_free = 24 * gib;
    r.memory = 23 * gib;
    EXPECT_GT(want, shm::spare(r));
    // The default (4 MiB: 16 MiB of slots per rank) at np 8 fits on the same node...
    EXPECT_LE(ShmChannel::segment_bytes(8, 16 << 20), shm::spare(r));
    // ...but two ranks do not fit a container's 64 MiB /dev/shm with the margin.
    r.fs_free = 64 << 20;
    EXPECT_GT(ShmChannel::segment_bytes(2, 16 << 20), shm::spare(r));
    EXPECT_LE(ShmChannel::segment_bytes(2, 4 << 20), shm::spare(r));
}

TEST(ShmRoom, ParsesMemAvailable) {
    EXPECT_EQ(shm::parse_mem_available("MemTotal:       24683756 kB\nMemFree:  1 kB\n"
                                       "MemAvailable:   23938056 kB\nBuffers: 5 kB\n"),
              uint64_t(23938056) * 1024);
    EXPECT_EQ(shm::parse_mem_available("MemTotal: 10 kB\nMemFree: 1 kB\n"), shm::kUnknown);
    EXPECT_EQ(shm::parse_mem_available("MemAvailable: kB\n"), shm::kUnknown);
}

TEST(ShmRoom, ProbesThisNode) {
    const shm::Room r = shm::probe_room();
    EXPECT_NE(r.fs_free, shm::kUnknown) << "statvfs /dev/shm";
    EXPECT_NE(r.memory, shm::kUnknown) << "/proc/meminfo";
    EXPECT_GT(r.memory, 0u);
    EXPECT_EQ(shm::probe_room("/nonexistent-strata-dir").fs_free, shm::kUnknown);
}

TEST(ShmRoom, ATooLargeSegmentIsRefusedBeforeAnythingIsMade) {
    const std::set<std::string> before = entries("/dev/shm", true);
    shm::Room small;
    small.fs_free = 64 << 20;
    small.memory = 1 << 30;
    shm::set_room_for_testing(&small);
    ShmChannel ch;
    ShmWhere where;
    EXPECT_EQ(ch.create(nullptr, 2, 32 << 20, false, &where), STRATA_ERR_NOMEM);
    shm::set_room_for_testing(nullptr);
    EXPECT_EQ(where.kind, ShmWhere::kNone);
    const std::string &why = ch.error();
    EXPECT_NE(why.find(std::to_string(ShmChannel::segment_bytes(2, 32 << 20)) + " bytes"), std::string::npos) << why;
    EXPECT_NE(why.find(std::to_string(32 << 20) + " bytes"), std::string::npos) << why;  // what may be taken
    EXPECT_NE(why.find(std::to_string(64 << 20) + " bytes free in /dev/shm"), std::string::npos) << why;
    EXPECT_NE(why.find("coll_strata_segment_size"), std::string::npos) << why;
    EXPECT_EQ(new_entries("/dev/shm", before, true), "");
    // The same size fits where there is room.
    shm::Room big;
    big.fs_free = big.memory = uint64_t(1) << 40;
    shm::set_room_for_testing(&big);
    EXPECT_EQ(ch.create(nullptr, 2, 32 << 20, false, &where), STRATA_OK) << ch.error();
    shm::set_room_for_testing(nullptr);
    EXPECT_EQ(where.kind, ShmWhere::kProc);
    EXPECT_EQ(new_entries("/dev/shm", before, true), "");
}

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
    std::vector<std::string> want = {"shm.create", "shm.proc", "shm.open_map", "shm.read", "shm.unlink",
                                     "shm.write_back"};
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

TEST(Selftest, NamedSegmentWhereProcIsRefused) {
    // The importer (a forked child) inherits the refusal: the exporter then makes a
    // named segment, as strata does, and removes it once both have mapped it.
    const int before = count_strata_segments();
    topo::SelftestOptions opt;
    opt.gpu = false;
    opt.timeout_s = 30;
    std::vector<topo::CheckResult> res;
    shm::refuse_proc_for_testing(true);
    const bool ok = topo::run_selftest(opt, &res);
    shm::refuse_proc_for_testing(false);
    EXPECT_TRUE(ok);
    for (const auto &r : res) {
        if (r.name == "shm.proc") {
            EXPECT_EQ(r.status, "SKIP");
            EXPECT_NE(r.reason.find("named segment"), std::string::npos) << r.reason;
        } else {
            EXPECT_EQ(r.status, "OK") << r.name << ": " << r.reason;
        }
    }
    EXPECT_EQ(res.size(), 6u);
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
