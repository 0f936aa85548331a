/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hwinfo.h - what a node offers strata: CPUs and memory, GPUs, NICs, and the
 * GPU <-> NIC rail assignment. Plain data plus the hwloc half of discovery;
 * the CUDA/NVML half (loaded at run time) is in gpu_probe.h.
 *
 * Nothing here needs Open MPI or CUDA. Functions that take an hwloc topology
 * work on the live machine or on one loaded from XML (tests), so the parsing
 * and the rail rules are tested on machines without GPUs or NICs.
 */
#ifndef STRATA_TOPO_HWINFO_H
#define STRATA_TOPO_HWINFO_H

#include <hwloc.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata {
namespace topo {

struct PciAddr {
    unsigned domain = 0, bus = 0, dev = 0, func = 0;
    std::string str() const;                              // "0000:65:00.0"
    static bool parse(const std::string &s, PciAddr *out);  // accepts dddd:bb:dd.f and bb:dd.f
    bool operator==(const PciAddr &o) const {
        return domain == o.domain && bus == o.bus && dev == o.dev && func == o.func;
    }
};

struct NumaInfo {
    int os_index = -1;
    uint64_t memory_bytes = 0;
};

struct CpuInfo {
    int packages = 0, numa_nodes = 0, cores = 0, pus = 0;
    std::vector<NumaInfo> numa;
};

struct GpuInfo {
    int index = -1;                 // CUDA device ordinal
    std::string name;
    uint64_t memory_bytes = 0;
    int cc_major = 0, cc_minor = 0;
    bool stream_memops = false;  // 64-bit stream memory operations: node flags on the GPU's stream
    PciAddr pci;
    int numa_node = -1;             // OS index, -1 unknown
    int nearest_nic = -1;           // index into NodeInfo::nics, -1 none
    int nic_distance = -1;          // PCI tree hops to that NIC, -1 unknown
    int nvswitch_links = 0;         // active NVLinks whose far end is not a GPU here
};

struct NicInfo {
    std::string name;               // openfabrics name (mlx5_0) if any, else netdev (eth0)
    std::string kind;               // "openfabrics" or "network"
    std::vector<std::string> aliases;   // other OS devices on the same PCI function (ib0)
    bool has_pci = false;
    PciAddr pci;
    int numa_node = -1;
};

struct NodeInfo {
    CpuInfo cpu;
    std::vector<GpuInfo> gpus;
    std::vector<NicInfo> nics;
    std::vector<std::vector<int>> peer_access;  // [i][j] 1 if GPU i can access GPU j, -1 unknown
    std::vector<std::vector<int>> nvlinks;       // [i][j] active direct links, -1 unknown
    std::vector<PciAddr> pci_gpus;              // NVIDIA display/3D controllers hwloc sees
};

// Loads the topology of this machine (xml == nullptr) or of an XML string,
// keeping the I/O objects strata cares about (PCI GPUs and NICs, OS devices).
// 0 or -1 with *why set. The caller destroys *topo.
int load_topology(hwloc_topology_t *topo, const char *xml, std::string *why);

// Counts and NUMA memory.
void read_cpu(hwloc_topology_t topo, CpuInfo *cpu);

// NICs: network and openfabrics OS devices, one entry per PCI function.
// Devices without a PCI parent (virtual) are kept but never used as rails.
void read_nics(hwloc_topology_t topo, std::vector<NicInfo> *nics);

// NVIDIA GPUs on the PCI bus (vendor 0x10de, class 0x03xx), driver or not.
void read_pci_gpus(hwloc_topology_t topo, std::vector<PciAddr> *gpus);

// For GPUs whose PCI address is known (from the driver): NUMA node (hwloc,
// else /sys) and nearest NIC. Ties go to the NIC serving the fewest GPUs so
// far, then to the lower index: 8 GPUs over 4 equidistant NICs spread 2 each.
void locate_gpus(hwloc_topology_t topo, const std::vector<NicInfo> &nics,
                 std::vector<GpuInfo> *gpus);

// PCI tree hops between two PCI functions, -1 if either is absent.
int pci_distance(hwloc_topology_t topo, const PciAddr &a, const PciAddr &b);

// Rail assignment for `ranks_per_node` local ranks: local rank r uses GPU
// r % ngpus and that GPU's nearest NIC; without GPUs, NIC r % nnics among
// PCI NICs. gpu/nic are -1 where there is none.
struct RailEntry {
    int local_rank = 0;
    int gpu = -1;
    int nic = -1;
};
std::vector<RailEntry> assign_rails(const NodeInfo &node, int ranks_per_node);

}  // namespace topo
}  // namespace strata

#endif
