/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_gather.c - MPI_Gather: blocking, nonblocking and persistent.
 *
 * Every rank's block of bytes goes to its place in the root's receive buffer (rank
 * order; recvbuf matters at the root only). Gather moves bytes, so strata serves
 * every datatype, whatever one rank's layout: a side whose elements form one gap-free
 * run is used in place, any other is packed (the send side before the call, the
 * root's receive side, block by block, unpacked after). A root whose send side must
 * be packed, or whose receive side is, packs its contribution straight into its own
 * block, which makes the call an in-place one. MPI_IN_PLACE is the root's only.
 * Send and receive sizes that differ at the root are an error of that rank,
 * reported to all.
 */
#include "coll_strata_request.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

/* A gather as the core sees it. */
typedef struct gather_call {
    const void *s;   /* STRATA_IN_PLACE (the root's block is in place), the user's buffer or packed */
    void *r;         /* the root's receive side (NULL elsewhere): the user's buffer, or packed */
    size_t bytes;    /* per rank */
} gather_call_t;

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
static const char *gather_map(mca_coll_strata_packing_t *pk, const void *sbuf, int scount,
                              struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              int n, int me, int root, gather_call_t *c, strata_status_t *st)
{
    size_t ssize = 0, rsize = 0, b = 0;
    ptrdiff_t lb = 0, extent = 0;
    char *own;
    int i;

    *st = STRATA_ERR_NOMEM;
    c->r = NULL;
    if (me != root) {
        ompi_datatype_type_size(sdtype, &ssize);
        c->bytes = ssize * (size_t) scount;
        c->s = mca_coll_strata_packing_as_bytes(pk, sbuf, scount, sdtype, 1, 0);
        return NULL != c->s || 0 == c->bytes ? NULL : "no memory to pack the datatype";
    }
    ompi_datatype_type_size(rdtype, &rsize);
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    c->bytes = rsize * (size_t) rcount;
    if (MPI_IN_PLACE != sbuf) {
        ompi_datatype_type_size(sdtype, &ssize);
        if (ssize * (size_t) scount != c->bytes) {
            *st = STRATA_ERR_TRUNCATE;
            return "the send and receive sizes of this rank differ";
        }
    }
    if (NULL == rbuf && c->bytes > 0) {
        *st = STRATA_ERR_BUFFER;
        return "the receive buffer is NULL";
    }
    own = (char *) rbuf + (ptrdiff_t) me * rcount * extent;
    c->r = rbuf;
    if (!run_of_blocks(rdtype, rcount)) {   /* blocks back to back in a packed copy */
        c->r = mca_coll_strata_packing_mem(pk, (size_t) n * c->bytes);
        for (i = 0; NULL != c->r && i < n; ++i) {
            if (!mca_coll_strata_packing_add(pk, 0, (char *) rbuf + (ptrdiff_t) i * rcount * extent, rcount, rdtype,
                                             (char *) c->r + (size_t) i * c->bytes)) {
                c->r = NULL;
            }
        }
        if (NULL == c->r) {
            return "no memory to pack the datatype";
        }
    }
    c->s = STRATA_IN_PLACE;
    if (MPI_IN_PLACE == sbuf) {   /* the root's block, packed too where the receive side is */
        return c->r == rbuf || mca_coll_strata_packing_add(pk, 1, own, rcount, rdtype, (char *) c->r + me * c->bytes)
                   ? NULL : "no memory to pack the datatype";
    }
    if (c->r == rbuf && NULL == mca_coll_strata_check_bytes(sdtype, scount, &b)) {
        c->s = sbuf;
        return NULL;
    }
    if (NULL == sbuf && c->bytes > 0) {
        *st = STRATA_ERR_BUFFER;
        return "the send buffer is NULL (MPI_IN_PLACE is not NULL)";
    }
    return mca_coll_strata_packing_add(pk, 1, (void *) sbuf, scount, sdtype, (char *) c->r + me * c->bytes)
               ? NULL : "no memory to pack the datatype";
}

/* A gather handed back after the core queued it (coll_strata_request.h). */
static int gather_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm, ompi_request_t **inner)
{
    return comm->c_coll->coll_igather(a->sbuf, a->scount, MCA_COLL_STRATA_REPLAY_SDT(a), a->rbuf, a->rcount, a->rdt,
                                      a->root, comm, inner, comm->c_coll->coll_igather_module);
}

static void gather_spans(const mca_coll_strata_replay_t *a, int n, int me, ptrdiff_t *slo, size_t *slen,
                         ptrdiff_t *rlo, size_t *rlen)
{
    *slo = *rlo = 0;
    *slen = *rlen = 0;
    if (MPI_IN_PLACE != a->sbuf) {
        mca_coll_strata_span(a->sdt, (size_t) a->scount, slo, slen);
    }
    if (me == a->root) {
        mca_coll_strata_span(a->rdt, (size_t) a->rcount * (size_t) n, rlo, rlen);
    }
}

static const mca_coll_strata_replay_ops_t gather_ops = { gather_replay, gather_spans, 1 };

/* The previous component's gather, this rank's device buffers staged through host
 * memory. */
static int prev_gather(mca_coll_strata_module_t *m, const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                       void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm), is_root = me == root;
    const mca_coll_strata_replay_t call = { .sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount,
                                            .root = root, .sdt = sdtype, .rdt = rdtype };
    mca_coll_strata_pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    int rc;
    if (!(MPI_IN_PLACE != sbuf && mca_coll_strata_is_device(sbuf)) && !(is_root && mca_coll_strata_is_device(rbuf))) {
        return m->prev.gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, m->comm, m->prev.gather_module);
    }
    mca_coll_strata_say_staging("gather");
    gather_spans(&call, n, me, &slo, &slen, &rlo, &rlen);
    rc = mca_coll_strata_pair_in(&p, sbuf, slo, slen, is_root ? rbuf : NULL, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.gather(p.su, scount, sdtype, is_root ? p.ru : rbuf, rcount, rdtype, root, m->comm,
                            m->prev.gather_module);
    }
    return mca_coll_strata_pair_out(&p, is_root, rc);
}

int mca_coll_strata_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_M(module);
    const int n = ompi_comm_size(comm);
    mca_coll_strata_packing_t pk = { 0 };
    gather_call_t c;
    strata_status_t st;
    int rc, served = 1;
    const char *why = gather_map(&pk, sbuf, scount, sdtype, rbuf, rcount, rdtype, n, ompi_comm_rank(comm), root, &c,
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
        rc = mca_coll_strata_fail(m, STRATA_COLL_GATHER, "gather", st, why, c.bytes * (size_t) n, &served);
        return served ? rc : prev_gather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    }
    st = strata_gather(m->team, c.s, c.r, c.bytes, root);
    if (STRATA_FALLBACK == st) {
        mca_coll_strata_packing_free(&pk);
        mca_coll_strata_log_fallback(m, "gather", c.bytes * (size_t) n, mca_coll_strata_why_core_declined);
        return prev_gather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    }
    rc = mca_coll_strata_status_to_mpi(st, m, "gather");
    if (MPI_SUCCESS == rc) {
        rc = mca_coll_strata_packing_unpack(&pk);
    }
    mca_coll_strata_packing_free(&pk);
    return rc;
}


static int gather_nb(mca_coll_strata_module_t *m, const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                     void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root, int persistent,
                     struct ompi_info_t *info, ompi_request_t **request)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm), is_root = me == root;
    const char *name = MCA_COLL_STRATA_NB_NAME(persistent, "gather"), *why = mca_coll_strata_nb_refused();
    mca_coll_strata_packing_t pk = { 0 };
    gather_call_t c;
    strata_status_t st = STRATA_FALLBACK;
    int rc = MPI_SUCCESS;
    mca_coll_strata_pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    ompi_request_t *inner = NULL;
    const mca_coll_strata_replay_t call = { .ops = &gather_ops, .sbuf = sbuf, .rbuf = rbuf, .scount = scount,
                                            .rcount = rcount, .root = root, .sdt = sdtype,
                                            .rdt = is_root ? rdtype : sdtype };

    c.bytes = 0;
    if (NULL == why) {
        why = gather_map(&pk, sbuf, scount, sdtype, rbuf, rcount, rdtype, n, me, root, &c, &st);
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
            return mca_coll_strata_nb_local_failure(r, STRATA_COLL_GATHER, st, why, c.bytes * (size_t) n,
                                                    STRATA_BYTE, STRATA_OP_SUM, request, &rc) ? rc : MPI_ERR_NO_MEM;
        }
        if (mca_coll_strata_nb_taken(r, strata_igather(m->team, c.s, c.r, c.bytes, root, &r->how, &r->core), request,
                                     &rc)) {
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    } else {
        mca_coll_strata_packing_free(&pk);
    }
    mca_coll_strata_log_fallback(m, name, c.bytes * (size_t) n, why);
    gather_spans(&call, n, me, &slo, &slen, &rlo, &rlen);
    if (!mca_coll_strata_nb_stage(&p, name, sbuf, slo, slen, is_root ? rbuf : NULL, rlo, rlen, &rc)) {
        return MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, gather, sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    }
    if (MPI_SUCCESS == rc) {
        rc = MCA_COLL_STRATA_NB_PREV(m, persistent, gather, p.su, scount, sdtype, is_root ? p.ru : rbuf, rcount,
                                     rdtype, root);
    }
    return mca_coll_strata_nb_wrap(m, name, persistent, &p, is_root, rc, inner, request);
}

int mca_coll_strata_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return gather_nb(MCA_COLL_STRATA_M(module), sbuf, scount, sdtype, rbuf, rcount, rdtype, root, 0, NULL, request);
}

int mca_coll_strata_gather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return gather_nb(MCA_COLL_STRATA_M(module), sbuf, scount, sdtype, rbuf, rcount, rdtype, root, 1, info, request);
}
