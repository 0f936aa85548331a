/*
 * coll_strata_bcast.c - MPI_Bcast entry point (moves bytes: any gap-free datatype).
 */
#include "coll_strata.h"

#include "ompi/datatype/ompi_datatype.h"

int mca_coll_strata_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    size_t bytes = 0;
    const char *why;

    why = mca_coll_strata_check_bytes(dtype, count, &bytes);
    if (NULL == why) {
        strata_status_t st = strata_bcast(m->team, buf, bytes, root);
        if (STRATA_FALLBACK != st) {
            return mca_coll_strata_status_to_mpi(st, comm, "bcast");
        }
        why = mca_coll_strata_why_core_declined;
    }
    if (0 == bytes) {
        ompi_datatype_type_size(dtype, &bytes);
        bytes *= (size_t) count;
    }
    mca_coll_strata_log_fallback(comm, "bcast", bytes, why);
    return mca_coll_strata_prev_bcast(m, buf, count, dtype, root);
}
