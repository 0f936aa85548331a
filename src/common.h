/* SPDX-License-Identifier: BSD-3-Clause */
// src/common.h - status codes, logging and the check macro shared by the core.
#ifndef STRATA_COMMON_H
#define STRATA_COMMON_H

#include <cstddef>
#include <cstdint>

#include "strata.h"

namespace strata {

using Status = strata_status_t;

// Messages go to the glue's logger (or stderr when none is set). Level 0 is a
// warning every user sees; 1 and 2 follow coll_strata_verbose.
void log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// A warning every user sees, under its topic of coll/strata/help-coll-strata.txt: the
// glue's warner hands it to Open MPI's help system, which prints it once and counts the
// processes that sent the same topic; without a warner it is a level-0 log line. Give
// it the same text on every rank that meets the same problem (the processes counted
// are not shown), naming a rank only when one rank speaks for its communicator.
void warn(const char *topic, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Warns "where failed: status" (topic "operation failed") and returns status, so a
// failure site reads `return fail(STRATA_ERR_SYS, "shm_open", errno)`.
Status fail(Status status, const char *where, int err = 0);

const char *status_name(Status s);

// Whether this thread's current call is Open MPI's own (strata_log_quiet): log()
// drops its level-2 lines. A queued call logs its end under its own value.
bool log_quiet();
void set_log_quiet(bool quiet);

inline size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

// Even split of n items into parts: part i gets [offset, offset + length).
struct Split {
    size_t offset;
    size_t length;
};
inline Split split(size_t n, size_t parts, size_t i) {
    const size_t base = n / parts, rem = n % parts;
    return {i * base + (i < rem ? i : rem), base + (i < rem ? 1 : 0)};
}

}  // namespace strata

// Propagates a failed status to the caller after logging where it happened.
#define STRATA_CHECK(expr)                                                              \
    do {                                                                                \
        const ::strata::Status strata_check_s_ = (expr);                                \
        if (strata_check_s_ < 0) {                                                      \
            ::strata::log(1, "%s:%d: %s -> %s", __FILE__, __LINE__, #expr,              \
                          ::strata::status_name(strata_check_s_));                      \
            return strata_check_s_;                                                     \
        }                                                                               \
    } while (0)

#endif
