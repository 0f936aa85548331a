// SPDX-License-Identifier: BSD-3-Clause
// hwinfo.cc - hwloc side of node discovery; see hwinfo.h.
#include "topo/hwinfo.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace strata {
namespace topo {

std::string PciAddr::str() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, dev, func);
    return buf;
}

bool PciAddr::parse(const std::string &s, PciAddr *out) {
    // Hex digits, ':' and '.' only: sscanf's %x would also take "0x" prefixes.
    if (s.empty() || s.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) return false;
    PciAddr a;
    int end = 0;
    if (std::sscanf(s.c_str(), "%x:%x:%x.%x%n", &a.domain, &a.bus, &a.dev, &a.func, &end) == 4 &&
        (size_t)end == s.size()) {
        *out = a;
        return true;
    }
    a = PciAddr();
    end = 0;
    if (std::sscanf(s.c_str(), "%x:%x.%x%n", &a.bus, &a.dev, &a.func, &end) == 3 && (size_t)end == s.size()) {
        *out = a;
        return true;
    }
    return false;
}

int load_topology(hwloc_topology_t *topo, const char *xml, std::string *why) {
    if (hwloc_topology_init(topo) != 0) {
        *why = "hwloc_topology_init failed";
        return -1;
    }
    // Bridges and PCI devices that lead to GPUs/NICs, and their OS devices.
    hwloc_topology_set_io_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (xml != nullptr &&
        hwloc_topology_set_xmlbuffer(*topo, xml, (int)std::strlen(xml) + 1) != 0) {
        *why = "hwloc could not read the XML topology";
        hwloc_topology_destroy(*topo);
        return -1;
    }
    if (hwloc_topology_load(*topo) != 0) {
        *why = "hwloc_topology_load failed";
        hwloc_topology_destroy(*topo);
        return -1;
    }
    return 0;
}

void read_cpu(hwloc_topology_t topo, CpuInfo *cpu) {
    auto count = [&](hwloc_obj_type_t t) {
        int n = hwloc_get_nbobjs_by_type(topo, t);
        return n < 0 ? 0 : n;
    };
    cpu->packages = count(HWLOC_OBJ_PACKAGE);
    cpu->numa_nodes = count(HWLOC_OBJ_NUMANODE);
    cpu->cores = count(HWLOC_OBJ_CORE);
    cpu->pus = count(HWLOC_OBJ_PU);
    cpu->numa.clear();
    for (int i = 0; i < cpu->numa_nodes; ++i) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
        NumaInfo n;
        n.os_index = (int)o->os_index;
        n.memory_bytes = o->attr ? o->attr->numanode.local_memory : 0;
        cpu->numa.push_back(n);
    }
}

namespace {

PciAddr addr_of(hwloc_obj_t pci) {
    PciAddr a;
    a.domain = pci->attr->pcidev.domain;
    a.bus = pci->attr->pcidev.bus;
    a.dev = pci->attr->pcidev.dev;
    a.func = pci->attr->pcidev.func;
    return a;
}

hwloc_obj_t pci_parent(hwloc_obj_t o) {
    for (hwloc_obj_t p = o->parent; p != nullptr; p = p->parent)
        if (p->type == HWLOC_OBJ_PCI_DEVICE) return p;
    return nullptr;
}

// First NUMA node under the nearest CPU-side ancestor of an I/O object.
int numa_of(hwloc_topology_t topo, hwloc_obj_t io) {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, io);
    if (anc == nullptr || anc->nodeset == nullptr) return -1;
    // The machine-wide ancestor spans every node: locality unknown.
    if (hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE) > 1 &&
        hwloc_bitmap_weight(anc->nodeset) != 1)
        return -1;
    int first = hwloc_bitmap_first(anc->nodeset);
    return first;
}

int sysfs_numa(const PciAddr &a) {
    std::string path = "/sys/bus/pci/devices/" + a.str() + "/numa_node";
    FILE *f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return -1;
    int n = -1;
    if (std::fscanf(f, "%d", &n) != 1) n = -1;
    std::fclose(f);
    return n;
}

hwloc_obj_t find_pci(hwloc_topology_t topo, const PciAddr &a) {
    return hwloc_get_pcidev_by_busid(topo, a.domain, a.bus, a.dev, a.func);
}

}  // namespace

void read_nics(hwloc_topology_t topo, std::vector<NicInfo> *nics) {
    nics->clear();
    // Openfabrics first, so a PCI function gets its verbs name and its netdevs
    // (ib0, an RoCE ens...) become aliases.
    for (int pass = 0; pass < 2; ++pass) {
        hwloc_obj_osdev_type_t want = pass == 0 ? HWLOC_OBJ_OSDEV_OPENFABRICS : HWLOC_OBJ_OSDEV_NETWORK;
        for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o != nullptr;
             o = hwloc_get_next_osdev(topo, o)) {
            if (o->attr->osdev.type != want || o->name == nullptr) continue;
            hwloc_obj_t pci = pci_parent(o);
            NicInfo *same = nullptr;
            if (pci != nullptr)
                for (NicInfo &n : *nics)
                    if (n.has_pci && n.pci == addr_of(pci)) same = &n;
            if (same != nullptr) {
                same->aliases.push_back(o->name);
                continue;
            }
            NicInfo n;
            n.name = o->name;
            n.kind = pass == 0 ? "openfabrics" : "network";
            if (pci != nullptr) {
                n.has_pci = true;
                n.pci = addr_of(pci);
                n.numa_node = numa_of(topo, pci);
                if (n.numa_node < 0) n.numa_node = sysfs_numa(n.pci);
            }
            nics->push_back(n);
        }
    }
}

void read_pci_gpus(hwloc_topology_t topo, std::vector<PciAddr> *gpus) {
    gpus->clear();
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o != nullptr;
         o = hwloc_get_next_pcidev(topo, o)) {
        unsigned cls = o->attr->pcidev.class_id;
        if (o->attr->pcidev.vendor_id == 0x10de && (cls >> 8) == 0x03) gpus->push_back(addr_of(o));
    }
}

int pci_distance(hwloc_topology_t topo, const PciAddr &a, const PciAddr &b) {
    hwloc_obj_t oa = find_pci(topo, a), ob = find_pci(topo, b);
    if (oa == nullptr || ob == nullptr) return -1;
    // hwloc's common-ancestor helper compares depths, which are virtual for
    // I/O objects; walk parent chains instead.
    std::vector<hwloc_obj_t> chain;
    for (hwloc_obj_t p = oa; p != nullptr; p = p->parent) chain.push_back(p);
    int up_b = 0;
    for (hwloc_obj_t p = ob; p != nullptr; p = p->parent, ++up_b) {
        auto it = std::find(chain.begin(), chain.end(), p);
        if (it != chain.end()) return (int)(it - chain.begin()) + up_b;
    }
    return -1;
}

void locate_gpus(hwloc_topology_t topo, const std::vector<NicInfo> &nics,
                 std::vector<GpuInfo> *gpus) {
    std::vector<int> load(nics.size(), 0);
    for (GpuInfo &g : *gpus) {
        hwloc_obj_t o = find_pci(topo, g.pci);
        g.numa_node = o != nullptr ? numa_of(topo, o) : -1;
        if (g.numa_node < 0) g.numa_node = sysfs_numa(g.pci);
        g.nearest_nic = -1;
        g.nic_distance = -1;
        for (size_t k = 0; k < nics.size(); ++k) {
            if (!nics[k].has_pci) continue;
            int d = pci_distance(topo, g.pci, nics[k].pci);
            if (d < 0) continue;
            bool better = g.nearest_nic < 0 || d < g.nic_distance ||
                          (d == g.nic_distance && load[k] < load[(size_t)g.nearest_nic]);
            if (better) {
                g.nearest_nic = (int)k;
                g.nic_distance = d;
            }
        }
        if (g.nearest_nic >= 0) ++load[(size_t)g.nearest_nic];
    }
}

std::vector<RailEntry> assign_rails(const NodeInfo &node, int ranks_per_node) {
    std::vector<RailEntry> out;
    std::vector<int> pci_nics;
    for (size_t k = 0; k < node.nics.size(); ++k)
        if (node.nics[k].has_pci) pci_nics.push_back((int)k);
    for (int r = 0; r < ranks_per_node; ++r) {
        RailEntry e;
        e.local_rank = r;
        if (!node.gpus.empty()) {
            const GpuInfo &g = node.gpus[(size_t)r % node.gpus.size()];
            e.gpu = g.index >= 0 ? g.index : (int)((size_t)r % node.gpus.size());
            e.nic = g.nearest_nic;
        }
        if (e.nic < 0 && !pci_nics.empty()) e.nic = pci_nics[(size_t)r % pci_nics.size()];
        out.push_back(e);
    }
    return out;
}

}  // namespace topo
}  // namespace strata
