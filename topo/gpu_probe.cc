// SPDX-License-Identifier: BSD-3-Clause
// gpu_probe.cc - CUDA driver / NVML discovery at run time; see gpu_probe.h.
#include "topo/gpu_probe.h"

#include "topo/cuda_api.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <sys/stat.h>

namespace strata {
namespace topo {

std::string cuda_version_string(int v) {
    if (v <= 0) return "";
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

void probe_cuda(NodeInfo *node, CudaStatus *st) {
    node->gpus.clear();
    node->peer_access.clear();
    static cu::Driver drv;  // stays loaded: unloading libcuda is not supported
    std::string why;
    if (!drv.load(&why)) {
        st->note = why;
        return;
    }
    cu::CUresult rc = drv.Init(0);
    if (rc != cu::SUCCESS) {
        st->note = "CUDA driver present but unusable: " + drv.error("cuInit", rc);
        return;
    }
    st->driver_found = true;
    drv.DriverGetVersion(&st->driver_version);
    int n = 0;
    if ((rc = drv.DeviceGetCount(&n)) != cu::SUCCESS) {
        st->note = drv.error("cuDeviceGetCount", rc);
        return;
    }
    if (n == 0) st->note = "CUDA driver found, no GPU visible (check CUDA_VISIBLE_DEVICES)";
    std::vector<cu::CUdevice> devs((size_t)n);
    for (int i = 0; i < n; ++i) {
        GpuInfo g;
        g.index = i;
        cu::CUdevice d = 0;
        drv.DeviceGet(&d, i);
        devs[(size_t)i] = d;
        char name[256] = {0};
        if (drv.DeviceGetName(name, sizeof name - 1, d) == cu::SUCCESS) g.name = name;
        size_t mem = 0;
        if (drv.DeviceTotalMem(&mem, d) == cu::SUCCESS) g.memory_bytes = mem;
        int v = 0;
        if (drv.DeviceGetAttribute(&v, cu::ATTR_CC_MAJOR, d) == cu::SUCCESS) g.cc_major = v;
        if (drv.DeviceGetAttribute(&v, cu::ATTR_CC_MINOR, d) == cu::SUCCESS) g.cc_minor = v;
        if (drv.DeviceGetAttribute(&v, cu::ATTR_PCI_DOMAIN_ID, d) == cu::SUCCESS) g.pci.domain = (unsigned)v;
        if (drv.DeviceGetAttribute(&v, cu::ATTR_PCI_BUS_ID, d) == cu::SUCCESS) g.pci.bus = (unsigned)v;
        if (drv.DeviceGetAttribute(&v, cu::ATTR_PCI_DEVICE_ID, d) == cu::SUCCESS) g.pci.dev = (unsigned)v;
        // As the memory domain decides it (src/mem/cuda_domain.cc): entry points and attribute.
        g.stream_memops = drv.StreamWaitValue64 && drv.StreamWriteValue64 && drv.MemHostRegister &&
                          drv.DeviceGetAttribute(&v, cu::ATTR_CAN_USE_64_BIT_STREAM_MEM_OPS, d) == cu::SUCCESS &&
                          v == 1;
        node->gpus.push_back(g);
    }
    node->peer_access.assign((size_t)n, std::vector<int>((size_t)n, -1));
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            if (i == j) {
                node->peer_access[(size_t)i][(size_t)j] = 1;
                continue;
            }
            int can = 0;
            if (drv.DeviceCanAccessPeer(&can, devs[(size_t)i], devs[(size_t)j]) == cu::SUCCESS)
                node->peer_access[(size_t)i][(size_t)j] = can ? 1 : 0;
        }
}

namespace {

// NVML types we need: opaque device, and nvmlPciInfo_t's layout (stable since NVML 1).
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
struct nvmlPciInfo_t {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
};
const int kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper); older GPUs fail beyond theirs

}  // namespace

void probe_nvlink(NodeInfo *node, NvmlStatus *st) {
    size_t n = node->gpus.size();
    node->nvlinks.assign(n, std::vector<int>(n, -1));
    if (n == 0) {
        st->note = "no GPU";
        return;
    }
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        st->note = "no NVML (libnvidia-ml.so.1 not found): NVLink unknown";
        return;
    }
    auto init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(h, "nvmlInit_v2"));
    auto by_bus = reinterpret_cast<nvmlReturn_t (*)(const char *, nvmlDevice_t *)>(
        dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    auto state = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int *)>(
        dlsym(h, "nvmlDeviceGetNvLinkState"));
    auto remote = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlPciInfo_t *)>(
        dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2"));
    auto shutdown = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(h, "nvmlShutdown"));
    if (!init || !by_bus || !state || !remote || !shutdown) {
        st->note = "NVML lacks the NVLink queries";
        dlclose(h);
        return;
    }
    if (init() != 0) {
        st->note = "nvmlInit failed";
        dlclose(h);
        return;
    }
    st->found = true;
    for (size_t i = 0; i < n; ++i) {
        nvmlDevice_t dev;
        if (by_bus(node->gpus[i].pci.str().c_str(), &dev) != 0) continue;
        for (size_t j = 0; j < n; ++j) node->nvlinks[i][j] = 0;
        for (unsigned l = 0; l < (unsigned)kNvmlMaxLinks; ++l) {
            int active = 0;
            if (state(dev, l, &active) != 0 || !active) continue;
            nvmlPciInfo_t pci;
            std::memset(&pci, 0, sizeof pci);
            if (remote(dev, l, &pci) != 0) continue;
            PciAddr far;
            far.domain = pci.domain;
            far.bus = pci.bus;
            far.dev = pci.device;
            bool to_gpu = false;
            for (size_t j = 0; j < n; ++j)
                if (node->gpus[j].pci == far) {
                    ++node->nvlinks[i][j];
                    to_gpu = true;
                }
            if (!to_gpu) ++node->gpus[i].nvswitch_links;
        }
    }
    shutdown();
    dlclose(h);
}

MpsStatus probe_mps() {
    MpsStatus m;
    const char *dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
    m.pipe_dir = (dir != nullptr && dir[0] != '\0') ? dir : "/tmp/nvidia-mps";
    struct stat sb;
    std::string control = m.pipe_dir + "/control";
    m.running = ::stat(control.c_str(), &sb) == 0 && S_ISFIFO(sb.st_mode);
    return m;
}

}  // namespace topo
}  // namespace strata
