/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_probe.h - GPUs as the CUDA driver and NVML see them, both loaded at run
 * time (dlopen), plus whether the MPS control daemon is running.
 *
 * Calls cuInit in this process: a process that forks afterwards must not use
 * CUDA in the child (strata-info runs its self-test before probing).
 */
#ifndef STRATA_TOPO_GPU_PROBE_H
#define STRATA_TOPO_GPU_PROBE_H

#include "topo/hwinfo.h"

#include <string>

namespace strata {
namespace topo {

struct CudaStatus {
    bool driver_found = false;      // libcuda.so.1 loaded and cuInit succeeded
    int driver_version = 0;         // cuDriverGetVersion: 12040 = 12.4
    std::string note;               // why not, in one line
};

struct NvmlStatus {
    bool found = false;
    std::string note;
};

struct MpsStatus {
    bool running = false;
    std::string pipe_dir;           // CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps
};

// Fills node->gpus (name, memory, CC, PCI) and node->peer_access.
void probe_cuda(NodeInfo *node, CudaStatus *status);

// Fills node->nvlinks and GpuInfo::nvswitch_links from NVML; needs gpus' PCI ids.
void probe_nvlink(NodeInfo *node, NvmlStatus *status);

// The MPS control daemon creates its "control" pipe in the pipe directory.
MpsStatus probe_mps();

// "12.4" from 12040.
std::string cuda_version_string(int v);

}  // namespace topo
}  // namespace strata

#endif
