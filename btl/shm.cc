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
#include <random>
#include <utility>

namespace strata {

namespace {
constexpr size_t kLine = 64;
// A flag's line also holds, in its second word, its owner's note of the highest value
// queued on its GPU stream (engine.h, queued_note).
static_assert(kLine >= 2 * sizeof(uint64_t), "a flag's line holds the flag and its queued note");
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

ShmChannel::~ShmChannel() { reset(); }

void ShmChannel::reset() {
    release();
    if (base_) {
        if (is_private_) {
            free(base_);
        } else {
            munmap(base_, bytes_);
        }
    }
    base_ = nullptr;
    bytes_ = 0;
    is_private_ = false;
    id_ = 0;
}

void ShmChannel::swap(ShmChannel &o) {
    std::swap(error_, o.error_);
    std::swap(base_, o.base_);
    std::swap(bytes_, o.bytes_);
    std::swap(is_private_, o.is_private_);
    std::swap(local_size_, o.local_size_);
    std::swap(region_bytes_, o.region_bytes_);
    std::swap(source_fd_, o.source_fd_);
    std::swap(name_, o.name_);
    std::swap(dir_, o.dir_);
    std::swap(id_, o.id_);
}

void ShmChannel::clear_control() { memset(base_, 0, ctrl_bytes(local_size_)); }

Status ShmChannel::map(int fd, size_t bytes) {
    void *p = nullptr;
    const int err = shm::map(fd, bytes, &p);
    if (err) return setup_error(STRATA_ERR_SYS, "shared memory mmap", err);
    base_ = p;
    bytes_ = bytes;
    return STRATA_OK;
}

namespace {
std::string bytes_or_unknown(uint64_t n) { return n == shm::kUnknown ? std::string("unknown") : std::to_string(n); }
}  // namespace

// The level-0 line the team prints carries this text: what was wanted, what there is,
// and the setting that decides it.
Status ShmChannel::too_big(size_t bytes, const char *dir, const shm::Room &room, uint64_t spare) {
    const std::string text = "this node's " + std::to_string(local_size_) + " ranks would take " +
                             std::to_string(bytes) + " bytes of shared memory (" + std::to_string(region_bytes_) +
                             " per rank, set by coll_strata_segment_size), more than the " + std::to_string(spare) +
                             " bytes strata may take (half of the least of " + bytes_or_unknown(room.fs_free) +
                             " bytes free in " + (dir && *dir ? dir : "/dev/shm") + " and " +
                             bytes_or_unknown(room.memory) +
                             " bytes of memory available); lower coll_strata_segment_size";
    return setup_error(STRATA_ERR_NOMEM, text.c_str());
}

Status ShmChannel::create(const char *dir, int local_size, size_t region_bytes, bool named, ShmWhere *where) {
    reset();
    error_.clear();
    *where = ShmWhere{};
    local_size_ = local_size;
    region_bytes_ = align_up(region_bytes, kPage);
    dir_ = dir ? dir : "";
    const size_t bytes = segment_bytes(local_size, region_bytes);
    if (!named) {
        const shm::Room room = shm::probe_room(dir);
        const uint64_t most = shm::spare(room);
        if (most != shm::kUnknown && bytes > most) return too_big(bytes, dir, room, most);
    }
    const char *in = dir && *dir ? dir : "/dev/shm";
    int fd = -1, err = 0;
    std::string how;
    if (!named) {
        err = shm::create_unnamed(bytes, &fd, dir, &how);
        if (err == EOPNOTSUPP) {
            log(1, "%s cannot hold unnamed files (O_TMPFILE): a named segment, removed once every local "
                   "peer has mapped it",
                in);
            named = true;
        }
    }
    std::string name;
    if (named) err = shm::create(bytes, &name, &fd, dir);
    if (err)
        return setup_error(STRATA_ERR_SYS, (std::string("cannot create a shared memory segment of ") +
                                            std::to_string(bytes) + " bytes in " + in).c_str(), err);
    if (named) {
        name_ = name;
    } else {
        source_fd_ = fd;
        log(2, "node segment of %zu bytes: %s, no name", bytes, how.c_str());
    }
    const Status s = map(fd, bytes);
    if (named) close(fd);
    if (s != STRATA_OK) {
        release();
        return s;
    }
    memset(base_, 0, ctrl_bytes(local_size));
    static thread_local std::mt19937_64 ids{std::random_device{}()};
    do id_ = ids(); while (id_ == 0);
    where->id = id_;
    if (named) {
        where->kind = ShmWhere::kName;
        snprintf(where->name, sizeof where->name, "%s", name_.c_str());
    } else {
        where->kind = ShmWhere::kProc;
        if ((err = shm::locate(source_fd_, &where->proc)) != 0) {
            reset();
            return setup_error(STRATA_ERR_SYS, "fstat of the node's shared memory segment", err);
        }
    }
    return STRATA_OK;
}

Status ShmChannel::attach(const char *dir, const ShmWhere &where, int local_size, size_t region_bytes) {
    reset();
    error_.clear();
    local_size_ = local_size;
    region_bytes_ = align_up(region_bytes, kPage);
    const size_t bytes = segment_bytes(local_size, region_bytes);
    int fd = -1;
    size_t actual = 0;
    if (where.kind == ShmWhere::kProc) {
        const int err = shm::open_unnamed(where.proc, &fd, &actual);
        if (err) {
            log(1, "cannot open the node's shared memory segment through /proc/%d/fd/%d: %s", (int)where.proc.pid,
                (int)where.proc.fd, strerror(err));
            return STRATA_ERR_UNSUPPORTED;
        }
    } else {
        const std::string name(where.name, strnlen(where.name, sizeof where.name));
        const int err = shm::open(name, &fd, &actual, dir);
        if (err) return setup_error(STRATA_ERR_SYS, "cannot open the node's shared memory segment", err);
    }
    if (actual != bytes) {
        close(fd);
        return setup_error(STRATA_ERR_SYS, "the node's shared memory segment has an unexpected size");
    }
    const Status s = map(fd, bytes);
    close(fd);  // the mapping keeps the segment
    if (s == STRATA_OK) id_ = where.id;
    return s;
}

Status ShmChannel::make_private(size_t region_bytes) {
    reset();
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

void ShmChannel::release() {
    if (source_fd_ >= 0) {
        close(source_fd_);
        source_fd_ = -1;
    }
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
