/* SPDX-License-Identifier: BSD-3-Clause */
// btl/node_channel.h - the channel among the ranks of one node.
//
// What the ranks of a node share: per local rank, slots (in the host segment,
// or on a device team in GPU memory exported through CUDA IPC), flags and a mailbox
// (always in the host segment, btl/shm.h), and the cache of node peers' user buffers
// mapped for reading in place (btl/ipc_cache.h). The team sets it up, its schedules
// read and write it, and nothing above it knows how: a second kind of node channel
// (another IPC mechanism, NVLink SHARP) implements the same questions.
//
// Setup messages go over a point-to-point channel (btl/p2p.h) with a control tag,
// and every rank sends what it has, failure marks included, so that no peer waits for
// ever on a rank that failed.
#ifndef STRATA_BTL_NODE_CHANNEL_H
#define STRATA_BTL_NODE_CHANNEL_H

#include <cstdint>
#include <string>
#include <vector>

#include "btl/device_regions.h"
#include "btl/exchange.h"
#include "btl/ipc_cache.h"
#include "btl/p2p.h"
#include "btl/shm.h"
#include "topo/layout.h"

namespace strata {

class NodeChannel {
public:
    explicit NodeChannel(size_t ipc_capacity) { ipc_.set_capacity(ipc_capacity); }

    // The host segment: the node leader creates it in dir (nullptr: /dev/shm) with no
    // name, if the node can spare it, and each local peer opens it through the leader's
    // /proc/<pid>/fd; where that is refused, a named one, unlinked as soon as every
    // local peer has mapped it. A rank alone on its node makes private memory.
    // region: bytes of slots per local rank. On return, whatever happened,
    // nothing is left that a killed process could leak: no name, no fd kept for peers.
    // Waits as w says; *why: what a failed wait waited for.
    Status open(const Layout &l, P2PChannel &wire, int tag, const char *dir, size_t region, const Waiter &w,
                std::string *why);
    // Lets go of what open() kept reachable for peers. open() has already, whatever
    // happened: this stays a harmless safety net for callers that give up.
    void unlink() { shm_.release(); }
    const std::string &error() const { return shm_.error(); }
    // At the team's end: keeps the host segment (its mapping, this process's) for the
    // next team of the same local ranks, which takes it up instead of making one when
    // every local rank kept it (open()). A process keeps at most two; an older one is
    // unmapped. `local`, `region` and `dir` as given to open().
    void keep_segment(int local, size_t region, const char *dir);
    static void set_kept_segments_for_testing(size_t n);

    // Slots in GPU memory: this rank's region in dom's memory (dom nullptr: this
    // rank has none and says so), exported to and mapped from every local peer.
    // STRATA_ERR_PEER: this rank's part went well, a local peer's did not.
    Status open_device(const Layout &l, P2PChannel &wire, int tag, MemDomain *dom, size_t region,
                       const Waiter &w, std::string *why);
    // Teardown of the GPU regions: unmaps the peers' regions and the cached buffers,
    // says so (kFlagClosed = tries), and frees this rank's region once every local peer
    // has said so, waiting at most wait_seconds. False when a peer had not: the region
    // is then left allocated, as must be anything else peers may still map.
    bool close_device(const Layout &l, uint64_t tries, int wait_seconds);

    // Local rank `local`'s slot area (host segment, or GPU region on a device team).
    char *region(int local, bool device) const { return device ? dregions_.region(local) : shm_.region(local); }
    uint64_t *flag(int local, int which) const { return shm_.flag(local, which); }
    IpcCache &ipc() { return ipc_; }
    const IpcCache &ipc() const { return ipc_; }

    // Reading node peers' buffers in place in call n, in three parts that POSTED
    // flags separate (the caller raises and waits for them): post this rank's buffer
    // (nothing when empty), map every local peer's (into (*bufs)[i]), and learn whether
    // every rank of the node could. out (optional): the rank's output too, mapped
    // into (*outs)[i] (outs given where every rank posted one). settle: post waits for
    // the work queued on the application's stream before peers may read or write them;
    // false where the caller orders them after it itself.
    Status post(uint64_t n, int me, MemDomain &dom, const void *buf, bool empty, const void *out = nullptr,
                bool settle = true);
    Status open_peers(uint64_t n, int me, int local_size, MemDomain &dom, std::vector<const char *> *bufs,
                      std::vector<const char *> *outs = nullptr);
    bool all_opened(uint64_t n, int local_size) const;

private:
    Status reuse_round(const Layout &l, P2PChannel &wire, int tag, const char *dir, size_t region,
                       const Waiter &w, std::string *why, std::vector<int32_t> *acks, uint64_t *id);
    ShmChannel shm_;
    DeviceRegions dregions_;
    IpcCache ipc_;
};

}  // namespace strata

#endif
