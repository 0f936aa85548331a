// SPDX-License-Identifier: BSD-3-Clause
// src/common.cc - logging and status names.
#include "common.h"

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace strata {

static strata_log_fn g_logger = nullptr;
static strata_warn_fn g_warner = nullptr;
static int g_max_level = INT_MAX;
static thread_local bool t_quiet = false;

bool log_quiet() { return t_quiet; }
void set_log_quiet(bool quiet) { t_quiet = quiet; }

void log(int level, const char *fmt, ...) {
    if (level > 0 && (level > g_max_level || (level >= 2 && t_quiet))) return;
    char msg[1024];  // the verbose-1 summary of a communicator is the longest
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g_logger) {
        g_logger(level, msg);  // the glue filters by coll_strata_verbose
    } else if (level <= 0) {
        fprintf(stderr, "strata: %s\n", msg);
    }
}

void warn(const char *topic, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g_warner) {
        g_warner(topic, msg);
    } else {
        log(0, "%s", msg);
    }
}

Status fail(Status status, const char *where, int err) {
    warn("operation failed", "%s failed: %s", where, err ? strerror(err) : status_name(status));
    return status;
}

const char *status_name(Status s) {
    switch (s) {
        case STRATA_OK: return "ok";
        case STRATA_FALLBACK: return "fallback";
        case STRATA_ERR_ARG: return "invalid argument";
        case STRATA_ERR_NOMEM: return "out of memory";
        case STRATA_ERR_SYS: return "system error";
        case STRATA_ERR_COMM: return "communication error";
        case STRATA_ERR_UNSUPPORTED: return "unsupported";
        case STRATA_ERR_DEVICE: return "device error";
        case STRATA_ERR_INTERNAL: return "internal error";
        case STRATA_ERR_BUFFER: return "invalid buffer";
        case STRATA_ERR_TRUNCATE: return "ranks disagree on the size";
        case STRATA_ERR_PEER: return "another rank failed";
        case STRATA_ERR_TIMEOUT: return "timed out";
        case STRATA_ERR_BROKEN: return "an earlier call failed";
    }
    return "unknown status";
}

}  // namespace strata

extern "C" void strata_set_logger(strata_log_fn fn) { strata::g_logger = fn; }
extern "C" void strata_set_warner(strata_warn_fn fn) { strata::g_warner = fn; }
extern "C" void strata_set_log_level(int max_level) { strata::g_max_level = max_level; }
extern "C" void strata_log_quiet(int quiet) { strata::t_quiet = quiet != 0; }
extern "C" int strata_log_is_quiet(void) { return strata::t_quiet ? 1 : 0; }

extern "C" const char *strata_status_name(strata_status_t status) { return strata::status_name(status); }
