/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * selftest.h - strata-info --selftest: two forked processes check the paths
 * strata's intra-node channels rely on:
 *   shm.*        a segment made the strata way (topo/shm_segment.h) maps in
 *                both, a pattern written by one reads back in the other, and
 *                nothing is left in /dev/shm once both have mapped it; shm.proc
 *                says whether the importer could open the unnamed segment
 *                through the exporter's /proc/<pid>/fd (SKIP: strata falls back
 *                to a named segment on this node);
 *   gpuN.*       on each GPU: a CUDA IPC memory handle exported by one process
 *                opens in the other, a copy through it is exact, and an IPC
 *                event recorded by the exporter orders the importer's read.
 * The CUDA driver is loaded at run time in the children only; the calling
 * process must not have initialised CUDA (fork after cuInit is undefined).
 */
#ifndef STRATA_TOPO_SELFTEST_H
#define STRATA_TOPO_SELFTEST_H

#include <string>
#include <vector>

namespace strata {
namespace topo {

struct CheckResult {
    std::string name;       // "shm.map", "gpu0.ipc_event", ...
    std::string status;     // "OK", "FAIL" or "SKIP"
    double ms = 0.0;        // wall time of the check
    std::string reason;     // why it failed or was skipped; "" when OK
};

struct SelftestOptions {
    bool shm = true;
    bool gpu = true;
    size_t shm_bytes = 1 << 20;
    size_t gpu_bytes = 64 << 20;    // large enough that an unordered read would see stale data
    int timeout_s = 60;             // both children are killed after this
    const char *shm_dir = nullptr;  // as strata_config_t::shm_dir
};

// Runs the checks; never throws, never hangs past timeout_s. true if no FAIL.
bool run_selftest(const SelftestOptions &opt, std::vector<CheckResult> *results);

}  // namespace topo
}  // namespace strata

#endif
