// SPDX-License-Identifier: BSD-3-Clause
// shm_segment.cc - see shm_segment.h for the contract.
#include "topo/shm_segment.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace strata {
namespace shm {

namespace {

bool use_dir(const char *dir) { return dir != nullptr && dir[0] != '\0'; }

int open_raw(const std::string &name, int flags, const char *dir) {
    if (use_dir(dir)) return ::open(path_of(name, dir).c_str(), flags | O_CLOEXEC, 0600);
    return ::shm_open(name.c_str(), flags, 0600);  // shm_open sets O_CLOEXEC itself
}

int unlink_raw(const std::string &name, const char *dir) {
    if (use_dir(dir)) return ::unlink(path_of(name, dir).c_str());
    return ::shm_unlink(name.c_str());
}

// Reserves the pages now. tmpfs supports fallocate; file systems that do not
// (EOPNOTSUPP/EINVAL) get ftruncate only.
int size_segment(int fd, size_t size) {
    int rc = ::posix_fallocate(fd, 0, (off_t)size);
    if (rc == 0) return 0;
    if (rc != EOPNOTSUPP && rc != EINVAL) return rc;
    return ::ftruncate(fd, (off_t)size) == 0 ? 0 : errno;
}

std::atomic<bool> proc_refused{false};
std::atomic<bool> room_fixed{false};
Room fixed_room;  // set before room_fixed, read after

// A number in a one-line file ("max": no limit); kUnknown when it cannot be read.
uint64_t read_number(const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return kUnknown;
    char buf[64] = {0};
    const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
    std::fclose(f);
    if (!got || buf[0] < '0' || buf[0] > '9') return kUnknown;
    return std::strtoull(buf, nullptr, 10);
}

// What this process's memory cgroup and its ancestors still allow (limit - usage, the
// least of them): tmpfs pages are charged to the cgroup, whose limit MemAvailable does
// not show. v2 (memory.max, memory.current) or v1 (the memory controller's
// limit_in_bytes, usage_in_bytes) at their usual mount points; kUnknown without either.
uint64_t cgroup_headroom() {
    FILE *f = std::fopen("/proc/self/cgroup", "r");
    if (f == nullptr) return kUnknown;
    uint64_t room = kUnknown;
    char line[4096];
    while (std::fgets(line, sizeof line, f) != nullptr) {
        char *ctl = std::strchr(line, ':');
        char *path = ctl ? std::strchr(ctl + 1, ':') : nullptr;
        if (path == nullptr) continue;
        *path++ = '\0';
        ++ctl;
        path[std::strcspn(path, "\n")] = '\0';
        std::string base, limit_file, usage_file;
        if (*ctl == '\0') {
            base = "/sys/fs/cgroup", limit_file = "/memory.max", usage_file = "/memory.current";
        } else if (std::strstr((std::string(",") + ctl + ",").c_str(), ",memory,") != nullptr) {
            base = "/sys/fs/cgroup/memory", limit_file = "/memory.limit_in_bytes", usage_file = "/memory.usage_in_bytes";
        } else {
            continue;
        }
        // From the process's cgroup up to the root; levels that are not there (a
        // namespaced view) are skipped.
        std::string dir = base + (std::strcmp(path, "/") == 0 ? "" : path);
        for (;;) {
            const uint64_t limit = read_number(dir + limit_file), usage = read_number(dir + usage_file);
            if (limit != kUnknown && usage != kUnknown) room = std::min(room, limit > usage ? limit - usage : 0);
            if (dir.size() <= base.size()) break;
            dir.erase(dir.rfind('/'));
        }
    }
    std::fclose(f);
    return room;
}

}  // namespace

int make_name(std::string *name) {
    unsigned char rnd[16];
    size_t got = 0;
    while (got < sizeof rnd) {
        ssize_t n = ::getrandom(rnd + got, sizeof rnd - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        got += (size_t)n;
    }
    char buf[80];
    int len = std::snprintf(buf, sizeof buf, "/strata-%u-", (unsigned)::getuid());
    for (unsigned char b : rnd) len += std::snprintf(buf + len, sizeof buf - len, "%02x", b);
    name->assign(buf, (size_t)len);
    return 0;
}

std::string path_of(const std::string &name, const char *dir) {
    std::string base = use_dir(dir) ? std::string(dir) : std::string("/dev/shm");
    return base + name;  // name starts with '/'
}

int create(size_t size, std::string *name, int *fd, const char *dir) {
    *fd = -1;
    if (size == 0) return EINVAL;
    for (int attempt = 0; attempt < 4; ++attempt) {
        std::string candidate;
        int rc = make_name(&candidate);
        if (rc != 0) return rc;
        int f = open_raw(candidate, O_RDWR | O_CREAT | O_EXCL, dir);
        if (f < 0) {
            if (errno == EEXIST) continue;
            return errno;
        }
        // The umask may have narrowed 0600; it can never widen it, but be explicit.
        if (::fchmod(f, 0600) != 0 || (rc = size_segment(f, size)) != 0) {
            int err = rc != 0 ? rc : errno;
            ::close(f);
            unlink_raw(candidate, dir);
            return err;
        }
        *name = candidate;
        *fd = f;
        return 0;
    }
    return EEXIST;
}

int open(const std::string &name, int *fd, size_t *size, const char *dir) {
    *fd = -1;
    int f = open_raw(name, O_RDWR, dir);
    if (f < 0) return errno;
    if (size != nullptr) {
        struct stat st;
        if (::fstat(f, &st) != 0) {
            int err = errno;
            ::close(f);
            return err;
        }
        *size = (size_t)st.st_size;
    }
    *fd = f;
    return 0;
}

int unlink(const std::string &name, const char *dir) {
    return unlink_raw(name, dir) == 0 ? 0 : errno;
}

int create_unnamed(size_t size, int *fd, const char *dir, std::string *how) {
    *fd = -1;
    if (size == 0) return EINVAL;
    const std::string where = use_dir(dir) ? std::string(dir) : std::string("/dev/shm");
    int f = ::open(where.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    std::string made = "O_TMPFILE in " + where;
    if (f < 0) {
        const int err = errno;
        // EISDIR: a kernel without O_TMPFILE; EOPNOTSUPP: a file system without it.
        const bool unsupported = err == EOPNOTSUPP || err == EISDIR;
        if (use_dir(dir)) return unsupported ? EOPNOTSUPP : err;
        f = ::memfd_create("strata", MFD_CLOEXEC);
        if (f < 0) return err;
        made = "memfd";
    }
    int rc = 0;
    if (::fchmod(f, 0600) != 0) rc = errno;
    if (rc == 0) rc = size_segment(f, size);
    if (rc != 0) {
        ::close(f);  // its pages go with it: there is no name to remove
        return rc;
    }
    *fd = f;
    if (how != nullptr) *how = made;
    return 0;
}

int locate(int fd, Locator *where) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return errno;
    where->pid = (int32_t)::getpid();
    where->fd = fd;
    where->dev = (uint64_t)st.st_dev;
    where->ino = (uint64_t)st.st_ino;
    return 0;
}

int open_unnamed(const Locator &where, int *fd, size_t *size) {
    *fd = -1;
    if (proc_refused.load()) return EACCES;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)where.pid, (int)where.fd);
    // Which file the link leads to, before opening it: opening a stranger's file
    // (a device, a FIFO) could have effects of its own.
    struct stat st;
    if (::stat(path, &st) != 0) return errno;
    if ((uint64_t)st.st_dev != where.dev || (uint64_t)st.st_ino != where.ino || !S_ISREG(st.st_mode)) return ESTALE;
    const int f = ::open(path, O_RDWR | O_CLOEXEC);
    if (f < 0) return errno;
    // The fd may have been closed and reused between the two looks.
    if (::fstat(f, &st) != 0 || (uint64_t)st.st_dev != where.dev || (uint64_t)st.st_ino != where.ino) {
        ::close(f);
        return ESTALE;
    }
    if (size != nullptr) *size = (size_t)st.st_size;
    *fd = f;
    return 0;
}

void refuse_proc_for_testing(bool refuse) { proc_refused.store(refuse); }

void set_room_for_testing(const Room *room) {
    room_fixed.store(false);
    if (room == nullptr) return;
    fixed_room = *room;
    room_fixed.store(true);
}

Room probe_room(const char *dir) {
    if (room_fixed.load()) return fixed_room;
    Room room;
    struct statvfs vfs;
    if (::statvfs(use_dir(dir) ? dir : "/dev/shm", &vfs) == 0) room.fs_free = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (FILE *f = std::fopen("/proc/meminfo", "r")) {
        std::string text;
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
        std::fclose(f);
        room.memory = parse_mem_available(text);
    }
    room.memory = std::min(room.memory, cgroup_headroom());
    return room;
}

uint64_t spare(const Room &room) {
    const uint64_t least = std::min(room.fs_free, room.memory);
    return least == kUnknown ? kUnknown : least / 2;
}

uint64_t parse_mem_available(const std::string &meminfo) {
    const std::string key = "MemAvailable:";
    size_t at = meminfo.find(key);
    if (at == std::string::npos || (at != 0 && meminfo[at - 1] != '\n')) return kUnknown;
    const char *p = meminfo.c_str() + at + key.size();
    char *end = nullptr;
    const unsigned long long kib = std::strtoull(p, &end, 10);
    if (end == p) return kUnknown;
    return (uint64_t)kib * 1024;  // /proc/meminfo counts in kB (KiB)
}

int map(int fd, size_t size, void **addr) {
    *addr = nullptr;
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return errno;
    *addr = p;
    return 0;
}

int unmap(void *addr, size_t size) {
    return ::munmap(addr, size) == 0 ? 0 : errno;
}

}  // namespace shm
}  // namespace strata
