/* SPDX-License-Identifier: BSD-3-Clause */
// src/mem/classify.h - where a buffer lives: host, device, managed or pinned host.
#ifndef STRATA_MEM_CLASSIFY_H
#define STRATA_MEM_CLASSIFY_H

#include <string>

#include "mem/domain.h"

namespace strata {

namespace topo {
namespace cu {
struct Driver;
}
}  // namespace topo

// The process's CUDA driver table (topo/cuda_api.h), loaded and cuInit'ed once,
// shared by classify() and the CUDA domain; nullptr with *why when the node has no
// driver or no GPU. The one call here that initialises the driver: for a caller that
// wants a GPU domain. The others below never run cuInit themselves; they see the
// driver once the application (or a domain) has initialised it.
const topo::cu::Driver *cuda_driver(std::string *why = nullptr);

// One cuPointerGetAttributes call (the driver is loaded and initialised once, on the
// first call, thread-safe). Works in builds without the CUDA toolkit too (the driver
// is loaded at run time), so that such a build still sees device buffers and falls
// back. Host when the node has no driver or no GPU (said once at verbose level 1), or when the driver does not
// know the pointer (ordinary malloc'd or stack memory). *device, when given, gets the
// ordinal of the GPU that owns Device/Managed/PinnedHost memory, else -1.
MemKind classify(const void *ptr, int *device = nullptr);

// The GPU this thread works on: the device of its current CUDA context (the one
// cudaSetDevice chose); -1 when no context is current.
int current_device();

// true when the driver library loads and, if initialised, found a GPU: a GPU context
// may yet come (loads the library; no cuInit).
bool cuda_available();
// true when, besides, a CUDA context is current on the calling thread (the
// application has chosen its GPU).
bool cuda_context_current();

const char *mem_kind_name(MemKind k);

}  // namespace strata

#endif
