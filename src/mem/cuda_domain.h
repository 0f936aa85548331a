// src/mem/cuda_domain.h - the CUDA memory domain: copies and reductions queued on a
// stream, completion polled through an event.
//
// One domain per GPU, process-wide, made on first use. Work is ordered on the
// domain's stream (one non-blocking stream per GPU, shared by every caller); a ticket
// holds an event recorded after the work, and poll() queries it without blocking.
// Operands may be device, managed or pinned host memory of this GPU (or pageable
// host memory for copies, which the driver then stages); they must stay valid until
// poll() says done. alloc() gives device memory of this GPU.
#ifndef STRATA_MEM_CUDA_DOMAIN_H
#define STRATA_MEM_CUDA_DOMAIN_H

#include <string>

#include "mem/domain.h"

namespace strata {

// The domain of GPU `device` (an ordinal, as classify() reports it), or nullptr with
// *why ("built without CUDA", "no CUDA driver: ...", "cuInit: ...", "no GPU 3") when
// there is none. The pointer stays valid for the life of the process.
MemDomain *cuda_domain(int device, std::string *why);

// true when the device domain has a kernel for (dtype, op); false for long double
// types (and everything in builds without CUDA): reduce() then returns
// STRATA_ERR_UNSUPPORTED and strata falls back to the host path.
bool cuda_reduce_supported(strata_dtype_t dtype, strata_op_t op);

}  // namespace strata

#endif
