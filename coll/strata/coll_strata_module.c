/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_module.c - comm_query, enable (capture of the previous module),
 * disable (Open MPI 5.0) and the lifetime of the strata team attached to a
 * communicator. The series differences live in coll_strata_compat.h; this file only
 * adds the 5.0 disable.
 */
#include "coll_strata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "strata_device.h"

static void mca_coll_strata_module_construct(mca_coll_strata_module_t *m)
{
    m->comm = NULL;
    memset(&m->prev, 0, sizeof(m->prev));
    m->team = NULL;
    memset(&m->transport, 0, sizeof(m->transport));
    m->rs_counts = NULL;
    m->wire = NULL;
    m->wire_slot = NULL;
    m->counts[0] = m->counts[1] = NULL;
    m->counts_bytes[0] = m->counts_bytes[1] = 0;
}

void *mca_coll_strata_counts(mca_coll_strata_module_t *m, int which, size_t bytes)
{
    if (m->counts_bytes[which] < bytes) {
        free(m->counts[which]);
        m->counts[which] = malloc(bytes);
        m->counts_bytes[which] = NULL == m->counts[which] ? 0 : bytes;
    }
    return m->counts[which];
}

/* Releases whatever enable captured and the team; safe to call again (5.0 calls
 * disable once per collective slot the module holds, then the destructor runs). */
/* coll_strata_verbose >= 1: what the communicator's calls did, said once by its rank 0
 * when it is freed (strata_team_report; nothing for one that saw no call). */
static void report(const mca_coll_strata_module_t *m)
{
    char name[MPI_MAX_OBJECT_NAME + 64];
    if (mca_coll_strata_component.verbose < 1 || NULL == m->team || NULL == m->comm ||
        0 != ompi_comm_rank(m->comm)) {
        return;
    }
    snprintf(name, sizeof name, "%s (cid %d, %d ranks) at its free", m->comm->c_name, MCA_COLL_STRATA_CID(m->comm),
             ompi_comm_size(m->comm));
    strata_team_report(m->team, name);
}

static void mca_coll_strata_module_release(mca_coll_strata_module_t *m)
{
    report(m);
    strata_team_destroy(m->team);
    m->team = NULL;
    mca_coll_strata_wire_release(m);
    free(m->rs_counts);
    m->rs_counts = NULL;
    free(m->counts[0]);
    free(m->counts[1]);
    m->counts[0] = m->counts[1] = NULL;
    m->counts_bytes[0] = m->counts_bytes[1] = 0;
#define STRATA_RELEASE_PREV(name)                       \
    if (NULL != m->prev.name##_module) {                \
        OBJ_RELEASE(m->prev.name##_module);             \
        m->prev.name##_module = NULL;                   \
        m->prev.name = NULL;                            \
    }
#define STRATA_RELEASE_NB(name) STRATA_RELEASE_PREV(i##name) STRATA_RELEASE_PREV(name##_init)
    MCA_COLL_STRATA_COLLS(STRATA_RELEASE_PREV)
    MCA_COLL_STRATA_COLLS(STRATA_RELEASE_NB)
#undef STRATA_RELEASE_NB
#undef STRATA_RELEASE_PREV
}

/* Also runs when enable failed half way, or when the module was never enabled. */
static void mca_coll_strata_module_destruct(mca_coll_strata_module_t *m)
{
    mca_coll_strata_module_release(m);
}

#if MCA_COLL_STRATA_HAVE_MODULE_DISABLE
/*
 * Open MPI 5.0: the base calls disable while it takes the communicator's
 * collectives apart (mca_coll_base_comm_unselect), once for each slot this module
 * still holds, before it drops its references. Giving back the previous modules
 * and the team here, as coll/han does, lets those modules go in the order the base
 * expects instead of at our destructor; later calls find nothing left.
 */
static int mca_coll_strata_module_disable(mca_coll_base_module_t *module,
                                          struct ompi_communicator_t *comm)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    if (NULL != m->team || NULL != m->prev.allreduce_module) {
        opal_output_verbose(2, mca_coll_strata_component.output,
                            "coll:strata: disabled on %s (cid %d)", comm->c_name,
                            MCA_COLL_STRATA_CID(comm));
    }
    mca_coll_strata_module_release(m);
    m->comm = NULL;
    return OMPI_SUCCESS;
}
#else
#define mca_coll_strata_module_disable NULL
#endif

OBJ_CLASS_INSTANCE(mca_coll_strata_module_t, mca_coll_base_module_t,
                   mca_coll_strata_module_construct, mca_coll_strata_module_destruct);

/* coll_strata_verbose >= 1 on a node where strata can serve nothing (no CUDA driver,
 * host buffers off): said first, once per node (its first local rank), instead of the
 * core's "device buffers: off" line, which the question would otherwise print. A node
 * with a driver is not asked: a GPU context may still come, and initialising the driver
 * only to say so would change what the job does. */
static void say_if_idle(void)
{
    const mca_coll_strata_component_t *cs = &mca_coll_strata_component;
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    char why[256];
    int absent;

    if (cs->verbose < 1 || cs->host_buffers || !cs->enable) {
        return;
    }
    strata_set_log_level(0);
    absent = strata_device_absent(why, sizeof why);
    strata_set_log_level(cs->verbose);
    if (absent && (NULL == local || 0 == strcmp(local, "0"))) {
        opal_output(cs->output, "coll:strata: %s: idle on this node: %s, and coll_strata_host_buffers is off, so every "
                    "collective goes to the component strata replaces (coll_strata_host_buffers=1 runs strata in host "
                    "memory)", ompi_process_info.nodename, why);
    }
}

/* A component built for the other Open MPI series declines here, with one line,
 * before any series-specific struct is used. */
int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    char why[256];
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    if (!mca_coll_strata_runtime_series_ok(why, sizeof why)) {
        mca_coll_strata_warn("wrong series", "declining: %s", why);
        return OMPI_ERR_NOT_SUPPORTED;
    }
    say_if_idle();
    return OMPI_SUCCESS;
}

/* The value of the info key "strata" on comm ("" when none). */
static void comm_strata_key(struct ompi_communicator_t *comm, char *value, int len)
{
    opal_info_t *info = MCA_COLL_STRATA_COMM_INFO(comm);
    int flag = 0;

    value[0] = '\0';
    if (NULL == info ||
        OPAL_SUCCESS != mca_coll_strata_info_get(info, MCA_COLL_STRATA_WIRE_KEY, value, len, &flag) || !flag) {
        value[0] = '\0';
    }
}

/* info key "strata" = off/false/no/0 on the communicator opts it out. */
static int comm_opted_out(struct ompi_communicator_t *comm)
{
    char value[32];

    comm_strata_key(comm, value, (int) sizeof(value));
    return 0 == strcasecmp(value, "off") || 0 == strcasecmp(value, "false") ||
           0 == strcasecmp(value, "no") || 0 == strcmp(value, "0") ||
           0 == strcasecmp(value, "disable") || 0 == strcasecmp(value, "disabled");
}

static int mca_coll_strata_module_enable(mca_coll_base_module_t *module,
                                         struct ompi_communicator_t *comm);

mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_strata_module_t *m;
    const char *why = NULL;

    if (!mca_coll_strata_component.enable) {
        why = "coll_strata_enable is false";
    } else if (OMPI_COMM_IS_INTER(comm)) {
        why = "intercommunicator";
    } else if (ompi_comm_size(comm) < 2) {
        why = "single-rank communicator";
    } else if (mca_coll_strata_component.priority < 0) {
        why = "negative priority";
    } else {
        /* A team's own communicator (coll_strata_p2p.c): only strata's point-to-point
         * messages go over it. The key is set on every rank's copy alike. */
        char value[32];
        comm_strata_key(comm, value, (int) sizeof(value));
        if (0 == strcmp(value, MCA_COLL_STRATA_WIRE_VALUE)) {
            why = "strata's own communicator for a team's messages";
        }
    }
    /* The info key strata=off is read by each rank alone, so it does not decline here
     * (a rank that declined would run another component while its peers ran strata):
     * setup agrees on it, and any rank's opting out hands every rank's calls back. */
    if (NULL != why) {
        opal_output_verbose(1, mca_coll_strata_component.output,
                            "coll:strata: declining communicator %s (cid %d): %s",
                            comm->c_name, MCA_COLL_STRATA_CID(comm), why);
        return NULL;
    }

    m = OBJ_NEW(mca_coll_strata_module_t);
    if (NULL == m) {
        return NULL;
    }
    *priority = mca_coll_strata_component.priority;
    m->super.coll_module_enable = mca_coll_strata_module_enable;
    MCA_COLL_STRATA_MODULE_SERIES_INIT(m, mca_coll_strata_module_disable);
#define STRATA_SET(name)                                        \
    m->super.coll_##name = mca_coll_strata_##name;              \
    m->super.coll_i##name = mca_coll_strata_i##name;            \
    m->super.coll_##name##_init = mca_coll_strata_##name##_init;
    MCA_COLL_STRATA_COLLS(STRATA_SET)
#undef STRATA_SET
    return &m->super;
}

/* Lowest rank of comm on this node: equal on ranks that share a node. */
static int node_key_of(struct ompi_communicator_t *comm)
{
    int i, size = ompi_comm_size(comm);
    for (i = 0; i < size; ++i) {
        if (mca_coll_strata_peer_is_local(comm, i)) {
            return i;
        }
    }
    return ompi_comm_rank(comm);
}

/*
 * In 4.1 and 5.0 the base copies our function pointers into comm->c_coll after this returns
 * OMPI_SUCCESS, and enables modules in increasing priority, so comm->c_coll holds
 * what strata replaces. Capture (and retain) every one before anything else; a
 * missing one disables strata on this communicator (the destructor releases what
 * was taken).
 */
static int mca_coll_strata_module_enable(mca_coll_base_module_t *module,
                                         struct ompi_communicator_t *comm)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    const char *missing = NULL;
    strata_config_t cfg;
    strata_status_t st;

#define STRATA_CAPTURE(name)                                                \
    if (NULL == missing) {                                                  \
        if (NULL == comm->c_coll->coll_##name ||                            \
            NULL == comm->c_coll->coll_##name##_module) {                   \
            missing = #name;                                                \
        } else {                                                            \
            m->prev.name = comm->c_coll->coll_##name;                       \
            m->prev.name##_module = comm->c_coll->coll_##name##_module;     \
            OBJ_RETAIN(m->prev.name##_module);                              \
        }                                                                   \
    }
    MCA_COLL_STRATA_COLLS(STRATA_CAPTURE)
#undef STRATA_CAPTURE

    /* Nonblocking and persistent entries whose previous one is missing are left to
     * the base (strata's pointer is cleared before the base copies them), all of them
     * where this Open MPI's nonblocking request does not fit strata's
     * (coll_strata_compat.h). */
#define STRATA_CAPTURE_OPTIONAL(name)                                       \
    if (NULL != comm->c_coll->coll_##name && NULL != comm->c_coll->coll_##name##_module && \
        mca_coll_strata_nbc_request_fits()) {                               \
        m->prev.name = comm->c_coll->coll_##name;                           \
        m->prev.name##_module = comm->c_coll->coll_##name##_module;         \
        OBJ_RETAIN(m->prev.name##_module);                                  \
    } else {                                                                \
        m->super.coll_##name = NULL;                                        \
    }
#define STRATA_CAPTURE_NB(name) STRATA_CAPTURE_OPTIONAL(i##name) STRATA_CAPTURE_OPTIONAL(name##_init)
    MCA_COLL_STRATA_COLLS(STRATA_CAPTURE_NB)
#undef STRATA_CAPTURE_NB
#undef STRATA_CAPTURE_OPTIONAL

    if (NULL != missing) {
        opal_show_help("help-coll-strata.txt", "missing collective", true,
                       ompi_process_info.nodename, mca_coll_strata_component.priority, missing);
        return OMPI_ERR_NOT_FOUND;
    }

    m->comm = comm;
    m->rs_counts = calloc((size_t) ompi_comm_size(comm), sizeof(size_t));
    if (NULL == m->rs_counts) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_coll_strata_transport_init(m, &m->transport);
    mca_coll_strata_fill_config(&cfg);
    cfg.opt_out = comm_opted_out(comm);
    st = strata_team_create(ompi_comm_rank(comm), ompi_comm_size(comm), node_key_of(comm),
                            &m->transport, &cfg, &m->team);
    if (STRATA_OK != st) {
        opal_show_help("help-coll-strata.txt", "team create failed", true,
                       ompi_process_info.nodename, comm->c_name, (int) st);
        m->team = NULL;
        return OMPI_ERROR;
    }
    /* Set up now, a step of the communicator's creation that every rank takes (the
     * previous modules, which the setup's agreements run on, are in place). */
    if (STRATA_SETUP_AT_CREATION_OFF != cfg.setup_at_creation) {
        st = strata_team_setup(m->team);
        if (STRATA_OK != st && STRATA_FALLBACK != st) {
            opal_output_verbose(1, mca_coll_strata_component.output,
                                "coll:strata: setting up %s at its creation failed (%s)", comm->c_name,
                                strata_status_name(st));
        }
    }
    opal_output_verbose(1, mca_coll_strata_component.output,
                        "coll:strata: %d: enabled on %s (cid %d, %d ranks, node key %d)",
                        ompi_comm_rank((ompi_communicator_t *) &ompi_mpi_comm_world), comm->c_name,
                        MCA_COLL_STRATA_CID(comm), ompi_comm_size(comm), node_key_of(comm));
    return OMPI_SUCCESS;
}

void mca_coll_strata_log_variant(mca_coll_strata_module_t *m, strata_coll_t coll,
                                 const char *name, size_t bytes, const char *mode)
{
    char msg[160];
    const char *alg = strata_team_last_algorithm(m->team);

    if (mca_coll_strata_component.verbose < 2 || strata_log_is_quiet()) {
        return;
    }
    snprintf(msg, sizeof msg, "%s: %zu bytes, served by the %s core, algorithm %s%s", name, bytes,
             strata_coll_name(coll), NULL != alg ? alg : "?", mode);
    mca_coll_strata_core_log(2, msg);
}
