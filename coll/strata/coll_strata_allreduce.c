/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_allreduce.c - MPI_Allreduce and MPI_Reduce (a reduction to every rank,
 * or to the root): blocking, nonblocking and persistent.
 *
 * A call of 0 bytes in all (count 0, or a datatype of size 0: the same on every rank,
 * since the type signatures must match) does nothing and sends nothing. A derived
 * datatype whose signature is one predefined type repeated is reduced as that type,
 * through packed copies where its elements have gaps (only reachable with
 * mpi_param_check off: Open MPI's binding refuses predefined ops on derived types).
 * For MPI_Reduce the receive buffer matters at the root only; MPI_IN_PLACE is legal
 * at the root only.
 */
#include "coll_strata_request.h"

#include "ompi/datatype/ompi_datatype.h"

/* A reduction as the core sees it. */
typedef struct reduction {
    const void *s;       /* send side: MPI_IN_PLACE, the user's buffer or a packed copy */
    void *d;             /* receive side (NULL off the root) */
    size_t bytes;        /* of the whole vector */
    size_t count;        /* elements of sdt */
    strata_dtype_t sdt;
    strata_op_t sop;
    int packed;          /* a derived datatype reduced as basic */
    struct ompi_datatype_t *basic;
} reduction_t;

/* The one mapping of a reduction's arguments, for every mode (root < 0: allreduce):
 * NULL when mapped into c (with pk packing and unpacking the copies), else why not:
 * with *st == STRATA_FALLBACK strata declines the call (the same on every rank),
 * otherwise this rank cannot take part (*st says why, its peers must hear of it). */
static const char *reduction_map(mca_coll_strata_packing_t *pk, const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int is_root, reduction_t *c,
                                 strata_status_t *st)
{
    size_t per = 1;
    const char *why;
    ompi_datatype_type_size(dtype, &c->bytes);
    c->bytes *= (size_t) count;
    c->s = sbuf;
    c->d = is_root ? rbuf : NULL;
    c->count = (size_t) count;
    c->sdt = STRATA_BYTE;
    c->sop = STRATA_OP_SUM;
    c->packed = 0;
    c->basic = dtype;
    *st = STRATA_FALLBACK;
    if (0 == c->bytes) {
        return "nothing to move";
    }
    why = mca_coll_strata_reduction_type(dtype, op, &c->sdt, &c->sop, &per, &c->packed, &c->basic);
    if (NULL != why || !c->packed) {
        return why;
    }
    c->count *= per;
    if ((MPI_IN_PLACE != sbuf && NULL == sbuf) || (is_root && NULL == rbuf)) {
        *st = STRATA_ERR_BUFFER;
        return "a buffer is NULL";
    }
    if (is_root) {   /* in place: the receive side holds the input */
        c->d = mca_coll_strata_packing_as_bytes(pk, rbuf, count, dtype, MPI_IN_PLACE == sbuf, 1);
    }
    if (MPI_IN_PLACE != sbuf) {
        c->s = mca_coll_strata_packing_as_bytes(pk, sbuf, count, dtype, 1, 0);
    }
    if (NULL == c->s || (is_root && NULL == c->d)) {
        *st = STRATA_ERR_NOMEM;
        return "no memory to pack the datatype";
    }
    return NULL;
}

static int prev_reduction(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf, int count,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root)
{
    return root < 0 ? mca_coll_strata_prev_allreduce(m, sbuf, rbuf, count, dtype, op)
                    : mca_coll_strata_prev_reduce(m, sbuf, rbuf, count, dtype, op, root);
}

/* The blocking call (root < 0: allreduce). */
static int reduction(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf, int count,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root)
{
    const int all = root < 0, is_root = all || ompi_comm_rank(m->comm) == root;
    const strata_coll_t coll = all ? STRATA_COLL_ALLREDUCE : STRATA_COLL_REDUCE;
    const char *name = all ? "allreduce" : "reduce";
    mca_coll_strata_packing_t pk = { 0 };
    reduction_t c;
    strata_status_t st;
    int rc, served = 1;
    const char *why = reduction_map(&pk, sbuf, rbuf, count, dtype, op, is_root, &c, &st);

    if (0 == c.bytes) {
        return MPI_SUCCESS;
    }
    if (NULL == why && MPI_SUCCESS != mca_coll_strata_packing_pack(&pk)) {
        st = STRATA_ERR_ARG;
        why = "packing the datatype failed (more than 2 GiB?)";
    }
    if (NULL != why && STRATA_FALLBACK != st) {
        mca_coll_strata_packing_free(&pk);
        rc = mca_coll_strata_fail_reduction(m, coll, name, st, why, c.bytes, c.sdt, c.sop, &served);
        return served ? rc : prev_reduction(m, sbuf, rbuf, count, dtype, op, root);
    }
    if (NULL == why) {
        st = all ? strata_allreduce(m->team, MCA_COLL_STRATA_SBUF(c.s), c.d, c.count, c.sdt, c.sop)
                 : strata_reduce(m->team, MCA_COLL_STRATA_SBUF(c.s), c.d, c.count, c.sdt, c.sop, root);
        why = mca_coll_strata_why_core_declined;
        if (STRATA_FALLBACK != st || c.packed) {
            if (STRATA_FALLBACK == st) {   /* the previous component gets the packed copies as the basic type */
                mca_coll_strata_log_fallback(m, name, c.bytes, why);
                rc = prev_reduction(m, c.s, c.d, (int) c.count, c.basic, op, root);
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
    return prev_reduction(m, sbuf, rbuf, count, dtype, op, root);
}

int mca_coll_strata_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduction(MCA_COLL_STRATA_M(module), sbuf, rbuf, count, dtype, op, -1);
}

int mca_coll_strata_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduction(MCA_COLL_STRATA_M(module), sbuf, rbuf, count, dtype, op, root);
}

/* A reduction handed back after the core queued it (coll_strata_request.h). */
static int allreduce_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm,
                            ompi_request_t **inner)
{
    return comm->c_coll->coll_iallreduce(a->sbuf, a->rbuf, a->rcount, a->rdt, a->op, comm, inner,
                                         comm->c_coll->coll_iallreduce_module);
}

static int reduce_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm, ompi_request_t **inner)
{
    return comm->c_coll->coll_ireduce(a->sbuf, a->rbuf, a->rcount, a->rdt, a->op, a->root, comm, inner,
                                      comm->c_coll->coll_ireduce_module);
}

static void reduction_spans(const mca_coll_strata_replay_t *a, int n, int me, ptrdiff_t *slo, size_t *slen,
                            ptrdiff_t *rlo, size_t *rlen)
{
    (void) n;
    (void) me;
    mca_coll_strata_span(a->rdt, (size_t) a->rcount, slo, slen);
    mca_coll_strata_span(a->rdt, (size_t) a->rcount, rlo, rlen);
}

static const mca_coll_strata_replay_ops_t allreduce_ops = { allreduce_replay, reduction_spans, 0 };
static const mca_coll_strata_replay_ops_t reduce_ops = { reduce_replay, reduction_spans, 1 };

/* The nonblocking or persistent call (root < 0: allreduce). */
static int reduction_nb(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf, int count,
                        struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root, int persistent,
                        struct ompi_info_t *info, ompi_request_t **request)
{
    const int all = root < 0, is_root = all || ompi_comm_rank(m->comm) == root;
    const strata_coll_t coll = all ? STRATA_COLL_ALLREDUCE : STRATA_COLL_REDUCE;
    const char *name = all ? MCA_COLL_STRATA_NB_NAME(persistent, "allreduce")
                           : MCA_COLL_STRATA_NB_NAME(persistent, "reduce");
    const char *why = mca_coll_strata_nb_refused();
    mca_coll_strata_packing_t pk = { 0 };
    reduction_t c;
    strata_status_t st = STRATA_FALLBACK;
    int rc = MPI_SUCCESS;
    mca_coll_strata_pair_t p;
    ptrdiff_t lo;
    size_t len;
    ompi_request_t *inner = NULL;

    c.bytes = 0;
    if (NULL == why) {
        why = reduction_map(&pk, sbuf, rbuf, count, dtype, op, is_root, &c, &st);
    } else {
        ompi_datatype_type_size(dtype, &c.bytes);
        c.bytes *= (size_t) count;
    }
    if (NULL == why || STRATA_FALLBACK != st) {
        mca_coll_strata_request_t *r = mca_coll_strata_nb_new(m, name, persistent);
        const mca_coll_strata_replay_t call = { .ops = all ? &allreduce_ops : &reduce_ops, .sbuf = sbuf,
                                                .rbuf = rbuf, .rcount = count, .root = root, .rdt = dtype, .op = op };
        if (NULL == r) {
            mca_coll_strata_packing_free(&pk);
            return MPI_ERR_NO_MEM;
        }
        r->packing = pk;
        mca_coll_strata_nb_keep(r, &call);
        if (NULL == why && !persistent && MPI_SUCCESS != mca_coll_strata_packing_pack(&r->packing)) {
            st = STRATA_ERR_ARG;
            why = "packing the datatype failed";
        }
        if (NULL != why) {
            return mca_coll_strata_nb_local_failure(r, coll, st, why, c.bytes, c.sdt, c.sop, request, &rc)
                       ? rc : MPI_ERR_NO_MEM;
        }
        st = all ? strata_iallreduce(m->team, MCA_COLL_STRATA_SBUF(c.s), c.d, c.count, c.sdt, c.sop, &r->how,
                                     &r->core)
                 : strata_ireduce(m->team, MCA_COLL_STRATA_SBUF(c.s), c.d, c.count, c.sdt, c.sop, root, &r->how,
                                  &r->core);
        if (mca_coll_strata_nb_taken(r, st, request, &rc)) {
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    mca_coll_strata_log_fallback(m, name, c.bytes, why);
    mca_coll_strata_span(dtype, (size_t) count, &lo, &len);
    if (!mca_coll_strata_nb_stage(&p, name, sbuf, lo, len, is_root ? rbuf : NULL, lo, is_root ? len : 0, &rc)) {
        return all ? MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, allreduce, sbuf, rbuf, count, dtype, op)
                   : MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, reduce, sbuf, rbuf, count, dtype, op, root);
    }
    if (MPI_SUCCESS == rc) {
        rc = all ? MCA_COLL_STRATA_NB_PREV(m, persistent, allreduce, p.su, p.ru, count, dtype, op)
                 : MCA_COLL_STRATA_NB_PREV(m, persistent, reduce, p.su, is_root ? p.ru : rbuf, count, dtype, op, root);
    }
    return mca_coll_strata_nb_wrap(m, name, persistent, &p, is_root, rc, inner, request);
}

int mca_coll_strata_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduction_nb(MCA_COLL_STRATA_M(module), sbuf, rbuf, count, dtype, op, -1, 0, NULL, request);
}

int mca_coll_strata_allreduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduction_nb(MCA_COLL_STRATA_M(module), sbuf, rbuf, count, dtype, op, -1, 1, info, request);
}

int mca_coll_strata_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduction_nb(MCA_COLL_STRATA_M(module), sbuf, rbuf, count, dtype, op, root, 0, NULL, request);
}

int mca_coll_strata_reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduction_nb(MCA_COLL_STRATA_M(module), sbuf, rbuf, count, dtype, op, root, 1, info, request);
}
