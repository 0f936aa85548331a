/*
 * coll_strata_compat.h - every Open MPI version difference the glue depends on.
 *
 * Open MPI 4.1: coll component interface 2.0.0, module 2.3.0, int counts; the base
 * copies a module's non-NULL function pointers into comm->c_coll after enable, so
 * enable only captures the previous functions (it must not install anything).
 * 5.0 (2.4.0) has the same shape; main/6.x (3.0.0) uses size_t counts and an enable
 * that installs its own pointers. Only 4.x is supported so far (configure checks).
 */
#ifndef MCA_COLL_STRATA_COMPAT_H
#define MCA_COLL_STRATA_COMPAT_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"

#if OMPI_MAJOR_VERSION != 4
#error "coll/strata: only the Open MPI 4.x coll interface (2.0.0) is supported so far"
#endif

/* Component version struct and its initializer. */
typedef mca_coll_base_component_2_0_0_t mca_coll_strata_base_component_t;
#define MCA_COLL_STRATA_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0

/* Count type of the coll function signatures (int in 4.x, size_t in 6.x). */
typedef int mca_coll_strata_count_t;

/* Info object attached to a communicator. In 4.1 MPI_Comm_dup_with_info (and
 * MPI_Comm_split_type etc.) attach the info before coll selection
 * (ompi_comm_dup_with_info copies it, then ompi_comm_activate selects), so
 * comm_query can read it. Plain MPI_Comm_dup passes no info in 4.1. */
#define MCA_COLL_STRATA_COMM_INFO(comm) ((comm)->super.s_info)

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
