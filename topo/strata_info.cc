// strata-info: what this node offers strata, and a live self-test of its paths.
#include "topo/info_report.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void usage(FILE *f) {
    std::fprintf(f,
                 "usage: strata-info [--json] [--selftest] [--ranks-per-node N] [--ompi-info PATH]\n"
                 "\n"
                 "Reports what this node offers strata: build, Open MPI, CPUs and memory,\n"
                 "GPUs (CUDA driver and NVML loaded at run time), NICs and the rail each\n"
                 "local rank would use, UCX, GPUDirect RDMA and /dev/shm.\n"
                 "\n"
                 "  --json              machine-readable output (schema \"strata-info/1\")\n"
                 "  --selftest          also check, in two forked processes, that a strata\n"
                 "                      shared-memory segment maps in both and, on each GPU,\n"
                 "                      that CUDA IPC memory and events work; exit status 1\n"
                 "                      if a check fails\n"
                 "  --ranks-per-node N  rail table for N local ranks (default: one per GPU, or 1)\n"
                 "  --ompi-info PATH    the ompi_info to ask (default: ompi_info on PATH)\n"
                 "  --help              this text\n");
}

}  // namespace

int main(int argc, char **argv) {
    bool json = false, selftest = false;
    int rpn = 0;
    std::string ompi_info = "ompi_info";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--json") json = true;
        else if (a == "--selftest") selftest = true;
        else if (a == "--help" || a == "-h") { usage(stdout); return 0; }
        else if ((a == "--ranks-per-node" || a == "--ompi-info") && i + 1 < argc) {
            const char *v = argv[++i];
            if (a == "--ompi-info") { ompi_info = v; continue; }
            char *end = nullptr;
            long n = std::strtol(v, &end, 10);
            if (end == v || *end != '\0' || n < 1 || n > 4096) {
                std::fprintf(stderr, "strata-info: --ranks-per-node wants a number from 1 to 4096\n");
                return 2;
            }
            rpn = (int)n;
        } else {
            std::fprintf(stderr, "strata-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    strata::topo::Report r;
    bool ok = true;
    if (selftest) {
        // Before anything initialises CUDA in this process: the checks fork.
        strata::topo::SelftestOptions opt;
        r.has_selftest = true;
        ok = strata::topo::run_selftest(opt, &r.selftest);
    }
    strata::topo::gather_report(&r, rpn, nullptr, ompi_info);
    std::string out = json ? strata::topo::render_json(r) : strata::topo::render_table(r);
    std::fputs(out.c_str(), stdout);
    return ok ? 0 : 1;
}
