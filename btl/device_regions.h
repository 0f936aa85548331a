/* SPDX-License-Identifier: BSD-3-Clause */
// btl/device_regions.h - the intra-node channel's data regions in GPU memory.
//
// On a device team (every rank has a GPU) each local rank's slots live in its
// own GPU memory, allocated once and exported through CUDA IPC; every local peer
// maps them once, at setup, and unmaps them when the team goes (whatever a
// communicator holds goes with it). Flags stay in the host shared-memory segment (btl/shm.h): a rank
// signals a flag only after its copy or reduction has completed on the GPU, and
// peers wait on the host, so ranks that share one GPU never spin inside a kernel
// waiting for each other (principle 4).
#ifndef STRATA_BTL_DEVICE_REGIONS_H
#define STRATA_BTL_DEVICE_REGIONS_H

#include <vector>

#include "common.h"
#include "mem/domain.h"

namespace strata {

class DeviceRegions {
public:
    DeviceRegions() = default;
    ~DeviceRegions() { release(); }
    DeviceRegions(const DeviceRegions &) = delete;
    DeviceRegions &operator=(const DeviceRegions &) = delete;

    // Allocates this rank's region (local index me of local_size) in dom's memory
    // and exports it into *h.
    Status make_own(MemDomain &dom, int local_size, int me, size_t bytes, IpcHandle *h);
    // Maps local peer `local`'s region from its handle.
    Status open_peer(int local, const IpcHandle &h);
    char *region(int local) const { return regions_[size_t(local)]; }
    // Unmaps the peers' regions.
    void close_peers();
    // Frees this rank's region, or (keep) lets go of it without freeing: for when
    // a peer may still map it, since freeing exported memory that another process
    // still uses is undefined.
    void drop_own(bool keep);
    // Both, freeing (for a single-rank node or a team that never shared).
    void release() {
        close_peers();
        drop_own(false);
    }

private:
    MemDomain *dom_ = nullptr;
    int me_ = -1;
    std::vector<char *> regions_;
};

}  // namespace strata

#endif
