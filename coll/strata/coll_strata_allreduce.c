/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_allreduce.c - MPI_Allreduce entry point.
 *
 * A call of 0 bytes in all (count 0, or a datatype of size 0: the same on every rank,
 * since the type signatures must match) does nothing and sends nothing. A derived
 * datatype whose signature is one predefined type repeated is packed into a
 * contiguous copy, reduced as that type, and unpacked (only reachable with
 * mpi_param_check off: Open MPI's binding refuses predefined ops on derived types).
 */
#include "coll_strata.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
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
                rc = mca_coll_strata_fail_reduction(m, STRATA_COLL_ALLREDUCE, "allreduce", st, bad, bytes, sdt, sop,
                                                    &served);
                return served ? rc : mca_coll_strata_prev_allreduce(m, sbuf, rbuf, count, dtype, op);
            }
            st = strata_allreduce(m->team, p.send, p.recv, (size_t) count * per, sdt, sop);
        } else {
            st = strata_allreduce(m->team, MCA_COLL_STRATA_SBUF(sbuf), rbuf, (size_t) count, sdt, sop);
        }
        if (STRATA_FALLBACK != st) {
            rc = mca_coll_strata_status_to_mpi(st, m, "allreduce");
            if (packed && MPI_SUCCESS == rc) {
                rc = mca_coll_strata_unpack(p.recv, rbuf, count, dtype);
            }
            free(p.send);
            free(p.recv);
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
        if (packed) {   /* the previous component gets the packed copy as the basic type */
            mca_coll_strata_log_fallback(m, "allreduce", bytes, why);
            rc = mca_coll_strata_prev_allreduce(m, p.send, p.recv, (int) ((size_t) count * per), basic, op);
            if (MPI_SUCCESS == rc) {
                rc = mca_coll_strata_unpack(p.recv, rbuf, count, dtype);
            }
            free(p.send);
            free(p.recv);
            return rc;
        }
    }
    mca_coll_strata_log_fallback(m, "allreduce", bytes, why);
    return mca_coll_strata_prev_allreduce(m, sbuf, rbuf, count, dtype, op);
}
