// SPDX-License-Identifier: BSD-3-Clause
// shm_segment.cc - see shm_segment.h for the contract.
#include "topo/shm_segment.h"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
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
