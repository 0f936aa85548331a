/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_component.c - the component struct and every MCA variable.
 *
 * All tunables are registered here, once, with help text, type, level and (for
 * choices) an enum of names, so that `ompi_info --param coll strata --level 9`
 * documents the component. Values reach the core through mca_coll_strata_fill_config.
 */
#include "coll_strata.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "strata_device.h"

/* configure's AC_INIT, passed to every compile (Makefile.am, STRATA_VERSION_CPPFLAGS) */
#if !defined(STRATA_VERSION_STRING) || !defined(STRATA_VERSION_MAJOR)
#error "strata's version comes from configure: build through the Makefile"
#endif
const char *mca_coll_strata_component_version_string =
    "strata collective component version " STRATA_VERSION_STRING;

static int mca_coll_strata_register(void);
static int mca_coll_strata_open(void);
static int mca_coll_strata_close(void);

mca_coll_strata_component_t mca_coll_strata_component = {
    .super = {
        .collm_version = {
            MCA_COLL_STRATA_BASE_VERSION,
            .mca_component_name = "strata",
            /* strata's own version (configure's AC_INIT), not Open MPI's */
            MCA_BASE_MAKE_VERSION(component, STRATA_VERSION_MAJOR, STRATA_VERSION_MINOR,
                                  STRATA_VERSION_RELEASE),
            .mca_open_component = mca_coll_strata_open,
            .mca_close_component = mca_coll_strata_close,
            .mca_register_component_params = mca_coll_strata_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_strata_init_query,
        .collm_comm_query = mca_coll_strata_comm_query,
    },
    /* Above hcoll (90), fca (80), cuda (78), self (75), sync (50), tuned (30),
     * libnbc/basic (10): strata must see device buffers before any of them. */
    .priority = 95,
    .enable = true,
    /* the core's settings take their defaults from strata_config_defaults() at
     * registration (mca_coll_strata_register): the numbers live in one place */
    .output = -1,
};

/* coll_strata_rules_file: the path only (the core reads the file at team creation) */
static char *mca_coll_strata_rules_file;

/* Registers <coll>_algorithm with an enum {auto, <the core's table>}. */
static void register_algorithm_var(const mca_base_component_t *c, strata_coll_t coll)
{
    char name[64], desc[2048];
    mca_base_var_enum_value_t *values;
    mca_base_var_enum_t *en = NULL;
    int n = strata_algorithm_count(coll), i;
    size_t len;

    values = calloc((size_t) n + 3, sizeof(*values));
    if (NULL == values) {
        return;
    }
    values[0].value = STRATA_ALG_AUTO;
    values[0].string = "auto";
    len = (size_t) snprintf(desc, sizeof(desc),
                            "Algorithm for %s: auto (built-in rules by message size, nodes and "
                            "ranks per node), base (every call to the component strata replaced, "
                            "as 'base' in a rules file)", strata_coll_name(coll));
    for (i = 0; i < n; ++i) {
        const char *d = strata_algorithm_description(coll, i);
        values[i + 1].value = i;
        values[i + 1].string = strata_algorithm_name(coll, i);
        if (len < sizeof(desc)) {
            len += (size_t) snprintf(desc + len, sizeof(desc) - len, ", %s%s%s%s",
                                     values[i + 1].string, d ? " (" : "", d ? d : "", d ? ")" : "");
        }
    }
    values[n + 1].value = STRATA_ALG_BASE;
    values[n + 1].string = "base";
    if (0 == n && len < sizeof(desc)) {
        snprintf(desc + len, sizeof(desc) - len,
                 "; strata has no algorithm for it yet, so every call goes to the previous module");
    }
    snprintf(name, sizeof(name), "%s_algorithm", strata_coll_name(coll));

    if (OPAL_SUCCESS == mca_base_var_enum_create(name, values, &en)) {
        (void) mca_base_component_var_register(c, name, desc, MCA_BASE_VAR_TYPE_INT, en, 0, 0,
                                               OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
                                               &mca_coll_strata_component.algorithm[coll]);
        OBJ_RELEASE(en);   /* the variable holds its own reference */
    }
    free(values);          /* strings were copied by mca_base_var_enum_create */
}

/* An enum-valued variable (values end with a NULL string). */
static void register_enum_var(const mca_base_component_t *c, const char *name, const char *desc,
                              const mca_base_var_enum_value_t *values, int level, int *storage)
{
    mca_base_var_enum_t *en = NULL;
    if (OPAL_SUCCESS == mca_base_var_enum_create(name, values, &en)) {
        (void) mca_base_component_var_register(c, name, desc, MCA_BASE_VAR_TYPE_INT, en, 0, 0,
                                               level, MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
        OBJ_RELEASE(en);
    }
}

/* Every numeric variable is checked when read: a value out of range gets one line
 * naming the valid range and the default is used (never the nearest extreme: a
 * clamp of "-1" to the largest segment once took gigabytes of shared memory). */
#define STRATA_MAX_SEGMENT ((size_t) 1 << 30)
static void warn_range(const char *name, const char *was, const char *range, const char *now)
{
    mca_coll_strata_warn("value out of range", "coll_strata_%s=%s is out of range (valid: %s); using the default, %s",
                         name, was, range, now);
}

static void check_size(const char *name, size_t *v, size_t lo, size_t hi, size_t dflt)
{
    char was[32], range[64], now[32];
    if (*v >= lo && *v <= hi) {
        return;
    }
    /* a negative value given to a size variable arrives as a huge one */
    if (*v > ((size_t) 1 << 62)) {
        snprintf(was, sizeof was, "%lld", (long long) *v);
    } else {
        snprintf(was, sizeof was, "%zu", *v);
    }
    snprintf(range, sizeof range, "%zu to %zu", lo, hi);
    snprintf(now, sizeof now, "%zu", dflt);
    *v = dflt;
    warn_range(name, was, range, now);
}

static void check_int(const char *name, int *v, int lo, int hi, int dflt)
{
    char was[32], range[64], now[32];
    if (*v >= lo && *v <= hi) {
        return;
    }
    snprintf(was, sizeof was, "%d", *v);
    snprintf(range, sizeof range, "%d to %d", lo, hi);
    snprintf(now, sizeof now, "%d", dflt);
    *v = dflt;
    warn_range(name, was, range, now);
}

/* Open MPI refuses an algorithm name it does not know with a message of its own (which
 * a short job may end before it is printed) and leaves the default: say so here too,
 * from the value as given (mpirun --mca and OMPI_MCA_ both reach the environment). */
static void warn_unknown_algorithm(strata_coll_t coll, int alg)
{
    char env[96], known[160] = "";
    const char *given;
    char *end = NULL;
    long as_number;
    int i;

    snprintf(env, sizeof env, "OMPI_MCA_coll_strata_%s_algorithm", strata_coll_name(coll));
    given = getenv(env);
    if (NULL == given || STRATA_ALG_AUTO != alg || 0 == strcmp(given, "auto")) {
        return;
    }
    as_number = strtol(given, &end, 10);
    if (NULL != end && end != given && '\0' == *end && as_number == STRATA_ALG_AUTO) {
        return;
    }
    for (i = 0; i < strata_algorithm_count(coll); ++i) {
        if (0 == strcmp(given, strata_algorithm_name(coll, i))) {
            return;
        }
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 strata_algorithm_name(coll, i));
    }
    mca_coll_strata_warn("unknown algorithm", "coll_strata_%s_algorithm=%s is not an algorithm of %s (known: auto, "
                         "base, %s); using auto", strata_coll_name(coll), given, strata_coll_name(coll), known);
}

static void check_ranges(void)
{
    mca_coll_strata_component_t *cs = &mca_coll_strata_component;
    strata_config_t d;
    int coll;
    strata_config_defaults(&d);
    check_int("verbose", &cs->verbose, 0, 100, d.verbose);
    check_int("node_size", &cs->node_size, 0, 1 << 20, d.node_size);
    check_size("segment_size", &cs->segment_size, 64, STRATA_MAX_SEGMENT, d.segment_size);
    check_size("small_msg_size", &cs->small_msg_size, 0, STRATA_MAX_SEGMENT, d.small_msg_size);
    check_size("zero_copy_size", &cs->zero_copy_size, 0, (size_t) 1 << 50, d.zero_copy_size);
    if (cs->device_segment_size != 0) {   /* 0: segment_size on GPU teams too */
        check_size("device_segment_size", &cs->device_segment_size, 64, STRATA_MAX_SEGMENT, d.device_segment_size);
    }
    if (cs->device_multinode_segment_size != 0) {
        check_size("device_multinode_segment_size", &cs->device_multinode_segment_size, 64, STRATA_MAX_SEGMENT,
                   d.device_multinode_segment_size);
    }
    check_int("ipc_cache_size", &cs->ipc_cache_size, 0, 1 << 16, d.ipc_cache_size);
    check_size("ipc_cache_bytes", &cs->ipc_cache_bytes, 0, (size_t) 1 << 50, d.ipc_cache_bytes);
    check_int("lazy_calls", &cs->lazy_calls, 0, 1 << 20, d.lazy_calls);
    if (!(cs->timeout >= 0 && cs->timeout <= 1e7)) {   /* also catches NaN */
        char was[32], now[32];
        snprintf(was, sizeof was, "%g", cs->timeout);
        snprintf(now, sizeof now, "%g", d.timeout);
        cs->timeout = d.timeout;
        warn_range("timeout", was, "0 (no deadline) to 10000000 seconds", now);
    }
    if (cs->device_path != STRATA_DEVICE_PATH_GPU && cs->device_path != STRATA_DEVICE_PATH_HOST) {
        warn_range("device_path", "(a number)", "gpu, host", "gpu");
        cs->device_path = STRATA_DEVICE_PATH_GPU;
    }
    if (cs->device_transport < STRATA_DEVICE_TRANSPORT_AUTO || cs->device_transport > STRATA_DEVICE_TRANSPORT_STAGED) {
        warn_range("device_transport", "(a number)", "auto, direct, staged", "auto");
        cs->device_transport = STRATA_DEVICE_TRANSPORT_AUTO;
    }
    if (cs->check_args != STRATA_CHECK_ARGS_OFF && cs->check_args != STRATA_CHECK_ARGS_ON &&
        cs->check_args != STRATA_CHECK_ARGS_NODES) {
        warn_range("check_args", "(a number)", "auto, true, false", "auto");
        cs->check_args = STRATA_CHECK_ARGS_NODES;
    }
    if (cs->setup_at_creation < STRATA_SETUP_AT_CREATION_OFF || cs->setup_at_creation > STRATA_SETUP_AT_CREATION_HOST) {
        warn_range("setup_at_creation", "(a number)", "auto, true, false", "auto");
        cs->setup_at_creation = STRATA_SETUP_AT_CREATION_HOST;
    }
    if (cs->stream_flags < STRATA_STREAM_FLAGS_OFF || cs->stream_flags > STRATA_STREAM_FLAGS_EAGER) {
        warn_range("stream_flags", "(a number)", "writes, auto, eager, 0", "writes");
        cs->stream_flags = STRATA_STREAM_FLAGS_WRITES;
    }
    for (coll = 0; coll < STRATA_COLL_COUNT; ++coll) {
        int *a = &cs->algorithm[coll];
        if (*a != STRATA_ALG_AUTO && *a != STRATA_ALG_BASE &&
            (*a < 0 || *a >= strata_algorithm_count((strata_coll_t) coll))) {
            char name[64];
            snprintf(name, sizeof name, "%s_algorithm", strata_coll_name((strata_coll_t) coll));
            warn_range(name, "(a number)", "auto, base or an algorithm's name", "auto");
            *a = STRATA_ALG_AUTO;
        }
        warn_unknown_algorithm((strata_coll_t) coll, *a);
    }
}

/* ---------------------------------------------------------------- MPI_T performance variables
 * The core's process-wide counters (strata.h), read when a tool reads them: nothing is
 * copied while calls run. Counters only grow (continuous: always counting, a handle
 * reads what happened since it was allocated). The ctx of a variable says which
 * counter: a strata_stat_t, a strata_handback_t, or coll * 64 + algorithm + 1 (0 as
 * the algorithm: every algorithm). */
#define PVAR_FLAGS (MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS)

static int read_stat(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void) obj;
    *(unsigned long long *) value = strata_stat((strata_stat_t) (intptr_t) pvar->ctx);
    return OPAL_SUCCESS;
}

static int read_handed_back(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void) obj;
    *(unsigned long long *) value = strata_stat_handed_back((strata_handback_t) (intptr_t) pvar->ctx);
    return OPAL_SUCCESS;
}

static int read_served(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    const intptr_t which = (intptr_t) pvar->ctx;
    (void) obj;
    *(unsigned long long *) value = strata_stat_served((strata_coll_t) (which / 64), (int) (which % 64) - 1);
    return OPAL_SUCCESS;
}

static void register_pvar(const mca_base_component_t *c, const char *name, const char *desc, int var_class,
                          mca_base_get_value_fn_t read, intptr_t ctx)
{
    (void) mca_base_component_pvar_register(c, name, desc, OPAL_INFO_LVL_4, var_class,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
                                            PVAR_FLAGS, read, NULL, NULL, (void *) ctx);
}

/* coll_strata_<coll>_served, coll_strata_<coll>_<algorithm>_served,
 * coll_strata_handed_back_<reason>, coll_strata_<stat> (README: performance variables). */
static void register_pvars(const mca_base_component_t *c)
{
    char name[96], desc[256];
    int coll, a, i;

    for (coll = 0; coll < STRATA_COLL_COUNT; ++coll) {
        const char *cn = strata_coll_name((strata_coll_t) coll);
        snprintf(name, sizeof name, "%s_served", cn);
        snprintf(desc, sizeof desc, "Calls of %s (and its v, block, nonblocking and persistent forms) that strata "
                 "served, every algorithm", cn);
        register_pvar(c, name, desc, MCA_BASE_PVAR_CLASS_COUNTER, read_served, coll * 64);
        for (a = 0; a < strata_algorithm_count((strata_coll_t) coll) && a < 63; ++a) {
            const char *an = strata_algorithm_name((strata_coll_t) coll, a);
            snprintf(name, sizeof name, "%s_%s_served", cn, an);
            snprintf(desc, sizeof desc, "Calls of %s that strata served with its algorithm %s", cn, an);
            register_pvar(c, name, desc, MCA_BASE_PVAR_CLASS_COUNTER, read_served, coll * 64 + a + 1);
        }
    }
    for (i = 0; i < STRATA_HANDBACK_COUNT; ++i) {
        snprintf(name, sizeof name, "handed_back_%s", strata_handback_name((strata_handback_t) i));
        snprintf(desc, sizeof desc, "Calls strata handed back to the component it replaced because of: %s",
                 strata_handback_words((strata_handback_t) i));
        register_pvar(c, name, desc, MCA_BASE_PVAR_CLASS_COUNTER, read_handed_back, i);
    }
    for (i = 0; i < STRATA_STAT_COUNT; ++i) {
        register_pvar(c, strata_stat_name((strata_stat_t) i), strata_stat_description((strata_stat_t) i),
                      0 == strncmp(strata_stat_name((strata_stat_t) i), "bytes_", 6) ? MCA_BASE_PVAR_CLASS_AGGREGATE
                                                                                     : MCA_BASE_PVAR_CLASS_COUNTER,
                      read_stat, i);
    }
}

/* Every setting the core has starts from the core's own default (strata_config_defaults),
 * so that a default is written once; registering a variable makes the value found in its
 * storage the variable's default. */
static void take_core_defaults(mca_coll_strata_component_t *cs, const strata_config_t *d)
{
    int coll;
    cs->verbose = d->verbose;
    cs->host_buffers = 0 != d->host_buffers;
    cs->node_size = d->node_size;
    cs->segment_size = d->segment_size;
    cs->device_segment_size = d->device_segment_size;
    cs->device_multinode_segment_size = d->device_multinode_segment_size;
    cs->small_msg_size = d->small_msg_size;
    cs->zero_copy_size = d->zero_copy_size;
    for (coll = 0; coll < STRATA_COLL_COUNT; ++coll) {
        cs->algorithm[coll] = d->algorithm[coll];
    }
    cs->shm_dir = (char *) d->shm_dir;   /* registering copies a string variable's default */
    cs->device_path = d->device_path;
    cs->device_transport = d->device_transport;
    cs->stream_flags = d->stream_flags;
    cs->ipc_cache_size = d->ipc_cache_size;
    cs->ipc_cache_bytes = d->ipc_cache_bytes;
    cs->timeout = d->timeout;
    cs->check_args = d->check_args;
    cs->lazy_calls = d->lazy_calls;
    cs->setup_at_creation = d->setup_at_creation;
    cs->host_handback = 0 != d->host_handback;
    cs->p2p_channel = (char *) (NULL != d->p2p_channel ? d->p2p_channel : "auto");   /* copied, as shm_dir */
    mca_coll_strata_rules_file = (char *) d->rules_file;   /* copied by registering, as shm_dir */
}

static void add_help_dirs(void);

static int mca_coll_strata_register(void)
{
    const mca_base_component_t *c = &mca_coll_strata_component.super.collm_version;
    mca_coll_strata_component_t *cs = &mca_coll_strata_component;
    strata_config_t defaults;
    char desc[1024];
    int coll;

    memset(&defaults, 0, sizeof defaults);   /* a field the core's defaults leave alone reads 0/NULL */
    strata_config_defaults(&defaults);
    take_core_defaults(cs, &defaults);

    (void) mca_base_component_var_register(c, "enable",
        "Use the strata component at all (false: strata declines every communicator)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_2, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->enable);
    (void) mca_base_component_var_register(c, "priority",
        "Priority of coll/strata; it must be above every component it should take calls "
        "from (hcoll 90, fca 80, cuda 78, self 75, tuned 30). A communicator can opt out "
        "with the info key strata=off given to MPI_Comm_dup_with_info",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->priority);
    /* Settable through MPI_T (a tool may turn it up for a phase of the job): it changes
     * only what this process prints, and each call reads it anew (mca_coll_strata_enter). */
    (void) mca_base_component_var_register(c, "verbose",
        "Verbosity: 0 quiet; 1 setup, and at each communicator's free one summary (on its "
        "rank 0) of its calls: served by collective and algorithm, handed back by reason; "
        "2 also one line per call (collective, bytes, algorithm, or why it was handed back). "
        "Settable through MPI_T while the job runs",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_2, MCA_BASE_VAR_SCOPE_LOCAL,
        &cs->verbose);
    cs->verbose_internal = false;
    (void) mca_base_component_var_register(c, "verbose_internal",
        "At verbose 2, also log the calls Open MPI makes itself on its communicators (while "
        "it creates a communicator, say), told apart from the application's by their caller "
        "not being an MPI function. Settable through MPI_T while the job runs",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &cs->verbose_internal);
    snprintf(desc, sizeof desc,
        "Run strata on communicators where no rank has a GPU (a current CUDA context). "
        "When false%s, such communicators hand every call to the component "
        "strata replaced; where any rank has a GPU, strata takes each supported call "
        "whatever its buffers (host or device, also mixed across ranks), since whether it "
        "runs must agree on all ranks. True%s runs strata on CPU-only jobs too (testing, "
        "CPU clusters)",
        cs->host_buffers ? "" : " (the default)", cs->host_buffers ? " (the default)" : "");
    (void) mca_base_component_var_register(c, "host_buffers", desc,
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->host_buffers);
    (void) mca_base_component_var_register(c, "node_size",
        "Split each real node into virtual nodes of this many consecutive local ranks "
        "(traffic between them takes the inter-node path), for testing multi-node "
        "algorithms on one machine; 0 uses the real node layout",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->node_size);
    (void) mca_base_component_var_register(c, "segment_size",
        "Pipeline segment in bytes: messages are cut into segments of this size so that "
        "reduction, intra-node and network traffic overlap",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->segment_size);
    (void) mca_base_component_var_register(c, "device_segment_size",
        "Pipeline segment in bytes of a communicator on one node whose collectives run in "
        "GPU memory (each segment costs a kernel launch and a host round trip, so fewer "
        "are faster there; its stage slots take 4 segments of GPU memory per rank); "
        "0: segment_size. Communicators across nodes use device_multinode_segment_size",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->device_segment_size);
    (void) mca_base_component_var_register(c, "device_multinode_segment_size",
        "Pipeline segment in bytes of a communicator across nodes whose collectives run in "
        "GPU memory (up to 8 segments of an allreduce cross the network at once; its stage "
        "slots take 4 segments of GPU memory per rank); 0: segment_size",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->device_multinode_segment_size);
    (void) mca_base_component_var_register(c, "small_msg_size",
        "Messages of at most this many bytes count as small: the auto rules pick "
        "latency-bound algorithms for them",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->small_msg_size);
    (void) mca_base_component_var_register(c, "zero_copy_size",
        "On the gpu device path, calls of more than this many bytes read and write node "
        "peers' buffers in place, mapped through CUDA IPC (see ipc_cache_size); smaller "
        "ones copy through the slots",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->zero_copy_size);
    (void) mca_base_component_var_register(c, "shm_dir",
        "Folder for strata's shared-memory segments (empty: /dev/shm); segments are "
        "created 0600 and unlinked once every local peer has mapped them",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->shm_dir);

    {
        static const mca_base_var_enum_value_t paths[] = {
            { STRATA_DEVICE_PATH_GPU, "gpu" }, { STRATA_DEVICE_PATH_HOST, "host" }, { 0, NULL }
        };
        static const mca_base_var_enum_value_t transports[] = {
            { STRATA_DEVICE_TRANSPORT_AUTO, "auto" }, { STRATA_DEVICE_TRANSPORT_DIRECT, "direct" },
            { STRATA_DEVICE_TRANSPORT_STAGED, "staged" }, { 0, NULL }
        };
        register_enum_var(c, "device_path",
            "Where schedules run on a communicator whose ranks all have a GPU: gpu (in GPU "
            "memory: stage slots exported through CUDA IPC inside a node, copies and "
            "reductions on a CUDA stream; ranks passing host buffers stage them through the "
            "GPU) or host (in host memory, as on CPU-only nodes; ranks passing device buffers "
            "stage them through page-locked host memory). If GPU setup fails on any rank, the "
            "communicator uses host, said once",
            paths, OPAL_INFO_LVL_4, &cs->device_path);
        register_enum_var(c, "device_transport",
            "How GPU memory crosses nodes on the gpu device path: direct (device pointers "
            "to the point-to-point layer; needs a CUDA-aware Open MPI), staged (pipelined "
            "through page-locked host bounce buffers, so the copy of one segment overlaps "
            "the transfer of the previous one) or auto (direct when this Open MPI reports "
            "CUDA support, else staged; the same on every rank)",
            transports, OPAL_INFO_LVL_4, &cs->device_transport);
        static const mca_base_var_enum_value_t stream_flags[] = {
            { STRATA_STREAM_FLAGS_WRITES, "writes" }, { STRATA_STREAM_FLAGS_AUTO, "auto" },
            { STRATA_STREAM_FLAGS_EAGER, "eager" }, { STRATA_STREAM_FLAGS_OFF, "0" }, { 0, NULL }
        };
        register_enum_var(c, "stream_flags",
            "How a GPU team's calls order their steps across a node's ranks, where every "
            "rank's GPU has stream memory operations (else as 0): writes (the CUDA stream "
            "writes the flags after the work they announce and the host waits for peers' "
            "flags, so the host waits once per call, not once per step; nothing on the "
            "stream waits for a peer), auto (the stream also waits for the flags of a "
            "one-node team, each once the peer has queued the value it waits for, so GPU "
            "work never waits for a peer's host; a call's work is queued as far as its "
            "peers have queued theirs, and a started nonblocking call completes without host "
            "progress once every node peer has started it and queued its part: for trials), "
            "eager (as auto, but the stream waits for values its peers have not queued yet: "
            "a call's work is queued once, but a device synchronize or cudaFree then waits "
            "for node peers to start the call: for measurements) or 0 (the host signals and "
            "polls every flag, and every device step ends in a host round trip); the least "
            "of the ranks' levels is used (0, writes, auto, eager)",
            stream_flags, OPAL_INFO_LVL_4, &cs->stream_flags);
    }
    (void) mca_base_component_var_register(c, "ipc_cache_size",
        "On the gpu device path, node peers read each other's device buffers in place, "
        "mapped through CUDA IPC, instead of copying them into strata's exported stage "
        "slots first (allreduce, reduce_scatter, bcast, allgather, alltoall above "
        "zero_copy_size). Mappings are kept between calls, keyed by the "
        "allocation and its buffer id so that a freed and re-allocated address is never "
        "confused; this is how many a communicator keeps per rank (least recently used "
        "closed first, all closed at communicator free). An open mapping keeps a buffer "
        "its owner freed allocated, so this also bounds GPU memory held that way. 0 turns "
        "mapping off: every call copies through the stage slots",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->ipc_cache_size);
    (void) mca_base_component_var_register(c, "ipc_cache_bytes",
        "The most bytes of node peers' device allocations a communicator keeps mapped per "
        "rank through CUDA IPC (see ipc_cache_size; the least recently used mapping is "
        "closed first, never one the current call reads). An open mapping keeps an "
        "allocation its owner freed allocated, so this bounds the GPU memory held that "
        "way; a call may map more, and what it used goes at later calls. 0: only "
        "ipc_cache_size bounds the cache",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->ipc_cache_bytes);
    snprintf(desc, sizeof desc,
        "Seconds a collective may make no progress (wait for a peer that neither sends nor "
        "signals) before it fails with MPI_ERR_OTHER through the communicator's error "
        "handler, with one line naming the communicator, the collective, the call number, "
        "the step it waits in and the rank it waits for. 0 waits for ever, as MPI does: a "
        "valid program may enter a collective late (a rank writing a checkpoint); the "
        "default is %g. A failure a rank knows of (bad argument, out of memory, driver "
        "error) reaches its peers at once whatever this is", cs->timeout);
    (void) mca_base_component_var_register(c, "timeout", desc,
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->timeout);
    (void) mca_base_component_var_register(c, "lazy_calls",
        "How many small blocking calls (at most small_msg_size bytes) a communicator not "
        "set up at its creation (setup_at_creation: one whose ranks all have a GPU under "
        "auto, every one under false) hands to the component strata replaced before "
        "strata sets it up (a larger call sets it up at once); 0 sets up at the first call",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->lazy_calls);
    {
        static const mca_base_var_enum_value_t at_creation[] = {
            { STRATA_SETUP_AT_CREATION_HOST, "auto" }, { STRATA_SETUP_AT_CREATION_ON, "true" },
            { STRATA_SETUP_AT_CREATION_OFF, "false" }, { 0, NULL }
        };
        register_enum_var(c, "setup_at_creation",
            "Set strata up on a communicator when it is made (a collective step of its "
            "creation: its agreements, shared memory, the GPU path) instead of at its first "
            "call, so that a new communicator costs no communicator of strata's own and its "
            "first calls, nonblocking ones too, are decided as they start. auto: every "
            "communicator that will not take the GPU path (one whose ranks all have a GPU "
            "sets up at its first call, so that only communicators that make calls hold GPU "
            "regions); true: every one; false: none (a first nonblocking call then sets up "
            "in steps and makes a communicator of strata's own). Costs one allgather per "
            "new communicator, and with host buffers an agreement and shared memory for "
            "every one with ranks sharing a node",
            at_creation, OPAL_INFO_LVL_5, &cs->setup_at_creation);
    }
    cs->progress_thread = false;
    (void) mca_base_component_var_register(c, "progress_thread",
        "Start a thread that progresses strata's nonblocking and persistent collectives "
        "while the application computes, so that they advance without MPI calls. Needs "
        "MPI_THREAD_MULTIPLE (the thread calls the point-to-point layer; otherwise it is "
        "not started, said at verbose 1). The thread yields while calls are queued and "
        "sleeps otherwise; without it calls advance in MPI calls (MPI_Test, MPI_Wait, ...)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &cs->progress_thread);
    {
        static const mca_base_var_enum_value_t check_args[] = {
            { STRATA_CHECK_ARGS_NODES, "auto" }, { STRATA_CHECK_ARGS_ON, "true" },
            { STRATA_CHECK_ARGS_OFF, "false" }, { 0, NULL }
        };
        register_enum_var(c, "check_args",
            "Before a collective runs, agree across the communicator on what MPI requires to "
            "match (count x datatype size, the datatype, op and root, alltoallv's per-pair "
            "counts) and on every rank's arguments being valid; on a mismatch every rank "
            "returns MPI_ERR_TRUNCATE (sizes) or MPI_ERR_ARG and nothing moves. auto: on "
            "communicators that span nodes (on one node the ranks compare the call in shared "
            "memory at its end, at no cost, and every rank gets the error there too); true: "
            "on every communicator, and no call is handed back before setup (lazy_calls); "
            "false: never, and across nodes a rank may then return MPI_SUCCESS from a "
            "mismatched call. Costs one small allreduce of strata's own per call (README: "
            "Measured)",
            check_args, OPAL_INFO_LVL_4, &cs->check_args);
    }
    (void) mca_base_component_var_register(c, "host_handback",
        "On communicators where strata runs in host memory (no rank has a GPU; "
        "host_buffers), hand the calls that the built-in host rules name back to the "
        "component strata replaced: small calls, where that component measured faster "
        "(docs/rules.md lists them; README \"Measured\"). A rules_file line or a "
        "<collective>_algorithm setting decides first. false: strata serves them",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->host_handback);
    (void) mca_base_component_var_register(c, "p2p_channel",
        "The point-to-point channel strata's schedules send over between nodes: "
        "transport (the PML on the communicator), ucx (UCX's tag API through a UCX "
        "worker of strata's own; built when configure found UCX) or auto (today: "
        "transport). Every rank of a communicator must ask for the same channel and be "
        "able to start it, else the communicator uses transport (said at verbose 1)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &cs->p2p_channel);
    (void) mca_base_component_var_register(c, "rules_file",
        "A file of rules that choose each collective's algorithm by message size, number of "
        "nodes, ranks per node and memory (host or device), one rule per line, the first "
        "matching line winning; perf/strata-tune writes one for a machine (format: "
        "docs/rules.md). Every rank reads it when a communicator is created; a malformed "
        "file is reported once with its line number, and if any rank's rules are missing, "
        "malformed or differ from the others', every rank uses the built-in rules. Calls "
        "that no line matches use the built-in rules; <collective>_algorithm, when not auto, "
        "overrides both. Empty (the default): built-in rules only",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL,
        &mca_coll_strata_rules_file);
    for (coll = 0; coll < STRATA_COLL_COUNT; ++coll) {
        register_algorithm_var(c, (strata_coll_t) coll);
    }
    add_help_dirs();   /* before check_ranges: its warnings are help messages */
    check_ranges();
    register_pvars(c);
    return OMPI_SUCCESS;
}

/* Lets opal_show_help find help-coll-strata.txt, which is installed next to the .so
 * (component dirs only load files named mca_*), or the source tree's copy. */
static void add_help_dirs(void)
{
    Dl_info info;
    if (0 != dladdr((void *) &mca_coll_strata_component, &info) && NULL != info.dli_fname) {
        char *copy = strdup(info.dli_fname);
        if (NULL != copy) {
            (void) opal_show_help_add_dir(dirname(copy));
            free(copy);
        }
    }
#ifdef MCA_COLL_STRATA_SRC_HELP_DIR
    (void) opal_show_help_add_dir(MCA_COLL_STRATA_SRC_HELP_DIR);
#endif
}

static int mca_coll_strata_open(void)
{
    mca_coll_strata_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_coll_strata_component.output, mca_coll_strata_component.verbose);
    strata_set_logger(mca_coll_strata_core_log);
    strata_set_warner(mca_coll_strata_core_warn);
    strata_set_log_level(mca_coll_strata_component.verbose);
    return OMPI_SUCCESS;
}

static int mca_coll_strata_close(void)
{
    mca_coll_strata_nonblocking_fini();
    strata_host_copy_release();
    strata_cuda_report();   /* every communicator is gone: what strata still holds */
    strata_set_logger(NULL);
    strata_set_warner(NULL);
    if (0 <= mca_coll_strata_component.output) {
        opal_output_close(mca_coll_strata_component.output);
        mca_coll_strata_component.output = -1;
    }
    return OMPI_SUCCESS;
}

void mca_coll_strata_fill_config(strata_config_t *cfg)
{
    const mca_coll_strata_component_t *cs = &mca_coll_strata_component;
    int coll;

    strata_config_defaults(cfg);
    cfg->verbose = cs->verbose;
    strata_set_log_level(cs->verbose);   /* again per communicator: MPI_T may have changed it */
    cfg->node_size = cs->node_size > 0 ? cs->node_size : 0;
    cfg->segment_size = cs->segment_size;
    cfg->device_segment_size = cs->device_segment_size;
    cfg->device_multinode_segment_size = cs->device_multinode_segment_size;
    cfg->small_msg_size = cs->small_msg_size;
    cfg->zero_copy_size = cs->zero_copy_size;
    for (coll = 0; coll < STRATA_COLL_COUNT; ++coll) {
        cfg->algorithm[coll] = cs->algorithm[coll];
    }
    cfg->shm_dir = (NULL != cs->shm_dir && '\0' != cs->shm_dir[0]) ? cs->shm_dir : NULL;
    cfg->host_buffers = cs->host_buffers ? 1 : 0;
    cfg->device_path = cs->device_path;
    cfg->device_transport = cs->device_transport;
    cfg->stream_flags = cs->stream_flags;
    cfg->ipc_cache_size = cs->ipc_cache_size > 0 ? cs->ipc_cache_size : 0;
    cfg->ipc_cache_bytes = cs->ipc_cache_bytes;
    cfg->timeout = cs->timeout > 0 ? cs->timeout : 0;
    cfg->check_args = cs->check_args;
    cfg->lazy_calls = cs->lazy_calls;
    cfg->setup_at_creation = cs->setup_at_creation;
    cfg->host_handback = cs->host_handback ? 1 : 0;
    cfg->p2p_channel = (NULL != cs->p2p_channel && '\0' != cs->p2p_channel[0]) ? cs->p2p_channel : NULL;
    cfg->rules_file = (NULL != mca_coll_strata_rules_file && '\0' != mca_coll_strata_rules_file[0])
                          ? mca_coll_strata_rules_file : NULL;
}

/* Whether Open MPI aggregates help messages: orte_base_help_aggregate (4.1) or
 * opal_base_help_aggregate (5.0), on unless set to 0. An MPI process of 5.0.7 does not
 * register the variable: mpirun --mca hands it over in the environment. */
static bool help_aggregated(void)
{
    static const char *const names[] = {"orte_base_help_aggregate", "opal_base_help_aggregate"};
    const char *env = getenv("OMPI_MCA_opal_base_help_aggregate");
    const bool *on;
    int i, index;
    for (i = 0; i < 2; ++i) {
        if (OPAL_SUCCESS == mca_base_var_find_by_name(names[i], &index) &&
            OPAL_SUCCESS == mca_base_var_get_value(index, &on, NULL, NULL) && NULL != on) {
            return *on;
        }
    }
    return NULL == env || !(0 == strcmp(env, "0") || 0 == strcasecmp(env, "false") || 0 == strcasecmp(env, "no"));
}

/* Warnings, the core's (strata_set_warner) and the glue's: Open MPI's help system prints
 * a topic once and then counts the processes that sent it again (both series aggregate
 * by file and topic, so the text the others sent is not shown, and strata makes it the
 * same where it can). Each topic of help-coll-strata.txt begins with the warning's own
 * line, "coll:strata: <msg>". With aggregation off, each process prints its own,
 * as Open MPI would print each, without the relay to mpirun that Open MPI 4.1.4 now and
 * then loses (test/mpi/run-help). Where the help file or the topic cannot be found,
 * Open MPI says so and the line goes out alone. */
void mca_coll_strata_core_warn(const char *topic, const char *msg)
{
    char *text = opal_show_help_string(MCA_COLL_STRATA_HELP_FILE, topic, true, msg);
    if (NULL == text) {
        opal_output(0, "coll:strata: %s", msg);
    } else if (!help_aggregated()) {
        opal_output(0, "%s", text);
    } else {
        (void) opal_show_help(MCA_COLL_STRATA_HELP_FILE, topic, true, msg);
    }
    free(text);
}

void mca_coll_strata_warn(const char *topic, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mca_coll_strata_core_warn(topic, msg);
}

/* Core messages: "coll:strata: <world rank>: msg" on the component's stream. */
void mca_coll_strata_core_log(int level, const char *msg)
{
    int rank = ompi_comm_rank((ompi_communicator_t *) &ompi_mpi_comm_world);
    if (level <= mca_coll_strata_component.verbose) {
        opal_output(mca_coll_strata_component.output, "coll:strata: %d: %s", rank, msg);
    }
}
