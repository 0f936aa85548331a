// SPDX-License-Identifier: BSD-3-Clause
// btl/shm.cc - shared-memory segments for the intra-node channel.
#include "btl/shm.h"

#include "topo/shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata {

namespace {
constexpr size_t kLine = 64;
constexpr size_t kPage = 4096;
constexpr size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
size_t ctrl_bytes(int local_size) {
    return align_up(size_t(local_size) * (kFlagCount * kLine + ShmChannel::kMailboxBytes), kPage);
}
}  // namespace

// Setup failures are expected conditions (a full /dev/shm): they are reported
// once by the team, with this text, rather than logged here.
Status ShmChannel::setup_error(Status status, const char *what, int err) {
    error_ = what;
    if (err) error_ += std::string(": ") + strerror(err);
    log(1, "%s", error_.c_str());
    return status;
}

size_t ShmChannel::segment_bytes(int local_size, size_t region_bytes) {
    return ctrl_bytes(local_size) + size_t(local_size) * align_up(region_bytes, kPage);
}

ShmChannel::~ShmChannel() {
    unlink();
    if (base_) {
        if (is_private_) {
            free(base_);
        } else {
            munmap(base_, bytes_);
        }
    }
}

Status ShmChannel::map(int fd, size_t bytes) {
    void *p = nullptr;
    const int err = shm::map(fd, bytes, &p);
    close(fd);
    if (err) return setup_error(STRATA_ERR_SYS, "shared memory mmap", err);
    base_ = p;
    bytes_ = bytes;
    return STRATA_OK;
}

Status ShmChannel::create(const char *dir, int local_size, size_t region_bytes, std::string *name) {
    local_size_ = local_size;
    region_bytes_ = align_up(region_bytes, kPage);
    dir_ = dir ? dir : "";
    const size_t bytes = segment_bytes(local_size, region_bytes);
    int fd = -1;
    const int err = shm::create(bytes, name, &fd, dir);
    if (err) return setup_error(STRATA_ERR_SYS, (std::string("cannot create a shared memory segment of ") +
                                                std::to_string(bytes) + " bytes in " + (dir && *dir ? dir : "/dev/shm")).c_str(), err);
    name_ = *name;
    Status s = map(fd, bytes);
    if (s != STRATA_OK) {
        unlink();
        return s;
    }
    memset(base_, 0, ctrl_bytes(local_size));
    return STRATA_OK;
}

Status ShmChannel::attach(const char *dir, const std::string &name, int local_size,
                          size_t region_bytes) {
    local_size_ = local_size;
    region_bytes_ = align_up(region_bytes, kPage);
    const size_t bytes = segment_bytes(local_size, region_bytes);
    int fd = -1;
    size_t actual = 0;
    const int err = shm::open(name, &fd, &actual, dir);
    if (err) return setup_error(STRATA_ERR_SYS, "cannot open the node's shared memory segment", err);
    if (actual != bytes) {
        close(fd);
        return setup_error(STRATA_ERR_SYS, "the node's shared memory segment has an unexpected size");
    }
    return map(fd, bytes);
}

Status ShmChannel::make_private(size_t region_bytes) {
    local_size_ = 1;
    region_bytes_ = align_up(region_bytes, kPage);
    const size_t bytes = segment_bytes(1, region_bytes);
    void *p = nullptr;
    if (posix_memalign(&p, kPage, bytes) != 0) return setup_error(STRATA_ERR_NOMEM, "cannot allocate the private region", ENOMEM);
    memset(p, 0, ctrl_bytes(1));
    base_ = p;
    bytes_ = bytes;
    is_private_ = true;
    return STRATA_OK;
}

void ShmChannel::unlink() {
    if (name_.empty()) return;
    shm::unlink(name_, dir_.empty() ? nullptr : dir_.c_str());
    name_.clear();
}

uint64_t *ShmChannel::flag(int local, int which) const {
    char *p = static_cast<char *>(base_) + (size_t(local) * kFlagCount + size_t(which)) * kLine;
    return reinterpret_cast<uint64_t *>(p);
}

char *ShmChannel::mailbox(int local) const {
    return static_cast<char *>(base_) + size_t(local_size_) * kFlagCount * kLine + size_t(local) * kMailboxBytes;
}

char *ShmChannel::region(int local) const {
    return static_cast<char *>(base_) + ctrl_bytes(local_size_) + size_t(local) * region_bytes_;
}

}  // namespace strata
