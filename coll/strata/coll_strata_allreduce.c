/*
 * coll_strata_allreduce.c - MPI_Allreduce entry point.
 */
#include "coll_strata.h"

#include "ompi/datatype/ompi_datatype.h"

int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    strata_dtype_t sdt;
    strata_op_t sop;
    size_t bytes = 0;
    const char *why;

    ompi_datatype_type_size(dtype, &bytes);
    bytes *= (size_t) count;

    why = mca_coll_strata_check_reduction(dtype, op, &sdt, &sop);
    if (NULL == why) {
        strata_status_t st = strata_allreduce(m->team, MCA_COLL_STRATA_SBUF(sbuf), rbuf,
                                              (size_t) count, sdt, sop);
        if (STRATA_FALLBACK != st) {
            return mca_coll_strata_status_to_mpi(st, m, "allreduce");
        }
        why = mca_coll_strata_why_core_declined;
    }
    mca_coll_strata_log_fallback(comm, "allreduce", bytes, why);
    return mca_coll_strata_prev_allreduce(m, sbuf, rbuf, count, dtype, op);
}
