// SPDX-License-Identifier: BSD-3-Clause
// sys_probe.cc - build facts, Open MPI, UCX, GPUDirect RDMA, /dev/shm; see sys_probe.h.
#include "topo/sys_probe.h"

#include <hwloc.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <sstream>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "topo/cuda_api.h"

#ifdef STRATA_HAVE_CUDA
#include <cuda.h>
#endif
#if __has_include(<ucp/api/ucp.h>)
#include <ucp/api/ucp.h>
#define STRATA_INFO_UCP_HEADERS 1
#endif

namespace strata {
namespace topo {

namespace {
std::string hwloc_version_string(unsigned v) {
    return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
}
}  // namespace

BuildInfo build_info() {
    BuildInfo b;
    b.strata_version = STRATA_VERSION_STRING;  // configure's AC_INIT (Makefile.am)
#ifdef STRATA_HAVE_CUDA
    b.cuda = true;
    b.cuda_version = std::to_string(CUDA_VERSION / 1000) + "." + std::to_string((CUDA_VERSION % 1000) / 10);
    b.cuda_ptx_isa = build_ptx_isa();
    b.cuda_driver_needed = build_driver_needed();
#endif
    // hwloc reports only its API version at run time (2.9.0 implements API 2.8.0).
    b.hwloc_compile = "API " + hwloc_version_string(HWLOC_API_VERSION);
#ifdef HWLOC_VERSION
    b.hwloc_compile = std::string(HWLOC_VERSION) + " (" + b.hwloc_compile + ")";
#endif
    b.hwloc_runtime = "API " + hwloc_version_string(hwloc_get_api_version());
#ifdef STRATA_INFO_UCP_HEADERS
    b.ucx_compile = std::to_string(UCP_API_MAJOR) + "." + std::to_string(UCP_API_MINOR);
#endif
#if defined(__clang__)
    b.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    b.compiler = "gcc " __VERSION__;
#endif
    return b;
}

std::string run_command(const std::string &cmd, int *status) {
    *status = -1;
    FILE *p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return "";
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int rc = ::pclose(p);
    *status = (rc != -1 && WIFEXITED(rc)) ? WEXITSTATUS(rc) : -1;
    return out;
}

void parse_ompi_info(const std::string &text, OmpiInfo *out) {
    std::istringstream in(text);
    std::string line;
    const std::string kVer = "ompi:version:full:";
    const std::string kCuda = "mca:mpi:base:param:mpi_built_with_cuda_support:value:";
    while (std::getline(in, line)) {
        if (line.compare(0, kVer.size(), kVer) == 0) {
            out->version = line.substr(kVer.size());
            out->found = true;
        } else if (line.compare(0, kCuda.size(), kCuda) == 0) {
            std::string v = line.substr(kCuda.size());
            out->cuda_aware = (v == "true" || v == "1") ? 1 : 0;
        }
    }
}

OmpiInfo probe_ompi(const std::string &ompi_info) {
    OmpiInfo o;
    int status = -1;
    std::string text = run_command(ompi_info + " --parsable --all 2>/dev/null", &status);
    parse_ompi_info(text, &o);
    if (!o.found)
        o.note = "no Open MPI: `" + ompi_info + " --parsable --all` gave no version (not on PATH?)";
    else if (o.cuda_aware < 0)
        o.note = "ompi_info does not say whether it is CUDA-aware";
    return o;
}

std::vector<std::string> parse_ucx_info_d(const std::string &text, bool *cuda_memory) {
    std::vector<std::string> tls;
    std::istringstream in(text);
    std::string line, tl;
    *cuda_memory = false;
    auto value = [](const std::string &l) {
        size_t c = l.find(':');
        std::string v = c == std::string::npos ? "" : l.substr(c + 1);
        size_t b = v.find_first_not_of(" \t");
        return b == std::string::npos ? std::string() : v.substr(b);
    };
    while (std::getline(in, line)) {
        if (line.find("Transport:") != std::string::npos) {
            tl = value(line);
        } else if (line.find("Device:") != std::string::npos && !tl.empty()) {
            tls.push_back(tl + "/" + value(line));
        } else if (line.find("memory types:") != std::string::npos && line.find("cuda") != std::string::npos) {
            *cuda_memory = true;
        }
    }
    return tls;
}

UcxInfo probe_ucx() {
    UcxInfo u;
#ifdef STRATA_INFO_UCP_HEADERS
    // In process: ask UCP itself which transports it would use and which memory
    // types it handles. Loaded at run time so strata-info runs without UCX.
    void *h = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
        auto get_version = reinterpret_cast<const char *(*)()>(dlsym(h, "ucp_get_version_string"));
        auto config_read = reinterpret_cast<ucs_status_t (*)(const char *, const char *, ucp_config_t **)>(
            dlsym(h, "ucp_config_read"));
        auto config_release = reinterpret_cast<void (*)(ucp_config_t *)>(dlsym(h, "ucp_config_release"));
        auto init = reinterpret_cast<ucs_status_t (*)(unsigned, unsigned, const ucp_params_t *,
                                                      const ucp_config_t *, ucp_context_h *)>(
            dlsym(h, "ucp_init_version"));
        auto query = reinterpret_cast<ucs_status_t (*)(ucp_context_h, ucp_context_attr_t *)>(
            dlsym(h, "ucp_context_query"));
        auto print = reinterpret_cast<void (*)(ucp_context_h, FILE *)>(dlsym(h, "ucp_context_print_info"));
        auto cleanup = reinterpret_cast<void (*)(ucp_context_h)>(dlsym(h, "ucp_cleanup"));
        ucp_config_t *cfg = nullptr;
        if (get_version && config_read && config_release && init && query && print && cleanup &&
            config_read(nullptr, nullptr, &cfg) == UCS_OK) {
            u.version = get_version();
            ucp_params_t params;
            std::memset(&params, 0, sizeof params);
            params.field_mask = UCP_PARAM_FIELD_FEATURES;
            params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
            ucp_context_h ctx = nullptr;
            ucs_status_t s = init(UCP_API_MAJOR, UCP_API_MINOR, &params, cfg, &ctx);
            config_release(cfg);
            if (s == UCS_OK) {
                u.found = true;
                u.method = "libucp";
                ucp_context_attr_t attr;
                std::memset(&attr, 0, sizeof attr);
                attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
                if (query(ctx, &attr) == UCS_OK)
                    u.cuda_memory = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
                // The resource lines end in "tl/device".
                char *buf = nullptr;
                size_t len = 0;
                FILE *mem = open_memstream(&buf, &len);
                if (mem != nullptr) {
                    print(ctx, mem);
                    std::fclose(mem);
                    std::istringstream in(std::string(buf, len));
                    std::free(buf);
                    std::string line;
                    while (std::getline(in, line)) {
                        if (line.find("resource") == std::string::npos) continue;
                        size_t sp = line.find_last_of(' ');
                        std::string tl = line.substr(sp + 1);
                        if (tl.find('/') != std::string::npos) u.transports.push_back(tl);
                    }
                }
                cleanup(ctx);
            } else {
                u.note = "ucp_init failed (status " + std::to_string((int)s) + ")";
            }
        }
        // libucp stays loaded: UCX's plugins do not expect to be unloaded.
        if (u.found && !u.transports.empty()) return u;
    }
#endif
    // No UCX headers at build time, or the in-process query said nothing: ucx_info.
    int status = -1;
    std::string ver = run_command("ucx_info -v 2>/dev/null", &status);
    if (status != 0) {
        if (u.note.empty()) u.note = "no UCX (libucp.so.0 and ucx_info not found)";
        return u;
    }
    size_t p = ver.find("Version ");
    if (p != std::string::npos) u.version = ver.substr(p + 8, ver.find('\n', p) - p - 8);
    std::string dev = run_command("ucx_info -d 2>/dev/null", &status);
    u.transports = parse_ucx_info_d(dev, &u.cuda_memory);
    u.found = status == 0;
    u.method = "ucx_info";
    return u;
}

GdrInfo probe_gdr(const char *proc_modules) {
    GdrInfo g;
    FILE *f = std::fopen(proc_modules, "r");
    if (f == nullptr) return g;
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr) {
        char name[128] = {0};
        if (std::sscanf(line, "%127s", name) != 1) continue;
        if (std::strcmp(name, "nvidia_peermem") == 0 || std::strcmp(name, "nv_peer_mem") == 0) {
            g.loaded = true;
            g.module = name;
            break;
        }
    }
    std::fclose(f);
    return g;
}

ShmSpace probe_shm(const char *path) {
    ShmSpace s;
    s.path = path;
    struct statvfs vfs;
    if (::statvfs(path, &vfs) != 0) {
        s.note = std::string(path) + ": " + std::strerror(errno);
        return s;
    }
    s.ok = true;
    s.total_bytes = (uint64_t)vfs.f_blocks * vfs.f_frsize;
    s.free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    return s;
}

}  // namespace topo
}  // namespace strata
