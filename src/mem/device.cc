// SPDX-License-Identifier: BSD-3-Clause
// src/mem/device.cc - the device seam (device.h), answered by the CUDA domain.
#include "mem/device.h"

#include "mem/cuda_domain.h"

namespace strata {

bool device_driver_present() { return cuda_available(); }

bool device_context_current() { return cuda_context_current(); }

int device_current() { return current_device(); }

MemDomain *device_domain(int device, std::string *why) { return cuda_domain(device, why); }

Status device_domain_of(const void *ptr, MemDomain **dom) {
    *dom = nullptr;
    int device = -1;
    if (ptr == nullptr || classify(ptr, &device) != MemKind::Device) return STRATA_OK;
    std::string why;
    *dom = device_domain(device, &why);
    if (*dom == nullptr) {
        warn("gpu domain unavailable", "buffer %p is memory of GPU %d, but its domain is unavailable: %s", ptr, device,
             why.c_str());
        return STRATA_ERR_DEVICE;
    }
    return STRATA_OK;
}

bool device_foreign_context(const void *ptr, int device) { return cuda_foreign_context(ptr, device); }

bool device_reduce_supported(strata_dtype_t dtype, strata_op_t op) { return cuda_reduce_supported(dtype, op); }

}  // namespace strata
