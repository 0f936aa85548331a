/* SPDX-License-Identifier: BSD-3-Clause */
// src/mem/device.h - the seam between the core and the kinds of device memory.
//
// The core (team, call, staging, API) asks these questions and never names a device
// API: which domain owns a pointer, which device this thread works on, whether a
// device could still come, whether a (type, op) has a kernel. Today the one kind is
// CUDA (cuda_domain.h, classify.h); a second kind (ROCm) answers here too, and the
// core does not change.
#ifndef STRATA_MEM_DEVICE_H
#define STRATA_MEM_DEVICE_H

#include <string>

#include "mem/classify.h"
#include "mem/domain.h"

namespace strata {

// A device driver loads and has devices: this process could still get a device
// context, even if it has none yet. Never initialises a driver.
bool device_driver_present();
// This thread has a current device context (the application has chosen its GPU).
bool device_context_current();
// The device this thread works on (an ordinal as classify() reports it); -1: none.
int device_current();
// The memory domain of device `device`, or nullptr with *why when there is none. The
// pointer stays valid for the life of the process.
MemDomain *device_domain(int device, std::string *why);
// The domain of the device whose memory ptr is (*dom), or nullptr when ptr is not
// device memory (host, pinned host, managed). STRATA_ERR_DEVICE (said once in the
// log) when ptr is device memory but its domain cannot be had.
Status device_domain_of(const void *ptr, MemDomain **dom);
// Whether ptr, memory of device `device`, belongs to a device context other than the
// one that device's domain works in: its kernels cannot read it, so it is staged.
bool device_foreign_context(const void *ptr, int device);
// Whether device domains have a kernel for (dtype, op) (long double types have none).
bool device_reduce_supported(strata_dtype_t dtype, strata_op_t op);

}  // namespace strata

#endif
