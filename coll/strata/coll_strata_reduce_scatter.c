/*
 * coll_strata_reduce_scatter.c - MPI_Reduce_scatter and MPI_Reduce_scatter_block.
 *
 * Both reach the core as one call with a count per rank (the block variant repeats
 * rcount). Unlike the other collectives, MPI_Reduce_scatter arrives here even when
 * some counts are zero.
 */
#include "coll_strata.h"

#include <stdio.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"

/* Shared by both variants: m->rs_counts already holds the per-rank counts. */
static const char *try_strata(mca_coll_strata_module_t *m, const char *name, const void *sbuf,
                              void *rbuf, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              size_t total, int *rc)
{
    strata_dtype_t sdt;
    strata_op_t sop;
    uint64_t before[MCA_COLL_STRATA_MAX_ALGS];
    const char *why = mca_coll_strata_check_reduction(dtype, op, &sdt, &sop);
    if (NULL == why) {
        strata_status_t st;
        mca_coll_strata_calls_snapshot(m, STRATA_COLL_REDUCE_SCATTER, before);
        st = strata_reduce_scatter(m->team, MCA_COLL_STRATA_SBUF(sbuf), rbuf, m->rs_counts,
                                   sdt, sop);
        if (STRATA_OK == st && 0 != strcmp(name, "reduce_scatter")) {
            mca_coll_strata_log_variant(m, STRATA_COLL_REDUCE_SCATTER, name, total * strata_dtype_size(sdt), before);
        }
        if (STRATA_FALLBACK != st) {
            *rc = mca_coll_strata_status_to_mpi(st, m, name);
            return NULL;
        }
        why = mca_coll_strata_why_core_declined;
    }
    return why;
}

int mca_coll_strata_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
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
    mca_coll_strata_log_fallback(comm, "reduce_scatter", total * size, why);
    return mca_coll_strata_prev_reduce_scatter(m, sbuf, rbuf, rcounts, dtype, op);
}

int mca_coll_strata_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module)
{
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
    mca_coll_strata_log_fallback(comm, "reduce_scatter_block", (size_t) rcount * (size_t) n * size, why);
    return mca_coll_strata_prev_reduce_scatter_block(m, sbuf, rbuf, rcount, dtype, op);
}
