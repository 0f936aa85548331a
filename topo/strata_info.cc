// SPDX-License-Identifier: BSD-3-Clause
// strata-info: what this node offers strata, and a live self-test of its paths.
#include "topo/info_report.h"
#include "topo/json_writer.h"
#include "topo/sys_probe.h"

// configure's results (STRATA_OMPI_VERSION, _SERIES, _COLL_API); no Open MPI header here.
#include "strata_autoconf.h"

// STRATA_GIT_COMMIT: the commit this was built from (made by make, Makefile.am).
#include "strata_commit.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Which Open MPI this build of strata is for, which one is installed, and what that
// Open MPI makes of the component it finds. The component of one series never loads
// into the other (different coll interface and libraries); this says so before a
// user meets it in a job.
struct SeriesCheck {
    std::string built_version = STRATA_OMPI_VERSION;  // "4.1.4"
    std::string built_series = STRATA_OMPI_SERIES;    // "4.1"
    std::string built_api = STRATA_OMPI_COLL_API;     // "2.0.0"
    std::string installed;          // ompi_info's version, "" when none answered
    std::string installed_series;   // "5.0"
    int match = -1;                 // 1 same major series, 0 not, -1 unknown (no Open MPI)
    bool listed = false;            // ompi_info lists coll strata
    std::string listed_api;         // its coll API, e.g. "2.4.0"
    std::string load_error;         // why Open MPI did not load it, if it said
    std::string note;
    std::string component_path;     // Open MPI's mca_base_component_path, "" if unknown
    std::string component_file;     // the first mca_coll_strata.so on it, "" if none
    bool loads = false;             // the component would load into a job here
    std::string problem;            // why not, one line (empty when it loads)
};

std::string series_of(const std::string &version) {
    size_t a = version.find('.');
    if (a == std::string::npos) return version;
    size_t b = version.find('.', a + 1);
    return version.substr(0, b);
}

std::string major_of(const std::string &version) { return version.substr(0, version.find('.')); }

bool is_dir(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Whether the component would load into a job here, and if not, why: what ompi_info
// listed or said (check_series), then where Open MPI looks (mca_base_component_path,
// with the environment's and mca-params.conf's settings, as a job sees them).
void component_verdict(SeriesCheck *c, const std::string &ompi_info) {
    if (c->match < 0) {
        c->problem = "no Open MPI answered (" + ompi_info + " did not run): strata is an Open MPI "
                     "component and loads nowhere without one";
        return;
    }
    int status = -1;
    std::string text = strata::topo::run_command(
        ompi_info + " --parsable --param mca base --level 9 2>/dev/null", &status);
    std::istringstream in(text);
    std::string line;
    const std::string key = "mca:mca:base:param:mca_base_component_path:value:";
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) != 0) continue;
        std::string v = line.substr(key.size());
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
        c->component_path = v;
        break;
    }
    // The folders in order; Open MPI 4.1 stops at the first one that does not exist.
    std::vector<std::string> dirs;
    std::string missing_before;  // a missing folder ahead of the one holding the .so
    for (size_t at = 0; at <= c->component_path.size() && !c->component_path.empty();) {
        size_t colon = c->component_path.find(':', at);
        if (colon == std::string::npos) colon = c->component_path.size();
        std::string d = c->component_path.substr(at, colon - at);
        at = colon + 1;
        if (d.empty()) continue;
        dirs.push_back(d);
        if (c->component_file.empty() && is_file(d + "/mca_coll_strata.so")) c->component_file = d + "/mca_coll_strata.so";
        if (c->component_file.empty() && missing_before.empty() && !is_dir(d)) missing_before = d;
    }
    if (c->match == 0) {
        c->problem = "this strata was built for Open MPI " + c->built_series + ", the installed one is " +
                     c->installed + " (MISMATCH above)";
    } else if (!c->load_error.empty()) {
        c->problem = "Open MPI could not open it: " + c->load_error;
    } else if (c->listed) {
        c->loads = true;
    } else if (c->component_file.empty()) {
        c->problem = "no mca_coll_strata.so in Open MPI's component path (" +
                     (c->component_path.empty() ? std::string("unknown") : c->component_path) +
                     "): install it (make install, or make install-user) or add its folder to "
                     "mca_base_component_path";
    } else if (!missing_before.empty() && c->installed_series == "4.1") {
        c->problem = c->component_file + " is on the component path after " + missing_before +
                     ", which does not exist: Open MPI " + c->installed_series +
                     " stops its search there (list only folders that exist)";
    } else {
        c->problem = "Open MPI found " + c->component_file + " but does not list coll strata (it was "
                     "excluded, e.g. by the coll variable, or failed to register; ompi_info --param coll "
                     "strata --level 9 shows its messages)";
    }
}

SeriesCheck check_series(const strata::topo::Report &r, const std::string &ompi_info) {
    SeriesCheck c;
    if (r.ompi.found) {
        c.installed = r.ompi.version;
        c.installed_series = series_of(c.installed);
        c.match = major_of(c.installed) == major_of(c.built_version) ? 1 : 0;
    }
    int status = -1;
    std::string text = strata::topo::run_command(ompi_info + " --parsable 2>&1", &status);
    std::istringstream in(text);
    std::string line;
    const std::string api_key = "mca:coll:strata:version:\"api:";
    while (std::getline(in, line)) {
        size_t k = line.find(api_key);
        if (k != std::string::npos) {
            c.listed = true;
            std::string v = line.substr(k + api_key.size());
            c.listed_api = v.substr(0, v.find('"'));
        } else if (c.load_error.empty() && line.find("unable to open mca_coll_strata") != std::string::npos) {
            // "[host:pid] mca_base_component_repository_open: unable to open mca_coll_strata: <why>"
            size_t at = line.find("unable to open");
            c.load_error = line.substr(at);
        }
    }
    if (c.match < 0) {
        c.note = "no Open MPI answered (" + ompi_info + "): cannot tell whether this build fits";
    } else if (c.match == 0) {
        c.note = "MISMATCH: this strata was built for Open MPI " + c.built_series + " (coll API " +
                 c.built_api + ") but Open MPI " + c.installed +
                 " is installed; it will not load there. Rebuild strata against Open MPI " +
                 c.installed_series + " (./configure --with-ompi=PREFIX)";
    } else if (!c.load_error.empty()) {
        c.note = "Open MPI " + c.installed + " found a mca_coll_strata.so on its component path but "
                 "could not load it (a build for another Open MPI, or a library missing); this build "
                 "itself fits Open MPI " + c.installed_series;
    } else if (series_of(c.installed) != c.built_series) {
        c.note = "same major series, built against " + c.built_version + ", installed " + c.installed +
                 ": rebuilding against the installed one is safer";
    } else if (c.listed && c.listed_api != c.built_api) {
        c.note = "ompi_info lists a coll strata with API " + c.listed_api + ", not this build's " +
                 c.built_api + ": an older build is installed where Open MPI looks";
    } else {
        c.note = "this build matches the installed Open MPI";
    }
    component_verdict(&c, ompi_info);
    return c;
}

std::string series_table(const SeriesCheck &c) {
    char buf[512];
    std::string o = "Open MPI series\n";
    std::snprintf(buf, sizeof buf, "  %-22s %s (Open MPI %s, coll API %s)\n", "built for",
                  c.built_series.c_str(), c.built_version.c_str(), c.built_api.c_str());
    o += buf;
    std::snprintf(buf, sizeof buf, "  %-22s %s\n", "installed",
                  c.installed.empty() ? "none found" : ("Open MPI " + c.installed).c_str());
    o += buf;
    std::string comp = c.listed ? "coll strata listed by ompi_info (API " + c.listed_api + ")"
                                : "coll strata not listed by ompi_info (not on its component path, or refused)";
    std::snprintf(buf, sizeof buf, "  %-22s %s\n", "component", comp.c_str());
    o += buf;
    if (!c.load_error.empty()) {
        std::snprintf(buf, sizeof buf, "  %-22s %.300s\n", "load error", c.load_error.c_str());
        o += buf;
    }
    if (c.loads) {
        std::snprintf(buf, sizeof buf, "  %-22s yes%s%s\n", "loads", c.component_file.empty() ? "" : ", ",
                      c.component_file.c_str());
    } else {
        std::snprintf(buf, sizeof buf, "  %-22s NO: %.400s\n", "loads", c.problem.c_str());
    }
    o += buf;
    o += "  " + c.note + "\n";
    return o;
}

// "ompi_series": {...}, for the JSON report (an extra member of the top object).
std::string series_json_member(const SeriesCheck &c) {
    strata::topo::JsonWriter w;
    w.begin_object().key("ompi_series").begin_object()
        .kv("built_for", c.built_series).kv("built_version", c.built_version).kv("coll_api", c.built_api)
        .kv_or_null("installed", c.installed).key("match");
    if (c.match < 0) w.null(); else w.boolean(c.match > 0);
    w.kb("component_listed", c.listed).kv_or_null("component_api", c.listed_api)
        .kv_or_null("load_error", c.load_error).kv("note", c.note)
        .kv_or_null("component_path", c.component_path).kv_or_null("component_file", c.component_file)
        .kb("component_loads", c.loads).kv_or_null("component_problem", c.problem)
        .end_object().end_object();
    const std::string &t = w.text();
    return t.substr(1, t.size() - 2);
}

void usage(FILE *f) {
    std::fprintf(f,
                 "usage: strata-info [--json] [--selftest] [--ranks-per-node N] [--ompi-info PATH]\n"
                 "\n"
                 "Reports what this node offers strata: build, Open MPI (the series strata\n"
                 "was built for, and whether the installed one matches), CPUs and memory,\n"
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
                 "  --version           strata's version and the commit it was built from\n"
                 "  --help              this text\n"
                 "\n"
                 "Exit status: 0 the component loads here; 1 a self-test check failed;\n"
                 "2 bad arguments; 3 the component would not load into a job here (the\n"
                 "report says why, and so does one line on stderr).\n");
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
        else if (a == "--version") {
            std::printf("strata-info (strata) %s, commit %s\n", STRATA_VERSION_STRING, STRATA_GIT_COMMIT);
            return 0;
        }
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
    SeriesCheck sc = check_series(r, ompi_info);
    if (json) {
        size_t end = out.rfind('}');
        if (end != std::string::npos) out.insert(end, "," + series_json_member(sc));
    } else {
        size_t at = out.find("\nCPU and memory\n");
        if (at != std::string::npos) out.insert(at + 1, series_table(sc) + "\n");
        else out += "\n" + series_table(sc);
    }
    std::fputs(out.c_str(), stdout);
    if (!ok) return 1;
    if (!sc.loads) {
        std::fflush(stdout);
        std::fprintf(stderr, "strata-info: the component would not load: %s\n", sc.problem.c_str());
        return 3;
    }
    return 0;
}
