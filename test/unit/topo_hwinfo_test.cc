// SPDX-License-Identifier: BSD-3-Clause
// Topology parsing and rail assignment on hwloc XML topologies (no hardware needed).
#include "topo/hwinfo.h"

#include <gtest/gtest.h>

#include <string>

using namespace strata::topo;

namespace {

// Two sockets, one NUMA node each; under each socket a host bridge with one
// NVIDIA GPU and one Mellanox NIC (verbs device mlx5_N plus netdev ibN).
// Socket 1 also has a second GPU behind a deeper PCIe switch.
std::string pci(const char *bus, const char *type, const char *osdevs) {
    return std::string("<object type=\"PCIDev\" pci_busid=\"") + bus + "\" pci_type=\"" + type +
           "\">" + osdevs + "</object>";
}
std::string socket(int s, const std::string &io) {
    std::string cpu = "0x" + std::to_string(1 << s), node = cpu;
    return "<object type=\"Package\" os_index=\"" + std::to_string(s) + "\" cpuset=\"" + cpu +
           "\" complete_cpuset=\"" + cpu + "\" nodeset=\"" + node + "\" complete_nodeset=\"" + node + "\">"
           "<object type=\"NUMANode\" os_index=\"" + std::to_string(s) + "\" cpuset=\"" + cpu +
           "\" complete_cpuset=\"" + cpu + "\" nodeset=\"" + node + "\" complete_nodeset=\"" + node +
           "\" local_memory=\"" + std::to_string((s + 1) * 1073741824LL) + "\"/>"
           "<object type=\"Core\" os_index=\"" + std::to_string(s) + "\" cpuset=\"" + cpu +
           "\" complete_cpuset=\"" + cpu + "\" nodeset=\"" + node + "\" complete_nodeset=\"" + node + "\">"
           "<object type=\"PU\" os_index=\"" + std::to_string(s) + "\" cpuset=\"" + cpu +
           "\" complete_cpuset=\"" + cpu + "\" nodeset=\"" + node + "\" complete_nodeset=\"" + node + "\"/>"
           "</object>" + io + "</object>";
}
const char *kGpu = "0302 [10de:2335] [10de:18be] a1";
const char *kNic = "0207 [15b3:101d] [15b3:0040] 00";
std::string nic_os(int k) {
    return "<object type=\"OSDev\" name=\"mlx5_" + std::to_string(k) + "\" osdev_type=\"3\"/>"
           "<object type=\"OSDev\" name=\"ib" + std::to_string(k) + "\" osdev_type=\"2\"/>";
}

std::string two_socket_xml() {
    std::string s0 = "<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[10-1f]\">" +
                     pci("0000:10:00.0", kGpu, "") + pci("0000:11:00.0", kNic, nic_os(0).c_str()) + "</object>";
    std::string s1 = "<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[80-9f]\">" +
                     pci("0000:80:00.0", kNic, nic_os(1).c_str()) +
                     "<object type=\"Bridge\" bridge_type=\"1-1\" depth=\"1\" bridge_pci=\"0000:[81-81]\" "
                     "pci_busid=\"0000:80:01.0\" pci_type=\"0604 [1000:c010] [1000:a064] b0\">" +
                     pci("0000:81:00.0", kGpu, "") + "</object></object>";
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
           "<topology version=\"2.0\"><object type=\"Machine\" os_index=\"0\" cpuset=\"0x3\" "
           "complete_cpuset=\"0x3\" allowed_cpuset=\"0x3\" nodeset=\"0x3\" complete_nodeset=\"0x3\" "
           "allowed_nodeset=\"0x3\">" + socket(0, s0) + socket(1, s1) + "</object></topology>";
}

// hwloc reads XML with libxml2 where its plugin is installed (libhwloc-plugins) and with
// a parser of its own where not (a bare image). That one skips the header lines line by
// line, so the topologies above keep them on lines of their own. Where this hwloc cannot
// read back the XML it writes of a small synthetic machine, there is nothing to test
// with: the tests that load XML skip and say why (asked of hwloc, not guessed from files).
std::string xml_unusable() {
    static const std::string why = [] {
        hwloc_topology_t made, back;
        if (hwloc_topology_init(&made) != 0) return std::string("hwloc_topology_init failed");
        char *buf = nullptr;
        int len = 0;
        if (hwloc_topology_set_synthetic(made, "pack:2 core:1 pu:1") != 0 || hwloc_topology_load(made) != 0 ||
            hwloc_topology_export_xmlbuffer(made, &buf, &len, 0) != 0) {
            hwloc_topology_destroy(made);
            return std::string("it cannot write a synthetic topology as XML");
        }
        std::string w;
        const int loaded = load_topology(&back, buf, &w);
        hwloc_free_xmlbuffer(made, buf);
        hwloc_topology_destroy(made);
        if (loaded != 0) return "it cannot read back the XML it wrote: " + w;
        hwloc_topology_destroy(back);
        return std::string();
    }();
    return why;
}
#define SKIP_WITHOUT_XML()                                                                    \
    do {                                                                                      \
        const std::string why_ = xml_unusable();                                              \
        if (!why_.empty()) GTEST_SKIP() << "hwloc cannot read XML topologies here: " << why_; \
    } while (0)

class TwoSocket : public ::testing::Test {
protected:
    void SetUp() override {
        SKIP_WITHOUT_XML();
        std::string why, xml = two_socket_xml();
        ASSERT_EQ(load_topology(&topo_, xml.c_str(), &why), 0) << why;
        loaded_ = true;
    }
    void TearDown() override {
        if (loaded_) hwloc_topology_destroy(topo_);
    }
    GpuInfo gpu(int index, const char *bus) {
        GpuInfo g;
        g.index = index;
        EXPECT_TRUE(PciAddr::parse(bus, &g.pci));
        return g;
    }
    hwloc_topology_t topo_;
    bool loaded_ = false;
};

}  // namespace

TEST(PciAddr, ParsesBothForms) {
    PciAddr a;
    ASSERT_TRUE(PciAddr::parse("0001:65:00.1", &a));
    EXPECT_EQ(a.domain, 1u);
    EXPECT_EQ(a.bus, 0x65u);
    EXPECT_EQ(a.func, 1u);
    EXPECT_EQ(a.str(), "0001:65:00.1");
    ASSERT_TRUE(PciAddr::parse("65:1f.0", &a));
    EXPECT_EQ(a.str(), "0000:65:1f.0");
    EXPECT_FALSE(PciAddr::parse("mlx5_0", &a));
    EXPECT_FALSE(PciAddr::parse("0000:65:00.0x", &a));
}

TEST_F(TwoSocket, CpuAndMemory) {
    CpuInfo c;
    read_cpu(topo_, &c);
    EXPECT_EQ(c.packages, 2);
    EXPECT_EQ(c.numa_nodes, 2);
    EXPECT_EQ(c.cores, 2);
    EXPECT_EQ(c.pus, 2);
    ASSERT_EQ(c.numa.size(), 2u);
    EXPECT_EQ(c.numa[1].os_index, 1);
    EXPECT_EQ(c.numa[1].memory_bytes, 2ull << 30);
}

TEST_F(TwoSocket, NicsOnePerPciFunctionWithAliases) {
    std::vector<NicInfo> nics;
    read_nics(topo_, &nics);
    ASSERT_EQ(nics.size(), 2u);
    EXPECT_EQ(nics[0].name, "mlx5_0");
    EXPECT_EQ(nics[0].kind, "openfabrics");
    ASSERT_EQ(nics[0].aliases.size(), 1u);
    EXPECT_EQ(nics[0].aliases[0], "ib0");
    EXPECT_EQ(nics[0].pci.str(), "0000:11:00.0");
    EXPECT_EQ(nics[0].numa_node, 0);
    EXPECT_EQ(nics[1].name, "mlx5_1");
    EXPECT_EQ(nics[1].numa_node, 1);
}

TEST_F(TwoSocket, PciGpusWithoutDriver) {
    std::vector<PciAddr> g;
    read_pci_gpus(topo_, &g);
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0].str(), "0000:10:00.0");
    EXPECT_EQ(g[1].str(), "0000:81:00.0");
}

TEST_F(TwoSocket, GpuLocalityAndNearestNic) {
    NodeInfo node;
    read_nics(topo_, &node.nics);
    node.gpus = {gpu(0, "0000:10:00.0"), gpu(1, "0000:81:00.0")};
    locate_gpus(topo_, node.nics, &node.gpus);
    EXPECT_EQ(node.gpus[0].numa_node, 0);
    EXPECT_EQ(node.gpus[1].numa_node, 1);
    EXPECT_EQ(node.nics[(size_t)node.gpus[0].nearest_nic].name, "mlx5_0");
    EXPECT_EQ(node.nics[(size_t)node.gpus[1].nearest_nic].name, "mlx5_1");
    EXPECT_EQ(node.gpus[0].nic_distance, 2);  // GPU -> host bridge -> NIC
    EXPECT_EQ(node.gpus[1].nic_distance, 3);  // GPU -> switch -> host bridge -> NIC
    // Across sockets the path is longer than within.
    EXPECT_GT(pci_distance(topo_, node.gpus[0].pci, node.nics[1].pci), node.gpus[0].nic_distance);
    PciAddr absent;
    PciAddr::parse("0000:42:00.0", &absent);
    EXPECT_EQ(pci_distance(topo_, absent, node.nics[0].pci), -1);
}

TEST_F(TwoSocket, RailsFollowGpus) {
    NodeInfo node;
    read_nics(topo_, &node.nics);
    node.gpus = {gpu(0, "0000:10:00.0"), gpu(1, "0000:81:00.0")};
    locate_gpus(topo_, node.nics, &node.gpus);
    auto rails = assign_rails(node, 4);  // two ranks per GPU
    ASSERT_EQ(rails.size(), 4u);
    int want_gpu[] = {0, 1, 0, 1}, want_nic[] = {0, 1, 0, 1};
    for (int r = 0; r < 4; ++r) {
        EXPECT_EQ(rails[(size_t)r].local_rank, r);
        EXPECT_EQ(rails[(size_t)r].gpu, want_gpu[r]);
        EXPECT_EQ(rails[(size_t)r].nic, want_nic[r]);
    }
}

TEST(Rails, NoGpuRoundRobinOverPciNics) {
    NodeInfo node;
    NicInfo a, b, virt;
    a.name = "mlx5_0"; a.has_pci = true;
    virt.name = "veth0";  // no PCI: never a rail
    b.name = "mlx5_1"; b.has_pci = true;
    node.nics = {a, virt, b};
    auto rails = assign_rails(node, 3);
    EXPECT_EQ(rails[0].nic, 0);
    EXPECT_EQ(rails[1].nic, 2);
    EXPECT_EQ(rails[2].nic, 0);
    EXPECT_EQ(rails[0].gpu, -1);
}

TEST(Rails, NothingAtAll) {
    NodeInfo node;
    auto rails = assign_rails(node, 2);
    ASSERT_EQ(rails.size(), 2u);
    EXPECT_EQ(rails[1].gpu, -1);
    EXPECT_EQ(rails[1].nic, -1);
}

TEST(Rails, EquidistantNicsAreShared) {
    SKIP_WITHOUT_XML();
    // 4 GPUs and 2 NICs under one host bridge: ties spread the GPUs 2 and 2.
    std::string io = "<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[10-1f]\">";
    for (int g = 0; g < 4; ++g) io += pci(("0000:1" + std::to_string(g) + ":00.0").c_str(), kGpu, "");
    io += pci("0000:1a:00.0", kNic, nic_os(0).c_str()) + pci("0000:1b:00.0", kNic, nic_os(1).c_str()) + "</object>";
    std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                      "<topology version=\"2.0\"><object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" "
                      "complete_cpuset=\"0x1\" allowed_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" "
                      "allowed_nodeset=\"0x1\">" + socket(0, io) + "</object></topology>";
    hwloc_topology_t topo;
    std::string why;
    ASSERT_EQ(load_topology(&topo, xml.c_str(), &why), 0) << why;
    NodeInfo node;
    read_nics(topo, &node.nics);
    for (int g = 0; g < 4; ++g) {
        GpuInfo gi;
        gi.index = g;
        PciAddr::parse("0000:1" + std::to_string(g) + ":00.0", &gi.pci);
        node.gpus.push_back(gi);
    }
    locate_gpus(topo, node.nics, &node.gpus);
    hwloc_topology_destroy(topo);
    int per_nic[2] = {0, 0};
    for (const GpuInfo &g : node.gpus) {
        ASSERT_GE(g.nearest_nic, 0);
        ++per_nic[g.nearest_nic];
    }
    EXPECT_EQ(per_nic[0], 2);
    EXPECT_EQ(per_nic[1], 2);
}

TEST(Topology, BadXmlIsAnErrorNotACrash) {
    hwloc_topology_t topo;
    std::string why;
    EXPECT_NE(load_topology(&topo, "<not a topology", &why), 0);
    EXPECT_FALSE(why.empty());
}

TEST(Topology, ThisMachineLoads) {
    hwloc_topology_t topo;
    std::string why;
    ASSERT_EQ(load_topology(&topo, nullptr, &why), 0) << why;
    CpuInfo c;
    read_cpu(topo, &c);
    hwloc_topology_destroy(topo);
    EXPECT_GE(c.pus, 1);
    EXPECT_GE(c.numa_nodes, 1);
}
