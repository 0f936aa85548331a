/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_compat.h - every Open MPI version difference the glue depends on.
 *
 * Two series are supported from one source tree (configure picks the headers):
 *
 *   series  coll API  what differs for strata
 *   4.1     2.0.0     module has ft_event, no disable; the base releases modules only
 *                     at communicator free, so enable's captures go in the destructor;
 *                     opal_info_get fills a caller's buffer; cid is c_contextid;
 *                     ompi_process_info from ompi/mca/rte/rte.h (ORTE); CUDA awareness
 *                     when built in (mpi-ext.h) and on at run time (opal_cuda_support:
 *                     MPIX_Query_cuda_support is the build-time constant there)
 *   5.0     2.4.0     module has coll_module_disable, called by the base for every
 *                     collective slot the module still holds when the communicator is
 *                     freed (so more than once), to release what enable captured; no
 *                     ft_event; opal_info_get returns an opal_cstring_t; the local cid
 *                     is c_index; ompi_process_info from ompi/runtime/ompi_rte.h
 *                     (PRRTE/PMIx); CUDA awareness is the selected accelerator component
 *                     (opal/mca/accelerator), decided at run time
 *
 * In both, the base copies a module's non-NULL function pointers into comm->c_coll
 * after enable succeeds and enables modules in increasing priority, so enable only
 * captures the previous functions (it must not install anything). main/6.x (3.0.0:
 * size_t counts, enable installs its own pointers) is not supported; configure stops.
 *
 * Nothing outside this header and coll_strata_module.c (enable/disable) tests the
 * series.
 */
#ifndef MCA_COLL_STRATA_COMPAT_H
#define MCA_COLL_STRATA_COMPAT_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "opal/util/info.h"

#include <stdio.h>
#include <string.h>

#if OMPI_MAJOR_VERSION == 4
#  define MCA_COLL_STRATA_OMPI_SERIES 41
#  define MCA_COLL_STRATA_COLL_API "2.0.0"
#  include "ompi/mca/rte/rte.h"
#  include "mpi-ext.h"
#  include "opal/runtime/opal_params.h"  /* opal_cuda_support */
#elif OMPI_MAJOR_VERSION == 5
#  define MCA_COLL_STRATA_OMPI_SERIES 50
#  define MCA_COLL_STRATA_COLL_API "2.4.0"
#  define MCA_COLL_STRATA_HAVE_MODULE_DISABLE 1
#  include "ompi/runtime/ompi_rte.h"
#  include "opal/class/opal_cstring.h"
#  include "opal/mca/accelerator/base/base.h"
#else
#  error "coll/strata supports the Open MPI 4.x (coll 2.0.0) and 5.0 (coll 2.4.0) interfaces"
#endif

/* 5.0 dropped OMPI_MODULE_DECLSPEC (its components use OMPI_DECLSPEC); the version
 * script decides what the .so exports anyway. */
#ifndef OMPI_MODULE_DECLSPEC
#  define OMPI_MODULE_DECLSPEC OMPI_DECLSPEC
#endif

/* Component version struct and its initializer. */
#if MCA_COLL_STRATA_OMPI_SERIES == 41
typedef mca_coll_base_component_2_0_0_t mca_coll_strata_base_component_t;
#  define MCA_COLL_STRATA_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#else
typedef mca_coll_base_component_2_4_0_t mca_coll_strata_base_component_t;
#  define MCA_COLL_STRATA_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#endif

/* Count type of the coll function signatures (int in 4.x and 5.0, size_t in 6.x). */
typedef int mca_coll_strata_count_t;

/* Info object attached to a communicator. MPI_Comm_dup_with_info (and
 * MPI_Comm_split_type etc.) attach the info before coll selection in both series, so
 * comm_query can read it. Plain MPI_Comm_dup passes no info in 4.1. */
#define MCA_COLL_STRATA_COMM_INFO(comm) ((comm)->super.s_info)

/* Copies the value of key into value (at most len - 1 characters, NUL-terminated);
 * *flag = 1 when the key is set. */
static inline int mca_coll_strata_info_get(opal_info_t *info, const char *key, char *value,
                                           int len, int *flag)
{
#if MCA_COLL_STRATA_OMPI_SERIES == 41
    return opal_info_get(info, key, len - 1, value, flag);
#else
    opal_cstring_t *s = NULL;
    int rc = opal_info_get(info, key, &s, flag);
    if (OPAL_SUCCESS == rc && *flag && NULL != s) {
        snprintf(value, (size_t) len, "%s", s->string);
    }
    if (NULL != s) {
        OBJ_RELEASE(s);
    }
    return rc;
#endif
}

/* The communicator's context id as a number for log lines (local cid in 5.0). */
#if MCA_COLL_STRATA_OMPI_SERIES == 41
#  define MCA_COLL_STRATA_CID(comm) ((int) ompi_comm_get_cid(comm))
#else
#  define MCA_COLL_STRATA_CID(comm) ((int) ompi_comm_get_local_cid(comm))
#endif

/* Fields of the module struct that only one series has, set in comm_query. */
#if MCA_COLL_STRATA_OMPI_SERIES == 41
#  define MCA_COLL_STRATA_MODULE_SERIES_INIT(m, disable_fn) ((m)->super.ft_event = NULL)
#else
#  define MCA_COLL_STRATA_MODULE_SERIES_INIT(m, disable_fn) \
        ((m)->super.coll_module_disable = (disable_fn))
#endif

/* Whether the point-to-point layer of this Open MPI takes CUDA device memory,
 * decided the same way on every rank of a job (same build, same MCA settings).
 * 4.1: compiled in (MPIX_CUDA_AWARE_SUPPORT) and switched on at run time: 4.1's
 * MPIX_Query_cuda_support() returns the build-time OPAL_CUDA_SUPPORT, so a run with
 * mpi_cuda_support=0 (or where its CUDA code could not load libcuda, which clears
 * the same flag) would still say yes while its convertor copies device memory as
 * host memory; opal_cuda_support is the run-time switch.
 * 5.0: the accelerator framework selected its cuda component (the null component
 * means host memory only, as in Debian's build). */
static inline int mca_coll_strata_stack_cuda_aware(void)
{
#if MCA_COLL_STRATA_OMPI_SERIES == 41
#  if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() && opal_cuda_support;
#  else
    return 0;
#  endif
#else
    const char *name = opal_accelerator_base_selected_component.base_version.mca_component_name;
    return 0 == strcmp(name, "cuda");
#endif
}

/* Whether the Open MPI this process runs is the series the component was built
 * for. Asked before anything touches a series-specific struct (init_query): the
 * MCA base checks only its own 2.1.0 version, not the coll API, so a component of
 * the other series could otherwise get as far as comm_query. On a mismatch, why
 * gets one line for the log. MPI_Get_library_version may be called before MPI_Init. */
static inline int mca_coll_strata_runtime_series_ok(char *why, size_t len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0, major = -1, minor = -1;
    if (MPI_SUCCESS != MPI_Get_library_version(lib, &n) ||
        2 != sscanf(lib, "Open MPI v%d.%d", &major, &minor)) {
        snprintf(why, len, "cannot tell the Open MPI version (\"%.40s\")", lib);
        return 0;
    }
    if (major != OMPI_MAJOR_VERSION) {
        snprintf(why, len,
                 "built for Open MPI %d.%d (coll API %s) but running in Open MPI %d.%d; "
                 "rebuild strata against this Open MPI",
                 OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, MCA_COLL_STRATA_COLL_API, major, minor);
        return 0;
    }
    return 1;
}

/* The request a nonblocking or persistent entry returns. The MPI layer (MPI_Ibcast,
 * MPI_Iallgather, ..., in both series) takes it for an ompi_coll_base_nbc_request_t:
 * for a derived datatype or a user op it retains them and stores them, and a
 * completion callback, in that struct's fields after ompi_request_t. Its header
 * (ompi/mca/coll/base/coll_base_util.h) cannot be included: it needs
 * ompi/mpi/fortran/base/fint_2_int.h, which Debian's and Ubuntu's packages of 4.1 and
 * 5.0 do not install. So a strata request starts with ompi_request_t and room for
 * those fields, which only libmpi touches (the parent class's constructor clears
 * them): 4.1: callback, its data, two retained objects; 5.0: callback, its data,
 * three words of retained objects and OMPI_REQ_NB_RELEASE_ARRAYS (7) arrays. */
#if MCA_COLL_STRATA_OMPI_SERIES == 41
#  define MCA_COLL_STRATA_NBC_WORDS 4
#else
#  define MCA_COLL_STRATA_NBC_WORDS 12
#endif
typedef struct mca_coll_strata_nbc_request {
    ompi_request_t super;
    void *nbc_fields[MCA_COLL_STRATA_NBC_WORDS];
} mca_coll_strata_nbc_request_t;
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

/* Whether the running libmpi's ompi_coll_base_nbc_request_t fits in that room. */
static inline int mca_coll_strata_nbc_request_fits(void)
{
    return ompi_coll_base_nbc_request_t_class.cls_sizeof <= sizeof(mca_coll_strata_nbc_request_t);
}

/* Whether rank i of comm runs on this node. */
static inline int mca_coll_strata_peer_is_local(struct ompi_communicator_t *comm, int i)
{
    ompi_proc_t *proc;
    if (i == ompi_comm_rank(comm)) {
        return 1;
    }
    proc = ompi_comm_peer_lookup(comm, i);
    return NULL != proc && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
}

#endif /* MCA_COLL_STRATA_COMPAT_H */
