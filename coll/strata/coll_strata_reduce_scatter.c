/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_reduce_scatter.c - MPI_Reduce_scatter and MPI_Reduce_scatter_block:
 * blocking, nonblocking and persistent.
 *
 * Both reach the core as one call with a count per rank (the block variant repeats
 * rcount). Unlike the other collectives, MPI_Reduce_scatter arrives here even when
 * some counts are zero. Derived datatypes of one predefined type as in
 * coll_strata_allreduce.c.
 */
#include "coll_strata_request.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

/* A reduce_scatter as the core sees it. */
typedef struct rs_call {
    const void *s;       /* MPI_IN_PLACE, the user's buffer or a packed copy */
    void *d;
    size_t *counts;      /* per rank, in elements of sdt */
    size_t bytes;        /* of the whole input */
    strata_dtype_t sdt;
    strata_op_t sop;
    int packed;
    struct ompi_datatype_t *basic;
} rs_call_t;

/* The one mapping of the arguments, for every mode: rcounts[i] elements to rank i
 * (block: rcount each, rcounts NULL) into c, counts (n entries) its per-rank counts.
 * NULL when mapped, else why not (as reduction_map in coll_strata_allreduce.c). */
static const char *rs_map(mca_coll_strata_packing_t *pk, const void *sbuf, void *rbuf, const int *rcounts,
                          int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op, int n, int me,
                          size_t *counts, rs_call_t *c, strata_status_t *st)
{
    const int mine = rcounts ? rcounts[me] : rcount;
    size_t size = 0, total = 0, per = 1;
    const char *why;
    int i;
    ompi_datatype_type_size(dtype, &size);
    for (i = 0; i < n; ++i) {
        counts[i] = (size_t) (rcounts ? rcounts[i] : rcount);
        total += counts[i];
    }
    c->s = sbuf;
    c->d = rbuf;
    c->counts = counts;
    c->bytes = total * size;
    c->sdt = STRATA_BYTE;
    c->sop = STRATA_OP_SUM;
    c->packed = 0;
    c->basic = dtype;
    *st = STRATA_FALLBACK;
    if (0 == c->bytes) {   /* the same on every rank: signatures match */
        return "nothing to move";
    }
    why = mca_coll_strata_reduction_type(dtype, op, &c->sdt, &c->sop, &per, &c->packed, &c->basic);
    if (NULL != why || !c->packed) {
        return why;
    }
    for (i = 0; i < n; ++i) {
        counts[i] *= per;
    }
    if ((MPI_IN_PLACE != sbuf && NULL == sbuf) || NULL == rbuf) {
        *st = STRATA_ERR_BUFFER;
        return "a buffer is NULL";
    }
    if (MPI_IN_PLACE != sbuf) {
        c->s = mca_coll_strata_packing_as_bytes(pk, sbuf, (int) total, dtype, 1, 0);
        c->d = mca_coll_strata_packing_as_bytes(pk, rbuf, mine, dtype, 0, 1);
    } else if (NULL != mca_coll_strata_check_bytes(dtype, (int) total, &size)) {
        /* in place with gaps: the whole input packed in, this rank's result unpacked */
        c->d = mca_coll_strata_packing_mem(pk, c->bytes);
        if (NULL != c->d && (!mca_coll_strata_packing_add(pk, 1, rbuf, (int) total, dtype, c->d) ||
                             !mca_coll_strata_packing_add(pk, 0, rbuf, mine, dtype, c->d))) {
            c->d = NULL;
        }
    }
    if (NULL == c->s || NULL == c->d) {
        *st = STRATA_ERR_NOMEM;
        return "no memory to pack the datatype";
    }
    return NULL;
}

/* The previous component's reduce_scatter on the packed copies, as the basic type. */
static int prev_packed(mca_coll_strata_module_t *m, const rs_call_t *c, struct ompi_op_t *op)
{
    int i, n = ompi_comm_size(m->comm), rc = MPI_ERR_NO_MEM;
    int *counts = malloc((size_t) n * sizeof(int));
    if (NULL != counts) {
        for (i = 0; i < n; ++i) {
            counts[i] = (int) c->counts[i];
        }
        rc = mca_coll_strata_prev_reduce_scatter(m, c->s, c->d, counts, c->basic, op);
        free(counts);
    }
    return rc;
}

/* The blocking call of either variant (rcounts NULL: block). */
static int reduce_scatter_any(mca_coll_strata_module_t *m, const char *name, const void *sbuf, void *rbuf,
                              const int *rcounts, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    mca_coll_strata_packing_t pk = { 0 };
    rs_call_t c;
    strata_status_t st;
    int rc, served = 1;
    const char *why = rs_map(&pk, sbuf, rbuf, rcounts, rcount, dtype, op, ompi_comm_size(m->comm),
                             ompi_comm_rank(m->comm), m->rs_counts, &c, &st);

    if (0 == c.bytes) {
        return MPI_SUCCESS;
    }
    if (NULL == why && MPI_SUCCESS != mca_coll_strata_packing_pack(&pk)) {
        st = STRATA_ERR_ARG;
        why = "packing the datatype failed (more than 2 GiB?)";
    }
    if (NULL != why && STRATA_FALLBACK != st) {
        mca_coll_strata_packing_free(&pk);
        rc = mca_coll_strata_fail_reduction(m, STRATA_COLL_REDUCE_SCATTER, name, st, why, c.bytes, c.sdt, c.sop,
                                            &served);
        if (served) {
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    } else if (NULL == why) {
        st = strata_reduce_scatter(m->team, MCA_COLL_STRATA_SBUF(c.s), c.d, c.counts, c.sdt, c.sop);
        if (STRATA_OK == st && NULL == rcounts) {
            mca_coll_strata_log_variant(m, STRATA_COLL_REDUCE_SCATTER, name, c.bytes, "");
        }
        why = mca_coll_strata_why_core_declined;
        if (STRATA_FALLBACK != st || c.packed) {
            if (STRATA_FALLBACK == st) {   /* the previous component gets the packed copies as the basic type */
                mca_coll_strata_log_fallback(m, name, c.bytes, why);
                rc = prev_packed(m, &c, op);
            } else {
                rc = mca_coll_strata_status_to_mpi(st, m, name);
            }
            if (MPI_SUCCESS == rc) {
                rc = mca_coll_strata_packing_unpack(&pk);
            }
            mca_coll_strata_packing_free(&pk);
            return rc;
        }
    }
    mca_coll_strata_packing_free(&pk);
    mca_coll_strata_log_fallback(m, name, c.bytes, why);
    return rcounts ? mca_coll_strata_prev_reduce_scatter(m, sbuf, rbuf, rcounts, dtype, op)
                   : mca_coll_strata_prev_reduce_scatter_block(m, sbuf, rbuf, rcount, dtype, op);
}

int mca_coll_strata_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_any(MCA_COLL_STRATA_M(module), "reduce_scatter", sbuf, rbuf, rcounts, 0, dtype, op);
}

int mca_coll_strata_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_any(MCA_COLL_STRATA_M(module), "reduce_scatter_block", sbuf, rbuf, NULL, rcount, dtype, op);
}

/* A call handed back after the core queued it (coll_strata_request.h). */
static int reduce_scatter_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm,
                                 ompi_request_t **inner)
{
    return comm->c_coll->coll_ireduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->rdt, a->op, comm, inner,
                                              comm->c_coll->coll_ireduce_scatter_module);
}

static int reduce_scatter_block_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm,
                                       ompi_request_t **inner)
{
    return comm->c_coll->coll_ireduce_scatter_block(a->sbuf, a->rbuf, a->rcount, a->rdt, a->op, comm, inner,
                                                    comm->c_coll->coll_ireduce_scatter_block_module);
}

static void reduce_scatter_spans(const mca_coll_strata_replay_t *a, int n, int me, ptrdiff_t *slo, size_t *slen,
                                 ptrdiff_t *rlo, size_t *rlen)
{
    size_t total = 0;
    int i;
    for (i = 0; i < n; ++i) {
        total += (size_t) (NULL != a->rcounts ? a->rcounts[i] : a->rcount);
    }
    mca_coll_strata_span(a->rdt, total, slo, slen);
    if (MPI_IN_PLACE == a->sbuf) {   /* the receive buffer holds the whole input */
        *rlo = *slo;
        *rlen = *slen;
    } else {
        mca_coll_strata_span(a->rdt, (size_t) (NULL != a->rcounts ? a->rcounts[me] : a->rcount), rlo, rlen);
    }
}

static const mca_coll_strata_replay_ops_t reduce_scatter_ops = { reduce_scatter_replay, reduce_scatter_spans, 0 };
static const mca_coll_strata_replay_ops_t reduce_scatter_block_ops = { reduce_scatter_block_replay,
                                                                       reduce_scatter_spans, 0 };

/* The nonblocking or persistent call of either variant (rcounts NULL: block). */
static int reduce_scatter_nb(mca_coll_strata_module_t *m, const char *name, const void *sbuf, void *rbuf,
                             const int *rcounts, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             int persistent, struct ompi_info_t *info, ompi_request_t **request)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm), mine = rcounts ? rcounts[me] : rcount;
    const char *why = mca_coll_strata_nb_refused();
    size_t total = 0, size = 0;
    size_t *counts = malloc((size_t) n * sizeof(size_t));
    mca_coll_strata_packing_t pk = { 0 };
    rs_call_t c;
    strata_status_t st = STRATA_FALLBACK;
    int i, rc = MPI_SUCCESS;
    mca_coll_strata_pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    ompi_request_t *inner = NULL;

    if (NULL == counts) {
        return MPI_ERR_NO_MEM;   /* before anything: this rank only (as the blocking call's malloc) */
    }
    for (i = 0; i < n; ++i) {
        total += (size_t) (rcounts ? rcounts[i] : rcount);
    }
    ompi_datatype_type_size(dtype, &size);
    c.bytes = total * size;
    if (NULL == why) {
        why = rs_map(&pk, sbuf, rbuf, rcounts, rcount, dtype, op, n, me, counts, &c, &st);
    }
    if (NULL == why || STRATA_FALLBACK != st) {
        mca_coll_strata_request_t *r = mca_coll_strata_nb_new(m, name, persistent);
        const mca_coll_strata_replay_t call = { .ops = rcounts ? &reduce_scatter_ops : &reduce_scatter_block_ops,
                                                .sbuf = sbuf, .rbuf = rbuf, .rcount = rcount, .rcounts = rcounts,
                                                .rdt = dtype, .op = op };
        if (NULL == r) {
            mca_coll_strata_packing_free(&pk);
            free(counts);
            return MPI_ERR_NO_MEM;
        }
        r->packing = pk;
        mca_coll_strata_nb_name_variant(r, NULL == rcounts ? "reduce_scatter_block" : NULL,
                                        STRATA_COLL_REDUCE_SCATTER, c.bytes);
        mca_coll_strata_nb_keep(r, &call);
        if (NULL == why && !persistent && MPI_SUCCESS != mca_coll_strata_packing_pack(&r->packing)) {
            st = STRATA_ERR_ARG;
            why = "packing the datatype failed";
        }
        if (NULL != why) {
            free(counts);
            return mca_coll_strata_nb_local_failure(r, STRATA_COLL_REDUCE_SCATTER, st, why, c.bytes, c.sdt, c.sop,
                                                    request, &rc) ? rc : MPI_ERR_NO_MEM;
        }
        if (mca_coll_strata_nb_taken(r, strata_ireduce_scatter(m->team, MCA_COLL_STRATA_SBUF(c.s), c.d, c.counts,
                                                               c.sdt, c.sop, &r->how, &r->core),
                                     request, &rc)) {
            free(counts);
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    free(counts);
    mca_coll_strata_log_fallback(m, name, c.bytes, why);
    mca_coll_strata_span(dtype, total, &slo, &slen);
    mca_coll_strata_span(dtype, MPI_IN_PLACE == sbuf ? total : (size_t) mine, &rlo, &rlen);
    if (!mca_coll_strata_nb_stage(&p, name, sbuf, slo, slen, rbuf, rlo, rlen, &rc)) {
        return rcounts ? MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, reduce_scatter, sbuf, rbuf, rcounts, dtype, op)
                       : MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, reduce_scatter_block, sbuf, rbuf, rcount, dtype,
                                                        op);
    }
    if (MPI_SUCCESS == rc) {
        rc = rcounts ? MCA_COLL_STRATA_NB_PREV(m, persistent, reduce_scatter, p.su, p.ru, rcounts, dtype, op)
                     : MCA_COLL_STRATA_NB_PREV(m, persistent, reduce_scatter_block, p.su, p.ru, rcount, dtype, op);
    }
    return mca_coll_strata_nb_wrap(m, name, persistent, &p, 1, rc, inner, request);
}

int mca_coll_strata_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_nb(MCA_COLL_STRATA_M(module), "ireduce_scatter", sbuf, rbuf, rcounts, 0, dtype, op, 0,
                             NULL, request);
}

int mca_coll_strata_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_nb(MCA_COLL_STRATA_M(module), "reduce_scatter_init", sbuf, rbuf, rcounts, 0, dtype, op, 1,
                             info, request);
}

int mca_coll_strata_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_nb(MCA_COLL_STRATA_M(module), "ireduce_scatter_block", sbuf, rbuf, NULL, rcount, dtype,
                             op, 0, NULL, request);
}

int mca_coll_strata_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_nb(MCA_COLL_STRATA_M(module), "reduce_scatter_block_init", sbuf, rbuf, NULL, rcount,
                             dtype, op, 1, info, request);
}
