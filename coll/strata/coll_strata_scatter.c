/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_scatter.c - MPI_Scatter: blocking, nonblocking and persistent.
 *
 * Block r of the root's send buffer (rank order; sendbuf matters at the root only)
 * goes to rank r's receive buffer. Scatter moves bytes, so strata serves every
 * datatype, whatever one rank's layout: a side whose elements form one gap-free run
 * is used in place, any other is packed (the root's send side, block by block,
 * before the call; a receive side unpacked after). MPI_IN_PLACE (as recvbuf) is the
 * root's only: its block stays in the send buffer. Send and receive sizes that
 * differ at the root are an error of that rank, reported to all.
 */
#include "coll_strata_request.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

/* A scatter as the core sees it. */
typedef struct scatter_call {
    const void *s;   /* the root's send side (NULL elsewhere): the user's buffer, or packed */
    void *r;         /* STRATA_IN_PLACE (the root's block stays in s), the user's buffer or packed */
    size_t bytes;    /* per rank */
} scatter_call_t;

/* Whether count elements of dt at each of n places count extents apart form one
 * gap-free run (the blocks back to back). */
static int run_of_blocks(struct ompi_datatype_t *dt, int count)
{
    size_t bytes = 0;
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_get_extent(dt, &lb, &extent);
    return NULL == mca_coll_strata_check_bytes(dt, count, &bytes) &&
           (size_t) ((ptrdiff_t) count * extent) == bytes;
}

/* The one mapping of the arguments, for every mode. NULL when mapped into c (with pk
 * packing and unpacking), else why this rank cannot take part (*st). */
static const char *scatter_map(mca_coll_strata_packing_t *pk, const void *sbuf, int scount,
                               struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                               int n, int me, int root, scatter_call_t *c, strata_status_t *st)
{
    size_t ssize = 0, rsize = 0;
    ptrdiff_t lb = 0, extent = 0;
    int i;

    *st = STRATA_ERR_NOMEM;
    c->s = NULL;
    if (me != root) {
        ompi_datatype_type_size(rdtype, &rsize);
        c->bytes = rsize * (size_t) rcount;
        c->r = mca_coll_strata_packing_as_bytes(pk, rbuf, rcount, rdtype, 0, 1);
        return NULL != c->r || 0 == c->bytes ? NULL : "no memory to pack the datatype";
    }
    ompi_datatype_type_size(sdtype, &ssize);
    ompi_datatype_get_extent(sdtype, &lb, &extent);
    c->bytes = ssize * (size_t) scount;
    if (MPI_IN_PLACE != rbuf) {
        ompi_datatype_type_size(rdtype, &rsize);
        if (rsize * (size_t) rcount != c->bytes) {
            *st = STRATA_ERR_TRUNCATE;
            return "the send and receive sizes of this rank differ";
        }
    }
    if (NULL == sbuf && c->bytes > 0) {
        *st = STRATA_ERR_BUFFER;
        return "the send buffer is NULL";
    }
    c->s = sbuf;
    if (!run_of_blocks(sdtype, scount)) {   /* blocks back to back in a packed copy */
        char *packed = mca_coll_strata_packing_mem(pk, (size_t) n * c->bytes);
        for (i = 0; NULL != packed && i < n; ++i) {
            if (!mca_coll_strata_packing_add(pk, 1, (char *) sbuf + (ptrdiff_t) i * scount * extent, scount, sdtype,
                                             packed + (size_t) i * c->bytes)) {
                packed = NULL;
            }
        }
        if (NULL == packed) {
            return "no memory to pack the datatype";
        }
        c->s = packed;
    }
    if (MPI_IN_PLACE == rbuf) {
        c->r = (void *) STRATA_IN_PLACE;
        return NULL;
    }
    c->r = mca_coll_strata_packing_as_bytes(pk, rbuf, rcount, rdtype, 0, 1);
    return NULL != c->r || 0 == c->bytes ? NULL : "no memory to pack the datatype";
}

/* A scatter handed back after the core queued it (coll_strata_request.h). */
static int scatter_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm, ompi_request_t **inner)
{
    return comm->c_coll->coll_iscatter(a->sbuf, a->scount, MCA_COLL_STRATA_REPLAY_SDT(a), a->rbuf, a->rcount, a->rdt,
                                      a->root, comm, inner, comm->c_coll->coll_iscatter_module);
}

static void scatter_spans(const mca_coll_strata_replay_t *a, int n, int me, ptrdiff_t *slo, size_t *slen,
                          ptrdiff_t *rlo, size_t *rlen)
{
    *slo = *rlo = 0;
    *slen = *rlen = 0;
    if (me == a->root) {
        mca_coll_strata_span(a->sdt, (size_t) a->scount * (size_t) n, slo, slen);
    }
    if (MPI_IN_PLACE != a->rbuf) {
        mca_coll_strata_span(a->rdt, (size_t) a->rcount, rlo, rlen);
    }
}

static const mca_coll_strata_replay_ops_t scatter_ops = { scatter_replay, scatter_spans, 0 };

/* The previous component's scatter, this rank's device buffers staged through host
 * memory. */
static int prev_scatter(mca_coll_strata_module_t *m, const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                        void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm), is_root = me == root;
    const mca_coll_strata_replay_t call = { .sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount,
                                            .root = root, .sdt = sdtype, .rdt = rdtype };
    mca_coll_strata_pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    int rc;
    if (!(is_root && mca_coll_strata_is_device(sbuf)) && !(MPI_IN_PLACE != rbuf && mca_coll_strata_is_device(rbuf))) {
        return m->prev.scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, m->comm, m->prev.scatter_module);
    }
    mca_coll_strata_say_staging("scatter");
    scatter_spans(&call, n, me, &slo, &slen, &rlo, &rlen);
    rc = mca_coll_strata_pair_in(&p, is_root ? sbuf : MPI_IN_PLACE, slo, slen, rbuf, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.scatter(is_root ? p.su : sbuf, scount, sdtype, p.ru, rcount, rdtype, root, m->comm,
                             m->prev.scatter_module);
    }
    return mca_coll_strata_pair_out(&p, MPI_IN_PLACE != rbuf, rc);
}

int mca_coll_strata_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_M(module);
    const int n = ompi_comm_size(comm);
    mca_coll_strata_packing_t pk = { 0 };
    scatter_call_t c;
    strata_status_t st;
    int rc, served = 1;
    const char *why = scatter_map(&pk, sbuf, scount, sdtype, rbuf, rcount, rdtype, n, ompi_comm_rank(comm), root, &c,
                                 &st);

    if (NULL == why && 0 == c.bytes) {   /* the same on every rank: signatures match */
        mca_coll_strata_packing_free(&pk);
        return MPI_SUCCESS;
    }
    if (NULL == why && MPI_SUCCESS != mca_coll_strata_packing_pack(&pk)) {
        st = STRATA_ERR_ARG;
        why = "packing the datatype failed (more than 2 GiB?)";
    }
    if (NULL != why) {
        mca_coll_strata_packing_free(&pk);
        rc = mca_coll_strata_fail(m, STRATA_COLL_SCATTER, "scatter", st, why, c.bytes * (size_t) n, &served);
        return served ? rc : prev_scatter(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    }
    st = strata_scatter(m->team, c.s, c.r, c.bytes, root);
    if (STRATA_FALLBACK == st) {
        mca_coll_strata_packing_free(&pk);
        mca_coll_strata_log_fallback(m, "scatter", c.bytes * (size_t) n, mca_coll_strata_why_core_declined);
        return prev_scatter(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    }
    rc = mca_coll_strata_status_to_mpi(st, m, "scatter");
    if (MPI_SUCCESS == rc) {
        rc = mca_coll_strata_packing_unpack(&pk);
    }
    mca_coll_strata_packing_free(&pk);
    return rc;
}


static int scatter_nb(mca_coll_strata_module_t *m, const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                     void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root, int persistent,
                     struct ompi_info_t *info, ompi_request_t **request)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm), is_root = me == root;
    const char *name = MCA_COLL_STRATA_NB_NAME(persistent, "scatter"), *why = mca_coll_strata_nb_refused();
    mca_coll_strata_packing_t pk = { 0 };
    scatter_call_t c;
    strata_status_t st = STRATA_FALLBACK;
    int rc = MPI_SUCCESS;
    mca_coll_strata_pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    ompi_request_t *inner = NULL;
    const mca_coll_strata_replay_t call = { .ops = &scatter_ops, .sbuf = sbuf, .rbuf = rbuf, .scount = scount,
                                            .rcount = rcount, .root = root, .sdt = is_root ? sdtype : rdtype,
                                            .rdt = MPI_IN_PLACE != rbuf ? rdtype : sdtype };

    c.bytes = 0;
    if (NULL == why) {
        why = scatter_map(&pk, sbuf, scount, sdtype, rbuf, rcount, rdtype, n, me, root, &c, &st);
        if (NULL == why && 0 == c.bytes) {
            st = STRATA_FALLBACK;
            why = "nothing to move";
        }
    }
    if (NULL == why || STRATA_FALLBACK != st) {
        mca_coll_strata_request_t *r = mca_coll_strata_nb_new(m, name, persistent);
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
            return mca_coll_strata_nb_local_failure(r, STRATA_COLL_SCATTER, st, why, c.bytes * (size_t) n,
                                                    STRATA_BYTE, STRATA_OP_SUM, request, &rc) ? rc : MPI_ERR_NO_MEM;
        }
        if (mca_coll_strata_nb_taken(r, strata_iscatter(m->team, c.s, c.r, c.bytes, root, &r->how, &r->core), request,
                                     &rc)) {
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    } else {
        mca_coll_strata_packing_free(&pk);
    }
    mca_coll_strata_log_fallback(m, name, c.bytes * (size_t) n, why);
    scatter_spans(&call, n, me, &slo, &slen, &rlo, &rlen);
    if (!mca_coll_strata_nb_stage(&p, name, is_root ? sbuf : MPI_IN_PLACE, slo, slen, rbuf, rlo, rlen, &rc)) {
        return MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, scatter, sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    }
    if (MPI_SUCCESS == rc) {
        rc = MCA_COLL_STRATA_NB_PREV(m, persistent, scatter, is_root ? p.su : sbuf, scount, sdtype, p.ru, rcount,
                                     rdtype, root);
    }
    return mca_coll_strata_nb_wrap(m, name, persistent, &p, MPI_IN_PLACE != rbuf, rc, inner, request);
}

int mca_coll_strata_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return scatter_nb(MCA_COLL_STRATA_M(module), sbuf, scount, sdtype, rbuf, rcount, rdtype, root, 0, NULL, request);
}

int mca_coll_strata_scatter_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return scatter_nb(MCA_COLL_STRATA_M(module), sbuf, scount, sdtype, rbuf, rcount, rdtype, root, 1, info, request);
}
