/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sys_probe.h - the software side of a node as strata sees it: how strata was
 * built, which Open MPI and UCX it would run with, GPUDirect RDMA, /dev/shm.
 * Each probe fills a plain struct and never fails: what is missing is said in
 * `note`.
 */
#ifndef STRATA_TOPO_SYS_PROBE_H
#define STRATA_TOPO_SYS_PROBE_H

#include <cstdint>
#include <string>
#include <vector>

namespace strata {
namespace topo {

struct BuildInfo {
    std::string strata_version;
    bool cuda = false;              // built with STRATA_HAVE_CUDA
    std::string cuda_version;       // CUDA_VERSION of the toolkit headers, "" without
    std::string cuda_ptx_isa;       // ISA of the kernels' PTX ("8.0"), "" without
    int cuda_driver_needed = 0;     // strata::cuda_driver_needed(): 12000 = 12.0, 0 without
    std::string hwloc_compile, hwloc_runtime;
    std::string ucx_compile;        // "" when built without UCX headers
    std::string compiler;
};

struct OmpiInfo {
    bool found = false;
    std::string version;            // ompi:version:full
    int cuda_aware = -1;            // mpi_built_with_cuda_support: 1, 0, -1 unknown
    std::string note;
};

struct UcxInfo {
    bool found = false;             // libucp loaded and a context initialised
    std::string version;            // run time
    std::vector<std::string> transports;    // "tl/device", as UCP selected them
    bool cuda_memory = false;       // UCS_MEMORY_TYPE_CUDA among the context's memory types
    std::string method;             // "libucp" or "ucx_info"
    std::string note;
};

struct GdrInfo {
    bool loaded = false;
    std::string module;             // nvidia_peermem or nv_peer_mem when loaded
};

struct ShmSpace {
    std::string path = "/dev/shm";
    bool ok = false;
    uint64_t total_bytes = 0, free_bytes = 0;
    std::string note;
};

BuildInfo build_info();
// `ompi_info` is the command to run (PATH lookup when it has no slash).
OmpiInfo probe_ompi(const std::string &ompi_info = "ompi_info");
// Parses `ompi_info --parsable --all` output (exposed for tests).
void parse_ompi_info(const std::string &text, OmpiInfo *out);
UcxInfo probe_ucx();
// Parses `ucx_info -d` output into "tl/device" (exposed for tests).
std::vector<std::string> parse_ucx_info_d(const std::string &text, bool *cuda_memory);
// `modules` is /proc/modules text.
GdrInfo probe_gdr(const char *proc_modules = "/proc/modules");
ShmSpace probe_shm(const char *path = "/dev/shm");

// Output of a shell command, "" when it could not run. Exit status in *status.
std::string run_command(const std::string &cmd, int *status);

}  // namespace topo
}  // namespace strata

#endif
