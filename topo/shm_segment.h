/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_segment.h - make a shared-memory segment the strata way.
 *
 * One implementation for the whole project (btl/shm.cc and strata-info's
 * self-test both use it), so that every segment strata creates is:
 *   - created with O_CREAT|O_EXCL and mode 0600 (never opens someone else's),
 *   - named unguessably: "/strata-<uid>-<32 hex digits from getrandom>",
 *   - backed for its whole size up front (posix_fallocate where the file system
 *     supports it), so a full /dev/shm is an error at create time, not a SIGBUS
 *     in the middle of a collective,
 *   - unlinked by the creator as soon as every peer has mapped it (DESIGN.md
 *     principle 10); the mapping stays valid after the unlink.
 *
 * Every function returns 0 or a positive errno value; nothing throws. `dir` is
 * strata_config_t::shm_dir: NULL or "" means POSIX shm (shm_open, /dev/shm);
 * otherwise the segment is a file in that directory (e.g. a node-local tmpfs).
 */
#ifndef STRATA_TOPO_SHM_SEGMENT_H
#define STRATA_TOPO_SHM_SEGMENT_H

#include <cstddef>
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

}  // namespace shm
}  // namespace strata

#endif
