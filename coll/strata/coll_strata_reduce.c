/*
 * coll_strata_reduce.c - MPI_Reduce entry point.
 *
 * The receive buffer matters at the root only; MPI_IN_PLACE is legal at the root only.
 */
#include "coll_strata.h"

#include "ompi/datatype/ompi_datatype.h"

int mca_coll_strata_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int is_root = ompi_comm_rank(comm) == root;
    const void *s = MCA_COLL_STRATA_SBUF(sbuf);
    void *r = is_root ? rbuf : NULL;
    strata_dtype_t sdt;
    strata_op_t sop;
    size_t bytes = 0;
    const char *why;

    ompi_datatype_type_size(dtype, &bytes);
    bytes *= (size_t) count;

    why = mca_coll_strata_check_reduction(dtype, op, &sdt, &sop);
    if (NULL == why) {
        strata_status_t st = strata_reduce(m->team, s, r, (size_t) count, sdt, sop, root);
        if (STRATA_FALLBACK != st) {
            return mca_coll_strata_status_to_mpi(st, m, "reduce");
        }
        why = mca_coll_strata_why_core_declined;
    }
    mca_coll_strata_log_fallback(comm, "reduce", bytes, why);
    return mca_coll_strata_prev_reduce(m, sbuf, rbuf, count, dtype, op, root);
}
