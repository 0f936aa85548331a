/*
 * coll_strata_bcast.c - MPI_Bcast entry point (moves bytes: any gap-free datatype).
 */
#include "coll_strata.h"

#include "ompi/datatype/ompi_datatype.h"

/* The core call; one line to enable when strata_bcast lands (issue 3). */
static strata_status_t bcast_core(mca_coll_strata_module_t *m, void *buf, size_t bytes, int root,
                                  const char **why)
{
    (void) m; (void) buf; (void) bytes; (void) root;
    *why = mca_coll_strata_why_core_pending;   /* core algorithm lands with issue 3 */
    return STRATA_FALLBACK;
    /* return strata_bcast(m->team, buf, bytes, root); */
}

int mca_coll_strata_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    size_t bytes = 0;
    const char *why;

    why = mca_coll_strata_check_bytes(dtype, count, &bytes);
    if (NULL == why) {
        why = mca_coll_strata_check_buffers(buf, NULL);
    }
    if (NULL == why) {
        strata_status_t st = bcast_core(m, buf, bytes, root, &why);
        if (STRATA_FALLBACK != st) {
            return mca_coll_strata_status_to_mpi(st, comm, "bcast");
        }
        if (NULL == why) {
            why = mca_coll_strata_why_core_declined;
        }
    }
    if (0 == bytes) {
        ompi_datatype_type_size(dtype, &bytes);
        bytes *= (size_t) count;
    }
    mca_coll_strata_log_fallback(comm, "bcast", bytes, why);
    return m->prev.bcast(buf, count, dtype, root, comm, m->prev.bcast_module);
}
