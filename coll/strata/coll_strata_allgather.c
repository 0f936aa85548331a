/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_allgather.c - MPI_Allgather and MPI_Allgatherv: blocking, nonblocking and
 * persistent.
 *
 * Both move bytes and reach the core as strata_allgatherv's byte counts and offsets
 * (allgather is its uniform case). Every datatype is served, so whether strata runs
 * never depends on one rank's layout:
 *  - a receive datatype whose elements form one gap-free block is used in place,
 *    at any displacements (negative ones too: the core gets the lowest block as its
 *    base and offsets from there);
 *  - any other receive datatype gets a packed receive buffer (blocks one after the
 *    other) that is unpacked into the user's buffer after the call;
 *  - a send datatype with gaps is packed straight into this rank's block, which
 *    makes the call an in-place one (at each start, for a persistent call).
 * Send and receive sizes that differ are an error of this rank, reported to all.
 */
#include "coll_strata_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"


/* An allgather(v) as the core sees it. */
typedef struct ag_call {
    const void *s;      /* STRATA_IN_PLACE or the user's send buffer */
    char *base;         /* the receive side: the user's buffer from its lowest block, or packed */
    size_t *bytes, *displs;
    size_t total;
    int now_in_place;   /* this rank's block of the user's buffer holds its contribution */
} ag_call_t;

/* Puts this rank's contribution into its block of the receive side as the core sees
 * it, unless it is already there (the user's send buffer in place): pk packs the
 * send buffer there, or in place with a packed receive side, this rank's block of
 * the user's receive buffer. */
static const char *own_block(mca_coll_strata_packing_t *pk, const void *sbuf, int scount,
                             struct ompi_datatype_t *sdtype, void *user_block, int rcount,
                             struct ompi_datatype_t *rdtype, int recv_packed, char *block, size_t bytes,
                             ag_call_t *c, strata_status_t *st)
{
    size_t sbytes = 0;
    c->s = STRATA_IN_PLACE;
    c->now_in_place = 0;
    *st = STRATA_ERR_NOMEM;
    if (MPI_IN_PLACE == sbuf) {
        if (!recv_packed || 0 == bytes) {
            return NULL;
        }
        if (NULL == user_block) {
            *st = STRATA_ERR_BUFFER;
            return "the receive buffer is NULL";
        }
        return mca_coll_strata_packing_add(pk, 1, user_block, rcount, rdtype, block) ? NULL
                                                                                     : "no memory to pack the datatype";
    }
    ompi_datatype_type_size(sdtype, &sbytes);
    if (sbytes * (size_t) scount != bytes) {
        *st = STRATA_ERR_TRUNCATE;
        return "the send and receive sizes of this rank differ";
    }
    if (!recv_packed && NULL == mca_coll_strata_check_bytes(sdtype, scount, &sbytes)) {
        c->s = sbuf;   /* straight from the user's send buffer */
        return NULL;
    }
    if (0 == bytes) {
        return NULL;
    }
    if (NULL == sbuf) {
        *st = STRATA_ERR_BUFFER;
        return "the send buffer is NULL (MPI_IN_PLACE is not NULL)";
    }
    if (NULL == block) {
        *st = STRATA_ERR_BUFFER;
        return "the receive buffer is NULL";
    }
    c->now_in_place = !recv_packed;
    return mca_coll_strata_packing_add(pk, 1, (void *) sbuf, scount, sdtype, block) ? NULL
                                                                                    : "no memory to pack the datatype";
}

/* The one mapping of the arguments, for every mode: n blocks of rcounts[i] rdtype
 * elements at disps[i] extents of rbuf, into c (v: 2n entries for its byte counts and
 * offsets). NULL when mapped, else why this rank cannot take part (*st). */
static const char *allgather_map(mca_coll_strata_packing_t *pk, const void *sbuf, int scount,
                                 struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *disps,
                                 struct ompi_datatype_t *rdtype, int n, int me, size_t *v, ag_call_t *c,
                                 strata_status_t *st)
{
    int i, most = 0, recv_packed;
    size_t size = 0, scratch;
    ptrdiff_t lb = 0, extent = 0, lo = 0;

    c->bytes = v;
    c->displs = v + n;
    c->total = 0;
    ompi_datatype_type_size(rdtype, &size);
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    for (i = 0; i < n; ++i) {
        most = rcounts[i] > most ? rcounts[i] : most;
        c->bytes[i] = (size_t) rcounts[i] * size;
        c->total += c->bytes[i];
    }
    recv_packed = NULL != mca_coll_strata_check_bytes(rdtype, most, &scratch);
    if (recv_packed) {
        /* Blocks one after the other in a packed copy, unpacked one by one. */
        size_t at = 0;
        c->base = mca_coll_strata_packing_mem(pk, c->total);
        for (i = 0; NULL != c->base && i < n; ++i) {
            c->displs[i] = at;
            at += c->bytes[i];
            if (!mca_coll_strata_packing_add(pk, 0, (char *) rbuf + (ptrdiff_t) disps[i] * extent, rcounts[i], rdtype,
                                             c->base + c->displs[i])) {
                c->base = NULL;
            }
        }
        if (NULL == c->base) {
            *st = STRATA_ERR_NOMEM;
            return "no memory to pack a non-contiguous datatype";
        }
    } else {
        /* In place at the user's displacements, from the lowest one. */
        for (i = 0; i < n; ++i) {
            ptrdiff_t d = (ptrdiff_t) disps[i] * extent;
            lo = (0 == i || d < lo) ? d : lo;
        }
        for (i = 0; i < n; ++i) {
            c->displs[i] = (size_t) ((ptrdiff_t) disps[i] * extent - lo);
        }
        c->base = NULL != rbuf ? (char *) rbuf + lo : NULL;
    }
    return own_block(pk, sbuf, scount, sdtype, NULL != rbuf ? (char *) rbuf + (ptrdiff_t) disps[me] * extent : NULL,
                     rcounts[me], rdtype, recv_packed, NULL != c->base ? c->base + c->displs[me] : NULL,
                     c->bytes[me], c, st);
}

/* The blocking call of either variant. *served = 0: the core declined; the previous
 * component then gets MPI_IN_PLACE where *now_in_place. */
static int allgather_any(mca_coll_strata_module_t *m, const char *name, const void *sbuf, int scount,
                         struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *disps, struct ompi_datatype_t *rdtype, int *served, int *now_in_place)
{
    int i, n = ompi_comm_size(m->comm), rc = MPI_SUCCESS;
    size_t size = 0, call_bytes = 0;
    size_t *v = mca_coll_strata_counts(m, MCA_COLL_STRATA_COUNTS_SIZE, 2 * (size_t) n * sizeof(size_t));
    mca_coll_strata_packing_t pk = { 0 };
    ag_call_t c;
    const char *why;
    strata_status_t st;

    *served = 1;
    *now_in_place = 0;
    ompi_datatype_type_size(rdtype, &size);
    for (i = 0; i < n; ++i) {
        call_bytes += (size_t) rcounts[i] * size;
    }
    if (NULL == v) {
        return mca_coll_strata_fail(m, STRATA_COLL_ALLGATHER, name, STRATA_ERR_NOMEM, "no memory for the counts",
                                    call_bytes, served);
    }
    why = allgather_map(&pk, sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, n, ompi_comm_rank(m->comm), v, &c,
                        &st);
    if (NULL == why && MPI_SUCCESS != mca_coll_strata_packing_pack(&pk)) {
        st = STRATA_ERR_ARG;
        why = "packing the datatype failed (more than 2 GiB?)";
    }
    if (NULL != why) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_ALLGATHER, name, st, why, call_bytes, served);
    } else {
        /* MPI_Allgather's blocks lie at r x the block on every rank (packed or not):
         * said to the core, whose one-node kernel writes them into peers' buffers. */
        st = 0 == strcmp(name, "allgather") ? strata_allgather(m->team, c.s, c.base, c.bytes[0])
                                            : strata_allgatherv(m->team, c.s, c.base, c.bytes, c.displs);
        if (STRATA_OK == st && 0 != strcmp(name, "allgather")) {
            mca_coll_strata_log_variant(m, STRATA_COLL_ALLGATHER, name, c.total, "");
        }
        if (STRATA_FALLBACK == st) {
            *served = 0;
            *now_in_place = c.now_in_place;   /* this rank's block is packed into rbuf: in place from here */
        } else {
            rc = mca_coll_strata_status_to_mpi(st, m, name);
            if (MPI_SUCCESS == rc) {
                rc = mca_coll_strata_packing_unpack(&pk);
            }
        }
    }
    mca_coll_strata_packing_free(&pk);
    return rc;
}

int mca_coll_strata_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, n = ompi_comm_size(comm), served, in_place, rc;
    int *counts = mca_coll_strata_counts(m, MCA_COLL_STRATA_COUNTS_INT, 2 * (size_t) n * sizeof(int));
    size_t size = 0;

    ompi_datatype_type_size(rdtype, &size);
    if (NULL == counts) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_ALLGATHER, "allgather", STRATA_ERR_NOMEM,
                                  "no memory for the counts", size * (size_t) rcount * (size_t) n, &served);
        if (served) {
            return rc;
        }
        return mca_coll_strata_prev_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    }
    for (i = 0; i < n; ++i) {
        counts[i] = rcount;
        counts[n + i] = i * rcount;
    }
    rc = allgather_any(m, "allgather", sbuf, scount, sdtype, rbuf, counts, counts + n, rdtype, &served,
                       &in_place);
    if (served) {
        return rc;
    }
    mca_coll_strata_log_fallback(m, "allgather", size * (size_t) rcount * (size_t) n,
                                 mca_coll_strata_why_core_declined);
    return mca_coll_strata_prev_allgather(m, in_place ? MPI_IN_PLACE : sbuf, scount, sdtype, rbuf, rcount,
                                          rdtype);
}

int mca_coll_strata_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *disps,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, served, in_place, rc;
    size_t size = 0, total = 0;

    rc = allgather_any(m, "allgatherv", sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, &served,
                       &in_place);
    if (served) {
        return rc;
    }
    ompi_datatype_type_size(rdtype, &size);
    for (i = 0; i < ompi_comm_size(comm); ++i) {
        total += (size_t) rcounts[i] * size;
    }
    mca_coll_strata_log_fallback(m, "allgatherv", total, mca_coll_strata_why_core_declined);
    return mca_coll_strata_prev_allgatherv(m, in_place ? MPI_IN_PLACE : sbuf, scount, sdtype, rbuf, rcounts,
                                           disps, rdtype);
}

/* An allgather(v) handed back after the core queued it (coll_strata_request.h). */
static int allgather_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm,
                            ompi_request_t **inner)
{
    return comm->c_coll->coll_iallgather(a->sbuf, a->scount, MCA_COLL_STRATA_REPLAY_SDT(a), a->rbuf, a->rcount,
                                         a->rdt, comm, inner, comm->c_coll->coll_iallgather_module);
}

static int allgatherv_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm,
                             ompi_request_t **inner)
{
    return comm->c_coll->coll_iallgatherv(a->sbuf, a->scount, MCA_COLL_STRATA_REPLAY_SDT(a), a->rbuf, a->rcounts,
                                          a->rdisps, a->rdt, comm, inner, comm->c_coll->coll_iallgatherv_module);
}

static void allgather_spans(const mca_coll_strata_replay_t *a, int n, int me, ptrdiff_t *slo, size_t *slen,
                            ptrdiff_t *rlo, size_t *rlen)
{
    (void) me;
    mca_coll_strata_span(MCA_COLL_STRATA_REPLAY_SDT(a), (size_t) a->scount, slo, slen);
    if (NULL != a->rcounts) {
        mca_coll_strata_span_blocks(a->rdt, n, a->rcounts, a->rdisps, rlo, rlen);
    } else {
        mca_coll_strata_span(a->rdt, (size_t) a->rcount * (size_t) n, rlo, rlen);
    }
}

static const mca_coll_strata_replay_ops_t allgather_ops = { allgather_replay, allgather_spans, 0 };
static const mca_coll_strata_replay_ops_t allgatherv_ops = { allgatherv_replay, allgather_spans, 0 };

/* The nonblocking or persistent call: rank i's block is rcounts[i] rdtype elements at
 * disps[i] extents of rbuf (allgather: rcount each, back to back; rcounts NULL). */
static int allgather_nb(mca_coll_strata_module_t *m, const char *name, const void *sbuf, int scount,
                        struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, int rcount,
                        const int *disps, struct ompi_datatype_t *rdtype, int persistent, struct ompi_info_t *info,
                        ompi_request_t **request)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    const char *why = mca_coll_strata_nb_refused();
    size_t size = 0, total = 0;
    /* 2n byte counts and offsets, then 2n int counts and displacements (allgather) */
    size_t *v = malloc(2 * (size_t) n * (sizeof(size_t) + sizeof(int)));
    int *uniform = (int *) (v + 2 * n);
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    int i, rc = MPI_SUCCESS;
    mca_coll_strata_pair_t p;
    ompi_request_t *inner = NULL;

    if (NULL == v) {
        return MPI_ERR_NO_MEM;
    }
    ompi_datatype_type_size(rdtype, &size);
    for (i = 0; i < n; ++i) {
        uniform[i] = rcount;
        uniform[n + i] = i * rcount;
        total += (size_t) (rcounts ? rcounts[i] : rcount) * size;
    }
    if (NULL == why && 0 == total) {
        why = "nothing to move";
    }
    if (NULL == why) {
        mca_coll_strata_packing_t pk = { 0 };
        ag_call_t c;
        strata_status_t st;
        mca_coll_strata_request_t *r;
        const mca_coll_strata_replay_t call = { .ops = NULL != rcounts ? &allgatherv_ops : &allgather_ops,
                                                .sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount,
                                                .rcounts = rcounts, .rdisps = disps, .sdt = sdtype, .rdt = rdtype };
        why = allgather_map(&pk, sbuf, scount, sdtype, rbuf, rcounts ? rcounts : uniform, rcounts ? disps : uniform + n,
                            rdtype, n, me, v, &c, &st);
        r = mca_coll_strata_nb_new(m, name, persistent);
        if (NULL == r) {
            mca_coll_strata_packing_free(&pk);
            free(v);
            return MPI_ERR_NO_MEM;
        }
        r->packing = pk;
        mca_coll_strata_nb_name_variant(r, NULL != rcounts ? "allgatherv" : NULL, STRATA_COLL_ALLGATHER, total);
        mca_coll_strata_nb_keep(r, &call);
        if (NULL == why && !persistent && MPI_SUCCESS != mca_coll_strata_packing_pack(&r->packing)) {
            st = STRATA_ERR_ARG;
            why = "packing the datatype failed";
        }
        if (NULL != why) {
            free(v);
            return mca_coll_strata_nb_local_failure(r, STRATA_COLL_ALLGATHER, st, why, total, STRATA_BYTE,
                                                    STRATA_OP_SUM, request, &rc) ? rc : MPI_ERR_NO_MEM;
        }
        st = NULL == rcounts ? strata_iallgather(m->team, c.s, c.base, c.bytes[0], &r->how, &r->core)
                             : strata_iallgatherv(m->team, c.s, c.base, c.bytes, c.displs, &r->how, &r->core);
        if (mca_coll_strata_nb_taken(r, st, request, &rc)) {
            free(v);
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    free(v);
    mca_coll_strata_log_fallback(m, name, total, why);
    mca_coll_strata_span(sdtype, (size_t) scount, &slo, &slen);
    if (rcounts) {
        mca_coll_strata_span_blocks(rdtype, n, rcounts, disps, &rlo, &rlen);
    } else {
        mca_coll_strata_span(rdtype, (size_t) rcount * (size_t) n, &rlo, &rlen);
    }
    if (!mca_coll_strata_nb_stage(&p, name, sbuf, slo, slen, rbuf, rlo, rlen, &rc)) {
        return rcounts ? MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, allgatherv, sbuf, scount, sdtype, rbuf, rcounts,
                                                        disps, rdtype)
                       : MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, allgather, sbuf, scount, sdtype, rbuf, rcount,
                                                        rdtype);
    }
    if (MPI_SUCCESS == rc) {
        rc = rcounts ? MCA_COLL_STRATA_NB_PREV(m, persistent, allgatherv, p.su, scount, sdtype, p.ru, rcounts, disps,
                                               rdtype)
                     : MCA_COLL_STRATA_NB_PREV(m, persistent, allgather, p.su, scount, sdtype, p.ru, rcount, rdtype);
    }
    return mca_coll_strata_nb_wrap(m, name, persistent, &p, 1, rc, inner, request);
}

int mca_coll_strata_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                               int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return allgather_nb(MCA_COLL_STRATA_M(module), "iallgather", sbuf, scount, sdtype, rbuf, NULL, rcount, NULL,
                        rdtype, 0, NULL, request);
}

int mca_coll_strata_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                   int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                   struct ompi_info_t *info, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return allgather_nb(MCA_COLL_STRATA_M(module), "allgather_init", sbuf, scount, sdtype, rbuf, NULL, rcount, NULL,
                        rdtype, 1, info, request);
}

int mca_coll_strata_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                const int *rcounts, const int *disps, struct ompi_datatype_t *rdtype,
                                struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return allgather_nb(MCA_COLL_STRATA_M(module), "iallgatherv", sbuf, scount, sdtype, rbuf, rcounts, 0, disps,
                        rdtype, 0, NULL, request);
}

int mca_coll_strata_allgatherv_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                    const int *rcounts, const int *disps, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return allgather_nb(MCA_COLL_STRATA_M(module), "allgatherv_init", sbuf, scount, sdtype, rbuf, rcounts, 0, disps,
                        rdtype, 1, info, request);
}
