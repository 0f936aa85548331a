/* SPDX-License-Identifier: BSD-3-Clause */
// btl/shm.h - the intra-node shared-memory channel.
//
// One segment per team and node: a control block of flags per local rank, a
// mailbox per local rank, then one data region per local rank. The node leader
// creates the segment (0600) with no name, and the others open it through the
// leader's /proc/<pid>/fd: nothing is ever in /dev/shm, so no rank killed at any
// moment leaves anything behind. Where /proc is refused, a named segment (O_EXCL,
// unguessable name) that the leader unlinks as soon as every local peer has mapped
// it (btl/node_channel.cc). Before creating either, the leader checks that the node
// can spare it (shm::spare).
//
// Flags are monotonic counters: a rank stores (segment number + 1) into its own
// flag when it has finished its part of that segment; peers wait for their target
// value. Segment numbers of call n start at n << 32 (team.h), and a rank that ends
// a call raises its flags to the last value of the call, so a call that went wrong
// on one rank (a different count) cannot leave a peer waiting in it or shift the
// next call. No flag is ever reset, so no reset can race.
#ifndef STRATA_BTL_SHM_H
#define STRATA_BTL_SHM_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "common.h"
#include "topo/shm_segment.h"

namespace strata {

// Flags per local rank, each on its own cache line (whose second word is the flag's
// queued note: engine.h, queued_note). Algorithms name them.
enum ShmFlag : int {
    kFlagReady = 0,   // my input for this segment is in my region
    kFlagSlice = 1,   // the part of the result I own is final
    kFlagDone = 2,    // I no longer read anyone's region for this segment
    kFlagPosted = 3,  // buffer exchange of call n (team.h): base+1 my mailbox holds my buffer, base+2 I mapped yours
    kFlagSig = 4,     // 4 + call % 2: (call number mod 2^32) << 32 | a hash of its size, type, op, root
    kFlagFailed = 6,  // the first call I failed in (0: none); I take no call after it
    kFlagClosed = 7,  // team teardown: I no longer map my peers' GPU regions (a count of tries)
    kFlagCount = 8
};

// How a local peer finds the node's segment. Plain data: the leader sends it as is.
struct ShmWhere {
    enum Kind : int32_t { kNone = 0, kProc = 1, kName = 2 };
    int32_t kind;
    shm::Locator proc;  // kProc: the leader's /proc/<pid>/fd/<fd>
    char name[64];      // kName
    uint64_t id;        // the segment's identity (random), by which a freed one is found again
};

class ShmChannel {
public:
    ShmChannel() = default;
    ~ShmChannel();
    ShmChannel(const ShmChannel &) = delete;
    ShmChannel &operator=(const ShmChannel &) = delete;

    static size_t segment_bytes(int local_size, size_t region_bytes);

    // Leader: creates and maps a new segment in dir (nullptr: /dev/shm) and says in
    // *where how peers find it. Unnamed unless `named` (or dir's file system cannot
    // make unnamed files); either way it is kept reachable, fd open or name in place,
    // until release(). Refused (STRATA_ERR_NOMEM, error() naming the bytes wanted, the
    // bytes available and coll_strata_segment_size) when the node cannot spare it
    // (shm::spare), unless `named`: a named segment replaces an unnamed one of the
    // same size, which the check has already passed.
    Status create(const char *dir, int local_size, size_t region_bytes, bool named, ShmWhere *where);
    // Peer: maps the segment the leader created. STRATA_ERR_UNSUPPORTED where /proc
    // refused to open an unnamed one (said at verbose level, not in error(): the node
    // may still agree on a named one).
    Status attach(const char *dir, const ShmWhere &where, int local_size, size_t region_bytes);
    // Private memory with the same layout, for a node with a single rank.
    Status make_private(size_t region_bytes);
    // Leader, once every local peer has mapped the segment or given up: closes the fd
    // peers opened it through and removes the name; mappings stay valid.
    void release();
    // Lets go of the segment (unmapped, released): before mapping another.
    void reset();
    // Exchanges everything with o: a segment kept for reuse moves this way.
    void swap(ShmChannel &o);
    // Zeroes every rank's flags and mailboxes: a segment taken up again by a new team,
    // while no rank uses it (node_channel.cc).
    void clear_control();
    uint64_t id() const { return id_; }
    bool shared() const { return base_ != nullptr && !is_private_; }

    uint64_t *flag(int local, int which) const;
    // kMailboxBytes of local rank `local`, written by it and read by its peers
    // between flag stores (cache-line aligned).
    static constexpr size_t kMailboxBytes = 512;
    char *mailbox(int local) const;
    char *region(int local) const;
    size_t region_bytes() const { return region_bytes_; }
    int local_size() const { return local_size_; }
    // Why the last create/attach/make_private failed ("" if none did).
    const std::string &error() const { return error_; }

private:
    Status map(int fd, size_t bytes);
    Status setup_error(Status status, const char *what, int err = 0);
    Status too_big(size_t bytes, const char *dir, const shm::Room &room, uint64_t spare);
    std::string error_;
    void *base_ = nullptr;
    size_t bytes_ = 0;
    bool is_private_ = false;
    int local_size_ = 0;
    size_t region_bytes_ = 0;
    int source_fd_ = -1;  // the leader's fd of an unnamed segment, until released
    std::string name_;    // set until unlinked (leader only)
    std::string dir_;     // "" = POSIX shm
    uint64_t id_ = 0;     // ShmWhere::id
};

}  // namespace strata

#endif
