/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_alltoall.c - MPI_Alltoall and MPI_Alltoallv: blocking, nonblocking and
 * persistent.
 *
 * Both move bytes, and both serve every datatype, so whether strata runs never
 * depends on one rank's layout. A side (send or receive) whose datatype is one
 * gap-free element with extent == size is used in place at the user's displacements
 * (negative ones included: the lowest block becomes the base); any other is packed
 * into a copy of its blocks one after the other (and the receive copy unpacked after
 * the call). Alltoall is the uniform case of alltoallv in the core.
 */
#include "coll_strata_request.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

/* One side of the call as the core sees it. */
typedef struct side {
    char *base;       /* what the core gets: the user's buffer from its lowest block, or packed */
    size_t *bytes, *displs;
    size_t total;
} side_t;

/* Lays out n blocks of counts[i] dt elements at disps[i] extents of buf: in place, or
 * packed by pk (pack_in: before the call, unpack_out: after). */
static const char *side_map(mca_coll_strata_packing_t *pk, side_t *sd, void *buf, int n, const int *counts,
                            const int *disps, struct ompi_datatype_t *dt, int pack_in, int unpack_out,
                            strata_status_t *st)
{
    size_t size = 0, scratch, at = 0;
    ptrdiff_t lb = 0, extent = 0, lo = 0;
    int i;

    *st = STRATA_ERR_NOMEM;
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    sd->total = 0;
    for (i = 0; i < n; ++i) {
        sd->bytes[i] = (size_t) counts[i] * size;
        sd->total += sd->bytes[i];
    }
    if (NULL == mca_coll_strata_check_bytes(dt, 1, &scratch)) {
        for (i = 0; i < n; ++i) {
            ptrdiff_t d = (ptrdiff_t) disps[i] * extent;
            lo = (0 == i || d < lo) ? d : lo;
        }
        for (i = 0; i < n; ++i) {
            sd->displs[i] = (size_t) ((ptrdiff_t) disps[i] * extent - lo);
        }
        sd->base = NULL != buf ? (char *) buf + lo : NULL;
        return NULL;
    }
    if (pack_in && sd->total > 0 && NULL == buf) {
        *st = STRATA_ERR_BUFFER;
        return "a buffer with bytes to move is NULL";
    }
    sd->base = mca_coll_strata_packing_mem(pk, sd->total);
    for (i = 0; NULL != sd->base && i < n; ++i) {
        char *user = (char *) buf + (ptrdiff_t) disps[i] * extent;
        sd->displs[i] = at;
        at += sd->bytes[i];
        if ((pack_in && !mca_coll_strata_packing_add(pk, 1, user, counts[i], dt, sd->base + sd->displs[i])) ||
            (unpack_out && !mca_coll_strata_packing_add(pk, 0, user, counts[i], dt, sd->base + sd->displs[i]))) {
            sd->base = NULL;
        }
    }
    return NULL != sd->base ? NULL : "no memory to pack a non-contiguous datatype";
}

/* An alltoall(v) as the core sees it. */
typedef struct a2a_call {
    side_t s, r;   /* in place: s is r */
} a2a_call_t;

/* The one mapping of the arguments, for every mode: the block for rank i is
 * scounts[i] sdtype elements at sdisps[i] extents of sbuf, the one from rank i
 * rcounts[i] rdtype elements at rdisps[i] extents of rbuf; v: 4n entries for the
 * byte counts and offsets. NULL when mapped, else why this rank cannot take part. */
static const char *alltoall_map(mca_coll_strata_packing_t *pk, const void *sbuf, const int *scounts,
                                const int *sdisps, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                const int *rdisps, struct ompi_datatype_t *rdtype, int n, int uniform, size_t *v,
                                a2a_call_t *c, strata_status_t *st)
{
    const int in_place = MPI_IN_PLACE == sbuf;
    const char *why;
    c->r.bytes = v + 2 * n;
    c->r.displs = v + 3 * n;
    why = side_map(pk, &c->r, rbuf, n, rcounts, rdisps, rdtype, in_place, 1, st);
    if (in_place || NULL != why) {
        c->s = c->r;
        return why;
    }
    c->s.bytes = v;
    c->s.displs = v + n;
    why = side_map(pk, &c->s, (void *) sbuf, n, scounts, sdisps, sdtype, 1, 0, st);
    if (NULL == why && uniform && c->s.total != c->r.total) {
        *st = STRATA_ERR_TRUNCATE;
        why = "the send and receive sizes of this rank differ";
    }
    return why;
}

/* The blocking call of either variant. *served = 0: the core declined (nothing was
 * touched). */
static int alltoall_any(mca_coll_strata_module_t *m, const char *name, const void *sbuf, const int *scounts,
                        const int *sdisps, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                        const int *rdisps, struct ompi_datatype_t *rdtype, int uniform, int *served)
{
    int n = ompi_comm_size(m->comm), in_place = MPI_IN_PLACE == sbuf, rc = MPI_SUCCESS;
    size_t *v = mca_coll_strata_counts(m, MCA_COLL_STRATA_COUNTS_SIZE, 4 * (size_t) n * sizeof(size_t));
    mca_coll_strata_packing_t pk = { 0 };
    a2a_call_t c;
    const char *why = NULL;
    strata_status_t st = STRATA_ERR_NOMEM;
    size_t call_bytes = 0;   /* as every rank sees it: alltoallv has none */

    *served = 1;
    if (uniform) {
        size_t size = 0;
        ompi_datatype_type_size(rdtype, &size);
        call_bytes = (size_t) rcounts[0] * size * (size_t) n;
    }
    if (NULL == v) {
        return mca_coll_strata_fail(m, STRATA_COLL_ALLTOALL, name, STRATA_ERR_NOMEM, "no memory for the counts",
                                    call_bytes, served);
    }
    why = alltoall_map(&pk, sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, n, uniform, v, &c, &st);
    if (NULL == why && MPI_SUCCESS != mca_coll_strata_packing_pack(&pk)) {
        st = STRATA_ERR_ARG;
        why = "packing the datatype failed (more than 2 GiB?)";
    }
    if (NULL != why) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_ALLTOALL, name, st, why, call_bytes, served);
    } else {
        if (uniform) {
            st = strata_alltoall(m->team, in_place ? STRATA_IN_PLACE : c.s.base, c.r.base, c.r.bytes[0]);
        } else {
            st = strata_alltoallv(m->team, in_place ? STRATA_IN_PLACE : c.s.base, c.s.bytes, c.s.displs, c.r.base,
                                  c.r.bytes, c.r.displs);
        }
        if (STRATA_OK == st && !uniform) {
            mca_coll_strata_log_variant(m, STRATA_COLL_ALLTOALL, name, c.r.total, "");
        }
        if (STRATA_FALLBACK == st) {
            *served = 0;
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

int mca_coll_strata_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, n = ompi_comm_size(comm), served, rc;
    int *v = mca_coll_strata_counts(m, MCA_COLL_STRATA_COUNTS_INT, 4 * (size_t) n * sizeof(int));
    size_t size = 0;

    ompi_datatype_type_size(rdtype, &size);
    if (NULL == v) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_ALLTOALL, "alltoall", STRATA_ERR_NOMEM, "no memory for the counts",
                                  size * (size_t) rcount * (size_t) n, &served);
        if (served) {
            return rc;
        }
        return mca_coll_strata_prev_alltoall(m, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    }
    for (i = 0; i < n; ++i) {
        v[i] = scount;
        v[n + i] = i * scount;
        v[2 * n + i] = rcount;
        v[3 * n + i] = i * rcount;
    }
    rc = alltoall_any(m, "alltoall", sbuf, v, v + n, sdtype, rbuf, v + 2 * n, v + 3 * n, rdtype, 1, &served);
    if (served) {
        return rc;
    }
    mca_coll_strata_log_fallback(m, "alltoall", size * (size_t) rcount * (size_t) n,
                                 mca_coll_strata_why_core_declined);
    return mca_coll_strata_prev_alltoall(m, sbuf, scount, sdtype, rbuf, rcount, rdtype);
}

int mca_coll_strata_alltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                              struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                              const int *rdisps, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, served, rc;
    size_t size = 0, total = 0;

    rc = alltoall_any(m, "alltoallv", sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, 0, &served);
    if (served) {
        return rc;
    }
    ompi_datatype_type_size(rdtype, &size);
    for (i = 0; i < ompi_comm_size(comm); ++i) {
        total += (size_t) rcounts[i] * size;
    }
    mca_coll_strata_log_fallback(m, "alltoallv", total, mca_coll_strata_why_core_declined);
    return mca_coll_strata_prev_alltoallv(m, sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype);
}

/* An alltoall(v) handed back after the core queued it (coll_strata_request.h). */
static int alltoall_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm, ompi_request_t **inner)
{
    return comm->c_coll->coll_ialltoall(a->sbuf, a->scount, MCA_COLL_STRATA_REPLAY_SDT(a), a->rbuf, a->rcount,
                                        a->rdt, comm, inner, comm->c_coll->coll_ialltoall_module);
}

static int alltoallv_replay(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm,
                            ompi_request_t **inner)
{
    return comm->c_coll->coll_ialltoallv(a->sbuf, a->scounts, a->sdisps, MCA_COLL_STRATA_REPLAY_SDT(a), a->rbuf,
                                         a->rcounts, a->rdisps, a->rdt, comm, inner,
                                         comm->c_coll->coll_ialltoallv_module);
}

static void alltoall_spans(const mca_coll_strata_replay_t *a, int n, int me, ptrdiff_t *slo, size_t *slen,
                           ptrdiff_t *rlo, size_t *rlen)
{
    (void) me;
    *slo = 0;
    *slen = 0;
    if (NULL == a->rcounts) {
        mca_coll_strata_span(MCA_COLL_STRATA_REPLAY_SDT(a), (size_t) a->scount * (size_t) n, slo, slen);
        mca_coll_strata_span(a->rdt, (size_t) a->rcount * (size_t) n, rlo, rlen);
        return;
    }
    if (MPI_IN_PLACE != a->sbuf) {
        mca_coll_strata_span_blocks(MCA_COLL_STRATA_REPLAY_SDT(a), n, a->scounts, a->sdisps, slo, slen);
    }
    mca_coll_strata_span_blocks(a->rdt, n, a->rcounts, a->rdisps, rlo, rlen);
}

static const mca_coll_strata_replay_ops_t alltoall_ops = { alltoall_replay, alltoall_spans, 0 };
static const mca_coll_strata_replay_ops_t alltoallv_ops = { alltoallv_replay, alltoall_spans, 0 };

/* The nonblocking or persistent call (alltoall: scounts and rcounts NULL, scount and
 * rcount each, back to back). */
static int alltoall_nb(mca_coll_strata_module_t *m, const char *name, const void *sbuf, const int *scounts,
                       int scount, const int *sdisps, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, int rcount, const int *rdisps, struct ompi_datatype_t *rdtype,
                       int persistent, struct ompi_info_t *info, ompi_request_t **request)
{
    const int n = ompi_comm_size(m->comm), in_place = MPI_IN_PLACE == sbuf, uniform = NULL == rcounts;
    const char *why = mca_coll_strata_nb_refused();
    size_t rsize = 0, total = 0;
    /* 4n byte counts and offsets, then 4n int counts and displacements (alltoall) */
    size_t *v = malloc(4 * (size_t) n * (sizeof(size_t) + sizeof(int)));
    int *u = (int *) (v + 4 * n);
    ptrdiff_t slo = 0, rlo;
    size_t slen = 0, rlen;
    int i, rc = MPI_SUCCESS;
    mca_coll_strata_pair_t p;
    ompi_request_t *inner = NULL;

    if (NULL == v) {
        return MPI_ERR_NO_MEM;
    }
    ompi_datatype_type_size(rdtype, &rsize);
    for (i = 0; i < n; ++i) {
        u[i] = scount;
        u[n + i] = i * scount;
        u[2 * n + i] = rcount;
        u[3 * n + i] = i * rcount;
        total += (size_t) (uniform ? rcount : rcounts[i]) * rsize;
    }
    /* Plain alltoall moving nothing: the same on every rank. (alltoallv with nothing
     * for this rank still takes part.) */
    if (NULL == why && uniform && 0 == total) {
        why = "nothing to move";
    }
    if (NULL == why) {
        mca_coll_strata_packing_t pk = { 0 };
        a2a_call_t c;
        strata_status_t st;
        mca_coll_strata_request_t *r;
        const mca_coll_strata_replay_t call = { .ops = uniform ? &alltoall_ops : &alltoallv_ops, .sbuf = sbuf,
                                                .rbuf = rbuf, .scount = scount, .rcount = rcount, .scounts = scounts,
                                                .sdisps = sdisps, .rcounts = rcounts, .rdisps = rdisps,
                                                .sdt = sdtype, .rdt = rdtype };
        why = alltoall_map(&pk, sbuf, uniform ? u : scounts, uniform ? u + n : sdisps, sdtype, rbuf,
                           uniform ? u + 2 * n : rcounts, uniform ? u + 3 * n : rdisps, rdtype, n, uniform, v, &c,
                           &st);
        r = mca_coll_strata_nb_new(m, name, persistent);
        if (NULL == r) {
            mca_coll_strata_packing_free(&pk);
            free(v);
            return MPI_ERR_NO_MEM;
        }
        r->packing = pk;
        mca_coll_strata_nb_name_variant(r, uniform ? NULL : "alltoallv", STRATA_COLL_ALLTOALL, total);
        mca_coll_strata_nb_keep(r, &call);
        if (NULL == why && !persistent && MPI_SUCCESS != mca_coll_strata_packing_pack(&r->packing)) {
            st = STRATA_ERR_ARG;
            why = "packing the datatype failed";
        }
        if (NULL != why) {
            free(v);
            return mca_coll_strata_nb_local_failure(r, STRATA_COLL_ALLTOALL, st, why, uniform ? total : 0,
                                                    STRATA_BYTE, STRATA_OP_SUM, request, &rc) ? rc : MPI_ERR_NO_MEM;
        }
        if (uniform) {
            st = strata_ialltoall(m->team, in_place ? STRATA_IN_PLACE : c.s.base, c.r.base, c.r.bytes[0], &r->how,
                                  &r->core);
        } else {
            st = strata_ialltoallv(m->team, in_place ? STRATA_IN_PLACE : c.s.base, c.s.bytes, c.s.displs, c.r.base,
                                   c.r.bytes, c.r.displs, &r->how, &r->core);
        }
        if (mca_coll_strata_nb_taken(r, st, request, &rc)) {
            free(v);
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    free(v);
    mca_coll_strata_log_fallback(m, name, total, why);
    if (uniform) {
        if (!in_place) {
            mca_coll_strata_span(sdtype, (size_t) scount * (size_t) n, &slo, &slen);
        }
        mca_coll_strata_span(rdtype, (size_t) rcount * (size_t) n, &rlo, &rlen);
    } else {
        if (!in_place) {
            mca_coll_strata_span_blocks(sdtype, n, scounts, sdisps, &slo, &slen);
        }
        mca_coll_strata_span_blocks(rdtype, n, rcounts, rdisps, &rlo, &rlen);
    }
    if (!mca_coll_strata_nb_stage(&p, name, sbuf, slo, slen, rbuf, rlo, rlen, &rc)) {
        return uniform ? MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, alltoall, sbuf, scount, sdtype, rbuf, rcount,
                                                        rdtype)
                       : MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, alltoallv, sbuf, scounts, sdisps, sdtype, rbuf,
                                                        rcounts, rdisps, rdtype);
    }
    if (MPI_SUCCESS == rc) {
        rc = uniform ? MCA_COLL_STRATA_NB_PREV(m, persistent, alltoall, p.su, scount, sdtype, p.ru, rcount, rdtype)
                     : MCA_COLL_STRATA_NB_PREV(m, persistent, alltoallv, p.su, scounts, sdisps, sdtype, p.ru, rcounts,
                                               rdisps, rdtype);
    }
    return mca_coll_strata_nb_wrap(m, name, persistent, &p, 1, rc, inner, request);
}

int mca_coll_strata_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                              int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return alltoall_nb(MCA_COLL_STRATA_M(module), "ialltoall", sbuf, NULL, scount, NULL, sdtype, rbuf, NULL, rcount,
                       NULL, rdtype, 0, NULL, request);
}

int mca_coll_strata_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                  int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                  struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return alltoall_nb(MCA_COLL_STRATA_M(module), "alltoall_init", sbuf, NULL, scount, NULL, sdtype, rbuf, NULL,
                       rcount, NULL, rdtype, 1, info, request);
}

int mca_coll_strata_ialltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                               struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdisps,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return alltoall_nb(MCA_COLL_STRATA_M(module), "ialltoallv", sbuf, scounts, 0, sdisps, sdtype, rbuf, rcounts, 0,
                       rdisps, rdtype, 0, NULL, request);
}

int mca_coll_strata_alltoallv_init(const void *sbuf, const int *scounts, const int *sdisps,
                                   struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                   const int *rdisps, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return alltoall_nb(MCA_COLL_STRATA_M(module), "alltoallv_init", sbuf, scounts, 0, sdisps, sdtype, rbuf, rcounts, 0,
                       rdisps, rdtype, 1, info, request);
}
