/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_reduce.c - MPI_Reduce entry point (0 bytes and derived datatypes as in
 * coll_strata_allreduce.c).
 */
#include "coll_strata.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

/* The receive buffer matters at the root only; MPI_IN_PLACE is legal at the root only. */
int mca_coll_strata_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int is_root = ompi_comm_rank(comm) == root;
    void *r = is_root ? rbuf : NULL;
    strata_dtype_t sdt;
    strata_op_t sop;
    size_t bytes = 0, per = 1;
    mca_coll_strata_packed_t p = { NULL, NULL };
    strata_status_t st;
    const char *why;
    int packed = 0, rc;
    struct ompi_datatype_t *basic = dtype;

    ompi_datatype_type_size(dtype, &bytes);
    bytes *= (size_t) count;
    if (0 == bytes) {
        return MPI_SUCCESS;
    }
    why = mca_coll_strata_reduction_type(dtype, op, &sdt, &sop, &per, &packed, &basic);
    if (NULL == why) {
        if (packed) {
            const char *bad = mca_coll_strata_pack_reduction(&p, MPI_IN_PLACE == sbuf ? rbuf : sbuf, count, dtype, bytes, &st);
            if (NULL != bad) {
                int served;
                free(p.send);
                free(p.recv);
                rc = mca_coll_strata_fail_reduction(m, STRATA_COLL_REDUCE, "reduce", st, bad, bytes, sdt, sop, &served);
                return served ? rc : mca_coll_strata_prev_reduce(m, sbuf, rbuf, count, dtype, op, root);
            }
            st = strata_reduce(m->team, p.send, is_root ? p.recv : NULL, (size_t) count * per, sdt, sop, root);
        } else {
            st = strata_reduce(m->team, MCA_COLL_STRATA_SBUF(sbuf), r, (size_t) count, sdt, sop, root);
        }
        if (STRATA_FALLBACK != st) {
            rc = mca_coll_strata_status_to_mpi(st, m, "reduce");
            if (packed && is_root && MPI_SUCCESS == rc) {
                rc = mca_coll_strata_unpack(p.recv, rbuf, count, dtype);
            }
            free(p.send);
            free(p.recv);
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
        if (packed) {   /* the previous component gets the packed copy as the basic type */
            mca_coll_strata_log_fallback(m, "reduce", bytes, why);
            rc = mca_coll_strata_prev_reduce(m, p.send, p.recv, (int) ((size_t) count * per), basic, op, root);
            if (MPI_SUCCESS == rc && is_root) {
                rc = mca_coll_strata_unpack(p.recv, rbuf, count, dtype);
            }
            free(p.send);
            free(p.recv);
            return rc;
        }
    }
    mca_coll_strata_log_fallback(m, "reduce", bytes, why);
    return mca_coll_strata_prev_reduce(m, sbuf, rbuf, count, dtype, op, root);
}
