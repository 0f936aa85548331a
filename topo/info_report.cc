// SPDX-License-Identifier: BSD-3-Clause
// info_report.cc - gather and render strata-info's report; see info_report.h.
#include "topo/info_report.h"

#include <cstdlib>

#include "topo/cuda_api.h"
#include "topo/json_writer.h"

#include <cstdarg>
#include <cstdio>

namespace strata {
namespace topo {

namespace {

// The build's kernels need a driver of at least b.cuda_driver_needed (the release that
// reads their PTX's ISA; see strata::cuda_driver_needed()).
std::string driver_needed_text(const BuildInfo &b) {
    const int v = b.cuda_driver_needed;
    const char *branch = cuda_driver_branch(v);
    return ">= " + cuda_version_string(v) + (*branch ? std::string(", ") + branch + "+" : std::string());
}

}  // namespace

std::string human_bytes(uint64_t b) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, unit[u]);
    return buf;
}

void place_report(Report *r, hwloc_topology_t topo, int ranks_per_node) {
    read_cpu(topo, &r->node.cpu);
    read_nics(topo, &r->node.nics);
    read_pci_gpus(topo, &r->node.pci_gpus);
    locate_gpus(topo, r->node.nics, &r->node.gpus);
    r->ranks_per_node = ranks_per_node > 0 ? ranks_per_node
                                           : (r->node.gpus.empty() ? 1 : (int)r->node.gpus.size());
    r->rails = assign_rails(r->node, r->ranks_per_node);
}

void gather_report(Report *r, int ranks_per_node, const char *xml, const std::string &ompi_info) {
    r->build = build_info();
    r->ompi = probe_ompi(ompi_info);
    probe_cuda(&r->node, &r->cuda);
    probe_nvlink(&r->node, &r->nvml);
    r->mps = probe_mps();
    r->ucx = probe_ucx();
    r->gdr = probe_gdr();
    r->shm = probe_shm();
    hwloc_topology_t topo;
    if (load_topology(&topo, xml, &r->hwloc_note) == 0) {
        r->hwloc_ok = true;
        place_report(r, topo, ranks_per_node);
        hwloc_topology_destroy(topo);
    } else {
        r->ranks_per_node = ranks_per_node > 0 ? ranks_per_node : 1;
        r->rails = assign_rails(r->node, r->ranks_per_node);
    }
}

namespace {

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string nic_name(const Report &r, int k) {
    return k >= 0 && (size_t)k < r.node.nics.size() ? r.node.nics[(size_t)k].name : std::string("-");
}

std::string numa_str(int n) { return n >= 0 ? std::to_string(n) : std::string("?"); }

std::string yes_no(int v) { return v > 0 ? "yes" : (v == 0 ? "no" : "unknown"); }

}  // namespace

std::string render_table(const Report &r) {
    std::string o;
    const BuildInfo &b = r.build;
    o += "strata-info " + b.strata_version + "\n\n";
    o += "Build\n";
    o += fmt("  %-22s %s\n", "strata", b.strata_version.c_str());
    o += fmt("  %-22s %s\n", "CUDA support",
             b.cuda ? ("yes (toolkit " + b.cuda_version + ", PTX ISA " + b.cuda_ptx_isa + "; kernels need a CUDA driver " +
                      driver_needed_text(b) + ")")
                          .c_str()
                    : "no (built without CUDA; GPU paths disabled)");
    o += fmt("  %-22s built %s, running %s\n", "hwloc", b.hwloc_compile.c_str(), b.hwloc_runtime.c_str());
    o += fmt("  %-22s built %s, running %s\n", "UCX", b.ucx_compile.empty() ? "without" : b.ucx_compile.c_str(),
             r.ucx.version.empty() ? "none" : r.ucx.version.c_str());
    if (r.ompi.found)
        o += fmt("  %-22s %s, CUDA-aware: %s\n", "Open MPI", r.ompi.version.c_str(), yes_no(r.ompi.cuda_aware).c_str());
    else
        o += fmt("  %-22s %s\n", "Open MPI", r.ompi.note.c_str());

    o += "\nCPU and memory\n";
    if (!r.hwloc_ok) {
        o += "  hwloc: " + r.hwloc_note + "\n";
    } else {
        const CpuInfo &c = r.node.cpu;
        o += fmt("  %d package(s), %d NUMA node(s), %d core(s), %d PU(s)\n", c.packages, c.numa_nodes, c.cores, c.pus);
        for (const NumaInfo &n : c.numa)
            o += fmt("  NUMA %-3d %s\n", n.os_index, human_bytes(n.memory_bytes).c_str());
    }

    o += "\nGPUs\n";
    if (!r.cuda.driver_found) {
        o += "  " + r.cuda.note + "\n";
        if (!r.node.pci_gpus.empty()) {
            o += fmt("  (%zu NVIDIA GPU(s) on the PCI bus:", r.node.pci_gpus.size());
            for (const PciAddr &a : r.node.pci_gpus) o += " " + a.str();
            o += ")\n";
        }
    } else {
        o += fmt("  driver %s, MPS %s\n", cuda_version_string(r.cuda.driver_version).c_str(),
                 r.mps.running ? ("running (" + r.mps.pipe_dir + ")").c_str() : "not running");
        if (b.cuda && r.cuda.driver_version > 0 && r.cuda.driver_version < b.cuda_driver_needed)
            o += fmt("  driver %s is older than this build needs (%s): strata's GPU path is off; rebuild with a CUDA "
                     "%d toolkit or update the driver\n",
                     cuda_version_string(r.cuda.driver_version).c_str(), driver_needed_text(b).c_str(),
                     r.cuda.driver_version / 1000);
        if (!r.cuda.note.empty()) o += "  " + r.cuda.note + "\n";
        if (!r.node.gpus.empty())
            o += fmt("  %-4s %-28s %10s %4s %-13s %4s %-10s %s\n", "idx", "name", "memory", "cc", "pci", "numa",
                     "nic", "hops");
        for (const GpuInfo &g : r.node.gpus)
            o += fmt("  %-4d %-28.28s %10s %d.%d  %-13s %4s %-10s %s\n", g.index, g.name.c_str(),
                     human_bytes(g.memory_bytes).c_str(), g.cc_major, g.cc_minor, g.pci.str().c_str(),
                     numa_str(g.numa_node).c_str(), nic_name(r, g.nearest_nic).c_str(),
                     g.nic_distance >= 0 ? std::to_string(g.nic_distance).c_str() : "-");
        if (!r.node.gpus.empty()) {
            o += "  stream memory operations (node flags ordered by the GPU's stream, coll_strata_stream_flags):";
            for (const GpuInfo &g : r.node.gpus) o += fmt(" gpu%d %s", g.index, g.stream_memops ? "yes" : "no");
            o += "\n";
        }
        size_t n = r.node.gpus.size();
        if (n > 1) {
            o += "  peer access / NVLink (P = peer access, NVn = n direct links, NVS = via NVSwitch, - = none)\n      ";
            for (size_t j = 0; j < n; ++j) o += fmt("%-8s", ("gpu" + std::to_string(j)).c_str());
            o += "\n";
            for (size_t i = 0; i < n; ++i) {
                o += fmt("  gpu%-2zu", i);
                for (size_t j = 0; j < n; ++j) {
                    std::string cell;
                    if (i == j) cell = "X";
                    else {
                        int pa = r.node.peer_access[i][j];
                        int nv = r.node.nvlinks.empty() ? -1 : r.node.nvlinks[i][j];
                        cell = pa > 0 ? "P" : (pa == 0 ? "-" : "?");
                        if (nv > 0) cell += ",NV" + std::to_string(nv);
                        else if (r.node.gpus[i].nvswitch_links > 0 && r.node.gpus[j].nvswitch_links > 0) cell += ",NVS";
                    }
                    o += fmt("%-8s", cell.c_str());
                }
                o += "\n";
            }
        }
        if (!r.nvml.found && n > 0) o += "  " + r.nvml.note + "\n";
    }

    o += "\nNICs\n";
    if (r.node.nics.empty()) o += "  none found by hwloc\n";
    for (const NicInfo &nic : r.node.nics) {
        std::string alias;
        for (const std::string &a : nic.aliases) alias += (alias.empty() ? " (" : ", ") + a;
        if (!alias.empty()) alias += ")";
        o += fmt("  %-12s %-12s pci %-13s numa %s%s\n", nic.name.c_str(), nic.kind.c_str(),
                 nic.has_pci ? nic.pci.str().c_str() : "-", numa_str(nic.numa_node).c_str(), alias.c_str());
    }
    o += fmt("  rails for %d rank(s) per node (local rank -> GPU -> NIC):\n", r.ranks_per_node);
    for (const RailEntry &e : r.rails)
        o += fmt("    %3d -> %-4s -> %s\n", e.local_rank, e.gpu >= 0 ? std::to_string(e.gpu).c_str() : "-",
                 nic_name(r, e.nic).c_str());

    o += "\nUCX\n";
    if (!r.ucx.found) {
        o += "  " + r.ucx.note + "\n";
    } else {
        o += "  version " + r.ucx.version + " (queried through " + r.ucx.method + ")\n  transports:";
        for (const std::string &t : r.ucx.transports) o += " " + t;
        o += fmt("\n  CUDA memory: %s\n", r.ucx.cuda_memory ? "yes" : "no (UCX has no CUDA transport here)");
    }
    o += fmt("  GPUDirect RDMA kernel module: %s\n",
             r.gdr.loaded ? r.gdr.module.c_str() : "not loaded (nvidia_peermem / nv_peer_mem)");

    o += "\nShared memory\n";
    if (r.shm.ok)
        o += fmt("  %s: %s total, %s free\n", r.shm.path.c_str(), human_bytes(r.shm.total_bytes).c_str(),
                 human_bytes(r.shm.free_bytes).c_str());
    else
        o += "  " + r.shm.note + "\n";

    if (r.has_selftest) {
        o += "\nSelf-test\n";
        for (const CheckResult &c : r.selftest)
            o += fmt("  %-4s %-20s %9.3f ms  %s\n", c.status.c_str(), c.name.c_str(), c.ms, c.reason.c_str());
    }
    return o;
}

std::string render_json(const Report &r) {
    JsonWriter w;
    w.begin_object().kv("schema", "strata-info/1");
    const BuildInfo &b = r.build;
    w.key("build").begin_object()
        .kv("strata_version", b.strata_version).kb("cuda", b.cuda).kv_or_null("cuda_version", b.cuda_version)
        .kv_or_null("cuda_ptx_isa", b.cuda_ptx_isa)
        .kv("hwloc_compile", b.hwloc_compile).kv("hwloc_runtime", b.hwloc_runtime)
        .kv_or_null("ucx_compile", b.ucx_compile).kv_or_null("ucx_runtime", r.ucx.version)
        .kv("compiler", b.compiler).end_object();
    w.key("open_mpi").begin_object().kb("found", r.ompi.found).kv_or_null("version", r.ompi.version).key("cuda_aware");
    if (r.ompi.cuda_aware < 0) w.null(); else w.boolean(r.ompi.cuda_aware > 0);
    w.kv("note", r.ompi.note).end_object();

    w.key("cpu").begin_object().kb("found", r.hwloc_ok).kv("note", r.hwloc_note)
        .kv("packages", r.node.cpu.packages).kv("numa_nodes", r.node.cpu.numa_nodes)
        .kv("cores", r.node.cpu.cores).kv("pus", r.node.cpu.pus).key("numa").begin_array();
    for (const NumaInfo &n : r.node.cpu.numa)
        w.begin_object().kv("os_index", n.os_index).kv("memory_bytes", n.memory_bytes).end_object();
    w.end_array().end_object();

    w.key("cuda").begin_object().kb("driver_found", r.cuda.driver_found)
        .kv_or_null("driver_needed", r.build.cuda ? cuda_version_string(r.build.cuda_driver_needed) : std::string())
        .kv_or_null("driver_version", cuda_version_string(r.cuda.driver_version)).kv("note", r.cuda.note)
        .key("mps").begin_object().kb("running", r.mps.running).kv("pipe_dir", r.mps.pipe_dir).end_object()
        .key("nvml").begin_object().kb("found", r.nvml.found).kv("note", r.nvml.note).end_object()
        .key("pci_gpus").begin_array();
    for (const PciAddr &a : r.node.pci_gpus) w.str(a.str());
    w.end_array().end_object();

    w.key("gpus").begin_array();
    for (const GpuInfo &g : r.node.gpus) {
        w.begin_object().kv("index", g.index).kv("name", g.name).kv("memory_bytes", g.memory_bytes)
            .kv("compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor))
            .kv("pci_bus_id", g.pci.str()).kv("numa_node", g.numa_node).key("nearest_nic");
        if (g.nearest_nic >= 0) w.str(nic_name(r, g.nearest_nic)); else w.null();
        w.kv("nic_distance", g.nic_distance).kv("nvswitch_links", g.nvswitch_links)
            .kb("stream_memops", g.stream_memops).end_object();
    }
    w.end_array();
    auto matrix = [&](const char *k, const std::vector<std::vector<int>> &m) {
        w.key(k).begin_array();
        for (const auto &row : m) {
            w.begin_array();
            for (int v : row) w.num((int64_t)v);
            w.end_array();
        }
        w.end_array();
    };
    matrix("peer_access", r.node.peer_access);
    matrix("nvlinks", r.node.nvlinks);

    w.key("nics").begin_array();
    for (const NicInfo &n : r.node.nics) {
        w.begin_object().kv("name", n.name).kv("kind", n.kind).key("pci_bus_id");
        if (n.has_pci) w.str(n.pci.str()); else w.null();
        w.kv("numa_node", n.numa_node).key("aliases").begin_array();
        for (const std::string &a : n.aliases) w.str(a);
        w.end_array().end_object();
    }
    w.end_array();

    w.key("rails").begin_object().kv("ranks_per_node", r.ranks_per_node).key("map").begin_array();
    for (const RailEntry &e : r.rails) {
        w.begin_object().kv("local_rank", e.local_rank).key("gpu");
        if (e.gpu >= 0) w.num((int64_t)e.gpu); else w.null();
        w.key("nic");
        if (e.nic >= 0) w.str(nic_name(r, e.nic)); else w.null();
        w.end_object();
    }
    w.end_array().end_object();

    w.key("ucx").begin_object().kb("found", r.ucx.found).kv_or_null("version", r.ucx.version)
        .kv("method", r.ucx.method).key("transports").begin_array();
    for (const std::string &t : r.ucx.transports) w.str(t);
    w.end_array().kb("cuda_memory", r.ucx.cuda_memory).kv("note", r.ucx.note).end_object();
    w.key("gpudirect_rdma").begin_object().kb("loaded", r.gdr.loaded).kv_or_null("module", r.gdr.module).end_object();
    w.key("shm").begin_object().kv("path", r.shm.path).kb("ok", r.shm.ok)
        .kv("total_bytes", r.shm.total_bytes).kv("free_bytes", r.shm.free_bytes).kv("note", r.shm.note).end_object();
    if (r.has_selftest) {
        w.key("selftest").begin_array();
        for (const CheckResult &c : r.selftest)
            w.begin_object().kv("name", c.name).kv("status", c.status).kv("ms", c.ms).kv("reason", c.reason).end_object();
        w.end_array();
    }
    w.end_object();
    return w.text() + "\n";
}

}  // namespace topo
}  // namespace strata
