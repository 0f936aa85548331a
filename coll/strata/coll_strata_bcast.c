/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_bcast.c - MPI_Bcast: blocking, nonblocking and persistent.
 *
 * Bcast moves bytes, so strata serves every datatype: one whose elements form one
 * gap-free block goes straight to the core, any other is packed into a contiguous
 * copy (at the root) and unpacked after (elsewhere). Which of the two a rank does
 * depends on its own datatype only and changes nothing its peers see, so ranks may
 * pass different layouts of the same signature (MPI allows it).
 */
#include "coll_strata_request.h"

#include "ompi/datatype/ompi_datatype.h"

/* The one mapping of MPI_Bcast's arguments, for every mode: the buffer the core moves
 * (buf, or a packed copy that pk packs at the root and unpacks elsewhere) and its
 * size. NULL when out of memory for the copy. */
static void *bcast_map(mca_coll_strata_packing_t *pk, void *buf, int count, struct ompi_datatype_t *dtype,
                       int is_root, size_t *bytes)
{
    ompi_datatype_type_size(dtype, bytes);
    *bytes *= (size_t) count;
    return mca_coll_strata_packing_as_bytes(pk, buf, count, dtype, is_root, !is_root);
}

int mca_coll_strata_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = MCA_COLL_STRATA_M(module);
    mca_coll_strata_packing_t pk = { 0 };
    size_t bytes = 0;
    strata_status_t st;
    int rc, served = 1;
    void *b = bcast_map(&pk, buf, count, dtype, ompi_comm_rank(comm) == root, &bytes);

    if (NULL == b && NULL != buf) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_BCAST, "bcast", STRATA_ERR_NOMEM,
                                  "no memory to pack a non-contiguous datatype", bytes, &served);
        mca_coll_strata_packing_free(&pk);
        return served ? rc : mca_coll_strata_prev_bcast(m, buf, count, dtype, root);
    }
    if (MPI_SUCCESS != mca_coll_strata_packing_pack(&pk)) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_BCAST, "bcast", STRATA_ERR_ARG,
                                  "packing the datatype failed (more than 2 GiB?)", bytes, &served);
        mca_coll_strata_packing_free(&pk);
        return served ? rc : mca_coll_strata_prev_bcast(m, buf, count, dtype, root);
    }
    st = strata_bcast(m->team, b, bytes, root);
    if (STRATA_FALLBACK == st) {
        mca_coll_strata_packing_free(&pk);
        mca_coll_strata_log_fallback(m, "bcast", bytes, mca_coll_strata_why_core_declined);
        return mca_coll_strata_prev_bcast(m, buf, count, dtype, root);
    }
    rc = mca_coll_strata_status_to_mpi(st, m, "bcast");
    if (MPI_SUCCESS == rc) {
        rc = mca_coll_strata_packing_unpack(&pk);
    }
    mca_coll_strata_packing_free(&pk);
    return rc;
}

/* A bcast handed back after the core queued it (coll_strata_request.h). */
static int bcast_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm, ompi_request_t **inner)
{
    return comm->c_coll->coll_ibcast(a->rbuf, a->rcount, a->rdt, a->root, comm, inner,
                                     comm->c_coll->coll_ibcast_module);
}

static void bcast_spans(const mca_coll_strata_replay_t *a, int n, int me, ptrdiff_t *slo, size_t *slen,
                        ptrdiff_t *rlo, size_t *rlen)
{
    (void) n;
    (void) me;
    *slo = 0;
    *slen = 0;
    mca_coll_strata_span(a->rdt, (size_t) a->rcount, rlo, rlen);
}

static const mca_coll_strata_replay_ops_t bcast_ops = { bcast_replay, bcast_spans, 0 };

static int bcast_nb(mca_coll_strata_module_t *m, void *buf, int count, struct ompi_datatype_t *dtype, int root,
                    int persistent, struct ompi_info_t *info, ompi_request_t **request)
{
    const char *name = MCA_COLL_STRATA_NB_NAME(persistent, "bcast"), *why = mca_coll_strata_nb_refused();
    const int is_root = ompi_comm_rank(m->comm) == root;
    size_t bytes = 0;
    int rc = MPI_SUCCESS;
    mca_coll_strata_pair_t p;
    ptrdiff_t lo;
    size_t len;
    ompi_request_t *inner = NULL;

    ompi_datatype_type_size(dtype, &bytes);
    bytes *= (size_t) count;
    if (NULL == why && 0 == bytes) {
        why = "nothing to move";
    }
    if (NULL == why) {
        mca_coll_strata_request_t *r = mca_coll_strata_nb_new(m, name, persistent);
        const mca_coll_strata_replay_t call = { .ops = &bcast_ops, .rbuf = buf, .rcount = count, .root = root,
                                                .rdt = dtype };
        void *b;
        if (NULL == r) {
            return MPI_ERR_NO_MEM;
        }
        mca_coll_strata_nb_keep(r, &call);
        b = bcast_map(&r->packing, buf, count, dtype, is_root, &bytes);
        if (NULL == b || (!persistent && MPI_SUCCESS != mca_coll_strata_packing_pack(&r->packing))) {
            return mca_coll_strata_nb_local_failure(r, STRATA_COLL_BCAST, STRATA_ERR_NOMEM,
                                                    "packing the datatype failed", bytes, STRATA_BYTE, STRATA_OP_SUM,
                                                    request, &rc) ? rc : MPI_ERR_NO_MEM;
        }
        if (mca_coll_strata_nb_taken(r, strata_ibcast(m->team, b, bytes, root, &r->how, &r->core), request, &rc)) {
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    mca_coll_strata_log_fallback(m, name, bytes, why);
    mca_coll_strata_span(dtype, (size_t) count, &lo, &len);
    if (!mca_coll_strata_nb_stage(&p, name, MPI_IN_PLACE, 0, 0, buf, lo, len, &rc)) {
        return MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, bcast, buf, count, dtype, root);
    }
    if (MPI_SUCCESS == rc) {
        rc = MCA_COLL_STRATA_NB_PREV(m, persistent, bcast, p.ru, count, dtype, root);
    }
    return mca_coll_strata_nb_wrap(m, name, persistent, &p, !is_root, rc, inner, request);
}

int mca_coll_strata_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return bcast_nb(MCA_COLL_STRATA_M(module), buf, count, dtype, root, 0, NULL, request);
}

int mca_coll_strata_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return bcast_nb(MCA_COLL_STRATA_M(module), buf, count, dtype, root, 1, info, request);
}
