/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_reduce_scatter.c - MPI_Reduce_scatter and MPI_Reduce_scatter_block.
 *
 * Both reach the core as one call with a count per rank (the block variant repeats
 * rcount). Unlike the other collectives, MPI_Reduce_scatter arrives here even when
 * some counts are zero.
 */
#include "coll_strata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"

/* Shared by both variants: m->rs_counts already holds the per-rank counts (total in
 * all). A derived datatype of one predefined type is packed (see coll_strata_allreduce.c). */
static const char *try_strata(mca_coll_strata_module_t *m, const char *name, const void *sbuf,
                              void *rbuf, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              size_t total, int *rc)
{
    strata_dtype_t sdt;
    strata_op_t sop;
    size_t per = 1, size = 0, i, n = (size_t) ompi_comm_size(m->comm);
    int packed = 0;
    struct ompi_datatype_t *basic = dtype;
    mca_coll_strata_packed_t p = { NULL, NULL };
    const char *why;
    strata_status_t st;

    ompi_datatype_type_size(dtype, &size);
    if (0 == total * size) {   /* the same on every rank: signatures match */
        *rc = MPI_SUCCESS;
        return NULL;
    }
    why = mca_coll_strata_reduction_type(dtype, op, &sdt, &sop, &per, &packed, &basic);
    if (NULL != why) {
        return why;
    }
    if (packed) {
        const char *bad = mca_coll_strata_pack_reduction(&p, MPI_IN_PLACE == sbuf ? rbuf : sbuf, (int) total, dtype,
                                                         total * size, &st);
        if (NULL != bad) {
            int served;
            free(p.send);
            free(p.recv);
            *rc = mca_coll_strata_fail_reduction(m, STRATA_COLL_REDUCE_SCATTER, name, st, bad, total * size, sdt,
                                                 sop, &served);
            return served ? NULL : mca_coll_strata_why_core_declined;
        }
        for (i = 0; i < n; ++i) {
            m->rs_counts[i] *= per;
        }
    }
    st = strata_reduce_scatter(m->team, packed ? p.send : MCA_COLL_STRATA_SBUF(sbuf), packed ? p.recv : rbuf,
                               m->rs_counts, sdt, sop);
    if (STRATA_OK == st && 0 != strcmp(name, "reduce_scatter")) {
        mca_coll_strata_log_variant(m, STRATA_COLL_REDUCE_SCATTER, name, total * size, "");
    }
    if (STRATA_FALLBACK != st) {
        *rc = mca_coll_strata_status_to_mpi(st, m, name);
        if (packed && MPI_SUCCESS == *rc) {
            *rc = mca_coll_strata_unpack(p.recv, rbuf, (int) (m->rs_counts[ompi_comm_rank(m->comm)] / per), dtype);
        }
        why = NULL;
    } else {
        why = mca_coll_strata_why_core_declined;
        if (packed) {   /* the previous component gets the packed copy as the basic type */
            int *counts = malloc(n * sizeof(int));
            mca_coll_strata_log_fallback(m, name, total * size, why);
            *rc = MPI_ERR_NO_MEM;
            if (NULL != counts) {
                for (i = 0; i < n; ++i) {
                    counts[i] = (int) m->rs_counts[i];
                }
                *rc = mca_coll_strata_prev_reduce_scatter(m, p.send, p.recv, counts, basic, op);
                free(counts);
            }
            if (MPI_SUCCESS == *rc) {
                *rc = mca_coll_strata_unpack(p.recv, rbuf, (int) (m->rs_counts[ompi_comm_rank(m->comm)] / per), dtype);
            }
            why = NULL;
        }
    }
    free(p.send);
    free(p.recv);
    return why;
}

int mca_coll_strata_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, n = ompi_comm_size(comm), rc = MPI_SUCCESS;
    size_t total = 0, size = 0;
    const char *why;

    for (i = 0; i < n; ++i) {
        m->rs_counts[i] = (size_t) rcounts[i];
        total += m->rs_counts[i];
    }
    why = try_strata(m, "reduce_scatter", sbuf, rbuf, dtype, op, total, &rc);
    if (NULL == why) {
        return rc;
    }
    ompi_datatype_type_size(dtype, &size);
    mca_coll_strata_log_fallback(m, "reduce_scatter", total * size, why);
    return mca_coll_strata_prev_reduce_scatter(m, sbuf, rbuf, rcounts, dtype, op);
}

int mca_coll_strata_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, n = ompi_comm_size(comm), rc = MPI_SUCCESS;
    size_t size = 0;
    const char *why;

    for (i = 0; i < n; ++i) {
        m->rs_counts[i] = (size_t) rcount;
    }
    why = try_strata(m, "reduce_scatter_block", sbuf, rbuf, dtype, op, (size_t) rcount * (size_t) n, &rc);
    if (NULL == why) {
        return rc;
    }
    ompi_datatype_type_size(dtype, &size);
    mca_coll_strata_log_fallback(m, "reduce_scatter_block", (size_t) rcount * (size_t) n * size, why);
    return mca_coll_strata_prev_reduce_scatter_block(m, sbuf, rbuf, rcount, dtype, op);
}
