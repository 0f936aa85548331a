/* SPDX-License-Identifier: BSD-3-Clause */
// src/mem/cuda_domain.h - the CUDA memory domain: copies and reductions queued on a
// stream, completion polled through an event.
//
// One domain per GPU, process-wide, made on first use. Work is ordered on the
// domain's stream (one non-blocking stream per GPU, shared by every caller); a ticket
// holds an event recorded after the work, and poll() queries it without blocking.
// Operands may be device, managed or pinned host memory of this GPU (or pageable
// host memory for copies, which the driver then stages); they must stay valid until
// poll() says done. alloc() gives device memory of this GPU.
//
// Reductions never hand a kernel an operand that is not aligned for its element type
// (MPI allows a double buffer at any address; a misaligned load faults inside the
// kernel and poisons the context for good): such operands go through aligned scratch
// with the copy engines, which take any alignment. Scratch comes from a pool that
// grows to the largest need and is reused (every use is ordered on the one stream), so
// the steady state allocates and frees no device memory.
#ifndef STRATA_MEM_CUDA_DOMAIN_H
#define STRATA_MEM_CUDA_DOMAIN_H

#include <string>

#include "mem/domain.h"
#include "topo/cuda_api.h"

namespace strata {

// The domain of GPU `device` (an ordinal, as classify() reports it), or nullptr with
// *why ("built without CUDA", "no CUDA driver: ...", "cuInit: ...", "no GPU 3") when
// there is none. The pointer stays valid for the life of the process.
MemDomain *cuda_domain(int device, std::string *why);

// true when the device domain has a kernel for (dtype, op); false for long double
// types (and everything in builds without CUDA): reduce() then returns
// STRATA_ERR_UNSUPPORTED and strata falls back to the host path.
bool cuda_reduce_supported(strata_dtype_t dtype, strata_op_t op);

// true when ptr, device memory of GPU `device`, belongs to a context other than the
// one that GPU's domain works in (the application's own, cuCtxCreate, beside the
// primary one): the domain's kernels cannot read it, and a call stages it. Said once.
bool cuda_foreign_context(const void *ptr, int device);

// The oldest CUDA driver (cuDriverGetVersion's number, 12000 = 12.0) that runs this
// build's kernels on every GPU they target: the first release whose JIT reads the ISA
// of the fatbin's PTX (cuda_kernels_ptx_isa(); the build lowers it to 8.0, CUDA 12.0's,
// see src/mem/Makefile.inc). A driver of the toolkit's major release may run the
// cubins instead; an older one compiles the PTX. 0 in builds without CUDA.
int cuda_driver_needed();
// The PTX ISA the fatbin carries, e.g. "8.0"; "" in builds without CUDA.
std::string cuda_kernels_ptx_isa();
// The fatbin the domain loads (cuModuleLoadData's image) and its size; nullptr and 0 in
// builds without CUDA.
const void *cuda_kernels_image(size_t *bytes);
// cuda_ptx_isa_driver and cuda_driver_branch: topo/cuda_api.h.
// "" when driver_version (cuDriverGetVersion's) runs this build's kernels, else the
// one line that says why the GPU path is off.
std::string cuda_driver_mismatch(int driver_version);

// What strata itself holds of the GPU's memory, process-wide (device allocations of
// the CUDA domains: stage regions, staging; IPC mappings of peers' memory; the
// reduction scratch pool apart, as it is kept for reuse), so that a leak check
// measures strata, not the device (which other processes share). With
// STRATA_CUDA_REPORT set (to anything but 0), one line of it goes to stderr at exit
// (to the end of the file, when it is an absolute path):
//   strata cuda usage: pid=N device_allocs=A device_bytes=B peak_bytes=P ipc_mapped=M
//   pinned_host=H allocs_total=T scratch_bytes=S
// After every communicator is freed, A, B, M and H are 0 unless strata leaked.
struct CudaUsage {
    long long device_allocs, device_bytes, peak_bytes, ipc_mapped, pinned_host, allocs_total, scratch_bytes;
};
CudaUsage cuda_usage();

}  // namespace strata

#endif
