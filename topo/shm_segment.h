/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_segment.h - make a shared-memory segment the strata way.
 *
 * One implementation for the whole project (btl/shm.cc and strata-info's
 * self-test both use it), so that every segment strata creates is:
 *   - unnamed where the system allows it (create_unnamed): a file that never has
 *     a name in any directory, which peers open through the creator's
 *     /proc/<pid>/fd, so that no process killed at any moment can leave one behind;
 *   - otherwise created with O_CREAT|O_EXCL (never opens someone else's), named
 *     unguessably, "/strata-<uid>-<32 hex digits from getrandom>", and unlinked
 *     by the creator as soon as every peer has mapped it (nothing outlives its job);
 *     the mapping stays valid after the unlink;
 *   - mode 0600;
 *   - backed for its whole size up front (posix_fallocate where the file system
 *     supports it), so a full /dev/shm is an error at create time, not a SIGBUS
 *     in the middle of a collective; and sized, by the caller, against what the
 *     node can spare (probe_room, spare), so that a large segment size is refused
 *     rather than taking the node's memory.
 *
 * Every function returns 0 or a positive errno value; nothing throws. `dir` is
 * strata_config_t::shm_dir: NULL or "" means POSIX shm (shm_open, /dev/shm);
 * otherwise the segment is a file in that directory (e.g. a node-local tmpfs).
 */
#ifndef STRATA_TOPO_SHM_SEGMENT_H
#define STRATA_TOPO_SHM_SEGMENT_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata {
namespace shm {

// A fresh unguessable name, "/strata-<uid>-<hex>". 0 or errno (getrandom).
int make_name(std::string *name);

// Creates and sizes a new segment. On success *name holds its name and *fd an
// open read-write descriptor the caller closes; on failure nothing is left
// behind (no file, no fd). Retries a few names on EEXIST.
int create(size_t size, std::string *name, int *fd, const char *dir = nullptr);

// Opens a segment made by create() in another process. *size (optional) gets
// its current size. The caller closes *fd.
int open(const std::string &name, int *fd, size_t *size = nullptr,
         const char *dir = nullptr);

// Removes the name; mappings and fds stay valid. ENOENT counts as failure so
// callers can tell a double unlink, but is harmless.
int unlink(const std::string &name, const char *dir = nullptr);

// mmap(PROT_READ|PROT_WRITE, MAP_SHARED) of the whole segment; *addr is
// nullptr on failure. unmap() is munmap.
int map(int fd, size_t size, void **addr);
int unmap(void *addr, size_t size);

// Where a name lives on the file system (for checks and messages):
// "/dev/shm/strata-..." for POSIX shm, "<dir>/strata-..." otherwise.
std::string path_of(const std::string &name, const char *dir = nullptr);

// ---- Unnamed segments

// Creates and sizes a segment that has no name: an O_TMPFILE file in dir, or in
// /dev/shm when dir is unset (so that /dev/shm's size limit, and ENOSPC from the
// fallocate, apply as to a named segment). Unset dir only: where /dev/shm cannot
// make one, a memfd: its pages count against memory alone, with no file system
// limit, so a fallocate that memory cannot back wakes the OOM killer rather than
// failing (the caller's spare() check is what refuses that). EOPNOTSUPP where dir's
// file system cannot make unnamed files (the caller may create() instead). *how
// (optional) says which it made: "O_TMPFILE in /dev/shm", "memfd". On failure
// nothing is left (no fd; there never was a name).
int create_unnamed(size_t size, int *fd, const char *dir = nullptr, std::string *how = nullptr);

// How another process finds an unnamed segment: the creator's /proc/<pid>/fd/<fd>,
// which must lead to the same file (dev, ino), so that a pid seen from another pid
// namespace, or an fd reused, cannot open a stranger's file. Plain data: sent as is.
struct Locator {
    int32_t pid;
    int32_t fd;
    uint64_t dev;
    uint64_t ino;
};
// This process's open segment fd as a Locator. 0 or errno (fstat).
int locate(int fd, Locator *where);

// Opens the segment at where, read-write; the creator must keep its fd open until
// then. Fails with EACCES or EPERM where /proc refuses (another user, a creator that
// is not dumpable, /proc mounted with hidepid, a security module), ENOENT where the
// process or fd is not there (gone, or another pid namespace), ESTALE where the path
// leads to another file. *size (optional) gets the segment's size; the caller closes *fd.
int open_unnamed(const Locator &where, int *fd, size_t *size = nullptr);

// Tests only: open_unnamed fails with EACCES, as where /proc is refused.
void refuse_proc_for_testing(bool refuse);

// ---- What a node can spare

constexpr uint64_t kUnknown = ~uint64_t(0);
// Bytes a new segment could come out of; kUnknown where it could not be read.
struct Room {
    uint64_t fs_free = kUnknown;  // free space of the segment's file system (statvfs f_bavail)
    uint64_t memory = kUnknown;   // MemAvailable, lowered to the memory cgroup's headroom
};
// Reads both for a segment in dir (unset: /dev/shm).
Room probe_room(const char *dir = nullptr);
// Tests only: probe_room answers *room (nullptr: reads the system again).
void set_room_for_testing(const Room *room);
// The most one new segment may take: half of the smaller known amount, so that
// ranks setting up at the same moment, other jobs and the rest of /dev/shm's users
// keep the other half; kUnknown when neither is known.
uint64_t spare(const Room &room);
// MemAvailable of /proc/meminfo text, in bytes; kUnknown when absent.
uint64_t parse_mem_available(const std::string &meminfo);

}  // namespace shm
}  // namespace strata

#endif
