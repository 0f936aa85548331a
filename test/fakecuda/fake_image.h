/* SPDX-License-Identifier: BSD-3-Clause */
// fake_image.h - what the fake driver (fake_cuda.cc) checks in a module image: whether
// this driver version can load it on a GPU of compute capability `cc` (major*10+minor),
// as the real driver decides.
//
// An image is a fatbin (what nvcc --fatbin writes: magic 0xBA55ED50, then entries of
// PTX or ELF code, each tagged with its architecture), a bare cubin (ELF), or PTX text.
//  - ELF code runs on GPUs of its architecture's major with at least its minor (sm_80
//    code on 8.6, not on 9.0), and only on a driver of at least the major CUDA
//    release of the toolkit that built it (the cubin's "Cuda compilation tools,
//    release X.Y" note; minor version compatibility covers the rest).
//  - PTX runs on GPUs of its target or newer (JIT), and only on a driver that knows
//    its ISA version (PTX ISA 9.0 is CUDA 13.0; 8.4 is CUDA 12.4; see kPtxIsa).
// The driver takes the first usable entry. Refusals: CUDA_ERROR_INVALID_IMAGE (200)
// for bytes that are none of the three, CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222) when
// PTX for this GPU is there but too new for the driver, else
// CUDA_ERROR_NO_BINARY_FOR_GPU (209).
#ifndef STRATA_FAKECUDA_IMAGE_H
#define STRATA_FAKECUDA_IMAGE_H

#include <string>

namespace fakecuda {

enum : int { E_INVALID_IMAGE = 200, E_NO_BINARY_FOR_GPU = 209, E_UNSUPPORTED_PTX_VERSION = 222 };

// 0 when the driver (version as cuDriverGetVersion says it, e.g. 12040) can load image
// on a GPU of compute capability cc (e.g. 90); else one of the codes above, with *why.
int image_loadable(const void *image, int cc, int driver_version, std::string *why);

// The driver release that first understands PTX ISA major.minor (e.g. 9.0 -> 13000).
int ptx_isa_driver(int major, int minor);

}  // namespace fakecuda

#endif
