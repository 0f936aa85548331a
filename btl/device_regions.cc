// SPDX-License-Identifier: BSD-3-Clause
// btl/device_regions.cc - GPU slot regions shared through CUDA IPC (see the header).
#include "btl/device_regions.h"

#include "btl/ipc_cache.h"

namespace strata {

Status DeviceRegions::make_own(MemDomain &dom, int local_size, int me, size_t bytes, IpcHandle *h) {
    release();
    dom_ = &dom;
    me_ = me;
    regions_.assign(size_t(local_size), nullptr);
    void *p = nullptr;
    STRATA_CHECK(dom.alloc(bytes, &p));
    regions_[size_t(me)] = static_cast<char *>(p);
    if (local_size == 1) return STRATA_OK;  // nobody to share with
    return dom.ipc_export(p, h);
}

Status DeviceRegions::open_peer(int local, const IpcHandle &h) {
    void *p = nullptr;
    STRATA_CHECK(IpcCache::open_unheld(*dom_, h, &p));
    regions_[size_t(local)] = static_cast<char *>(p);
    return STRATA_OK;
}

void DeviceRegions::close_peers() {
    for (size_t i = 0; i < regions_.size(); ++i) {
        if (regions_[i] == nullptr || int(i) == me_) continue;
        dom_->ipc_close(regions_[i]);
        regions_[i] = nullptr;
    }
}

void DeviceRegions::drop_own(bool keep) {
    if (me_ >= 0 && size_t(me_) < regions_.size() && regions_[size_t(me_)] != nullptr && !keep)
        dom_->release(regions_[size_t(me_)]);
    regions_.clear();
    dom_ = nullptr;
    me_ = -1;
}

}  // namespace strata
