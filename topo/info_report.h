/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * info_report.h - everything strata-info reports, gathered once, rendered as a
 * table for people or as JSON (schema "strata-info/1") for scripts.
 */
#ifndef STRATA_TOPO_INFO_REPORT_H
#define STRATA_TOPO_INFO_REPORT_H

#include "topo/gpu_probe.h"
#include "topo/hwinfo.h"
#include "topo/selftest.h"
#include "topo/sys_probe.h"

#include <string>
#include <vector>

namespace strata {
namespace topo {

struct Report {
    BuildInfo build;
    OmpiInfo ompi;
    bool hwloc_ok = false;
    std::string hwloc_note;
    NodeInfo node;
    CudaStatus cuda;
    NvmlStatus nvml;
    MpsStatus mps;
    UcxInfo ucx;
    GdrInfo gdr;
    ShmSpace shm;
    int ranks_per_node = 1;
    std::vector<RailEntry> rails;
    bool has_selftest = false;
    std::vector<CheckResult> selftest;
};

// Probes this machine. ranks_per_node <= 0: one per GPU, or 1 without GPUs.
// `xml` (optional) replaces the live hwloc topology. Calls cuInit.
void gather_report(Report *r, int ranks_per_node, const char *xml = nullptr,
                   const std::string &ompi_info = "ompi_info");

// Fills the derived parts (GPU locality, rails) from r->node with a topology.
void place_report(Report *r, hwloc_topology_t topo, int ranks_per_node);

std::string render_table(const Report &r);
std::string render_json(const Report &r);

// "80.0 GiB" style.
std::string human_bytes(uint64_t b);

}  // namespace topo
}  // namespace strata

#endif
