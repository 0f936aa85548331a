// src/common.cc - logging and status names.
#include "common.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace strata {

static strata_log_fn g_logger = nullptr;

void log(int level, const char *fmt, ...) {
    char msg[512];
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

Status fail(Status status, const char *where, int err) {
    if (err) {
        log(0, "%s failed: %s", where, strerror(err));
    } else {
        log(0, "%s failed: %s", where, status_name(status));
    }
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
    }
    return "unknown status";
}

}  // namespace strata

extern "C" void strata_set_logger(strata_log_fn fn) { strata::g_logger = fn; }
