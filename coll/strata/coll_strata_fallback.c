/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_fallback.c - the previous component's collectives on device buffers.
 *
 * Where strata hands a call to the component it replaced, that component (tuned,
 * basic, ... in a build of Open MPI that is not CUDA-aware) must never see a device
 * pointer. Each wrapper here copies this rank's device buffers into host memory
 * (the whole span the datatype and counts cover, so holes keep their contents),
 * calls the previous component on the host copies, and copies the receive side
 * back. Host buffers pass straight through; each rank decides for its own buffers,
 * so a call where some ranks pass device memory and others host memory works.
 */
#include "coll_strata.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"
#include "strata_device.h"

typedef mca_coll_strata_host_copy_t host_copy_t;
typedef mca_coll_strata_pair_t pair_t;

#define HOST_COPY_INIT { NULL, NULL, 0, 0, 0 }

static void release_host(host_copy_t *s)
{
    if (s->pinned) {
        strata_host_copy_put(s->host);
    } else {
        free(s->host);
    }
    s->host = NULL;
    s->pinned = 0;
}

int mca_coll_strata_is_device(const void *p)
{
    return NULL != p && MPI_IN_PLACE != p && STRATA_MEM_DEVICE == strata_buffer_kind(p);
}

#define is_device mca_coll_strata_is_device
#define span mca_coll_strata_span
#define span_blocks mca_coll_strata_span_blocks

void mca_coll_strata_span(struct ompi_datatype_t *dt, size_t count, ptrdiff_t *lo, size_t *len)
{
    *len = (size_t) opal_datatype_span(&dt->super, count, lo);
}

void mca_coll_strata_span_blocks(struct ompi_datatype_t *dt, int n, const int *counts, const int *displs,
                                 ptrdiff_t *lo, size_t *len)
{
    ptrdiff_t dlb = 0, extent = 0, first = 0, end = 0;
    int i, any = 0;
    ompi_datatype_get_extent(dt, &dlb, &extent);
    for (i = 0; i < n; ++i) {
        ptrdiff_t gap = 0, start;
        size_t l;
        if (counts[i] <= 0) {
            continue;
        }
        l = (size_t) opal_datatype_span(&dt->super, (size_t) counts[i], &gap);
        start = (ptrdiff_t) displs[i] * extent + gap;
        if (!any || start < first) first = start;
        if (!any || start + (ptrdiff_t) l > end) end = start + (ptrdiff_t) l;
        any = 1;
    }
    *lo = first;
    *len = any ? (size_t) (end - first) : 0;
}

/* Where buf is device memory and the region is not empty, copies it to host memory
 * and sets *use to the host pointer that stands for buf; otherwise *use = buf. */
static int copy_in(void *buf, ptrdiff_t lo, size_t len, host_copy_t *s, void **use)
{
    *use = buf;
    if (0 == len || !is_device(buf)) {
        return MPI_SUCCESS;
    }
    /* Page-locked and reused where the core can (fast, asynchronous-capable copies). */
    s->host = strata_host_copy_get(buf, len);
    s->pinned = NULL != s->host;
    if (NULL == s->host) {
        s->host = malloc(len);
    }
    if (NULL == s->host) {
        mca_coll_strata_warn("staging failed", "cannot allocate %zu bytes to stage a device buffer", len);
        return MPI_ERR_NO_MEM;
    }
    s->dev = (char *) buf;
    s->lo = lo;
    s->len = len;
    if (0 != strata_device_copy(s->host, s->dev + lo, len)) {
        release_host(s);
        s->host = NULL;
        s->dev = NULL;
        return MPI_ERR_INTERN;
    }
    *use = s->host - lo;
    return MPI_SUCCESS;
}

/* The device contents of a staged region again (a persistent fallback's next start). */
int mca_coll_strata_pair_refresh(pair_t *p)
{
    host_copy_t *c[2] = { &p->s, &p->r };
    int i;
    for (i = 0; i < 2; ++i) {
        if (NULL != c[i]->dev && 0 != strata_device_copy(c[i]->host, c[i]->dev + c[i]->lo, c[i]->len)) {
            return MPI_ERR_INTERN;
        }
    }
    return MPI_SUCCESS;
}

/* Copies the host copy back when copy_back and rc is success; frees it. */
static int copy_out(host_copy_t *s, int copy_back, int rc)
{
    if (NULL != s->dev && copy_back && MPI_SUCCESS == rc &&
        0 != strata_device_copy(s->dev + s->lo, s->host, s->len)) {
        rc = MPI_ERR_INTERN;
    }
    release_host(s);
    s->dev = NULL;
    return rc;
}

void mca_coll_strata_say_staging(const char *coll)
{
    static int said = 0;   /* once per process, whichever thread gets there first */
    if (mca_coll_strata_component.verbose >= 2 ||
        (mca_coll_strata_component.verbose >= 1 && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))) {
        opal_output(mca_coll_strata_component.output,
                    "coll:strata: %d: %s: device buffers staged through host memory for the "
                    "previous component",
                    ompi_comm_rank((ompi_communicator_t *) &ompi_mpi_comm_world), coll);
    }
}

#define pair_in mca_coll_strata_pair_in
#define pair_out mca_coll_strata_pair_out

int mca_coll_strata_pair_in(pair_t *p, const void *sbuf, ptrdiff_t slo, size_t slen, void *rbuf,
                            ptrdiff_t rlo, size_t rlen)
{
    int rc = MPI_SUCCESS;
    host_copy_t none = HOST_COPY_INIT;
    p->s = none;
    p->r = none;
    p->su = (void *) sbuf;
    p->ru = rbuf;
    if (MPI_IN_PLACE != sbuf) {
        rc = copy_in((void *) sbuf, slo, slen, &p->s, &p->su);
    }
    if (MPI_SUCCESS == rc) {
        rc = copy_in(rbuf, rlo, rlen, &p->r, &p->ru);
    }
    return rc;
}

int mca_coll_strata_pair_out(pair_t *p, int copy_back, int rc)
{
    copy_out(&p->s, 0, rc);
    return copy_out(&p->r, copy_back, rc);
}

int mca_coll_strata_prev_allreduce(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf,
                                   int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    pair_t p;
    ptrdiff_t lo;
    size_t len;
    int rc;
    if (!is_device(sbuf) && !is_device(rbuf)) {
        return m->prev.allreduce(sbuf, rbuf, count, dtype, op, m->comm, m->prev.allreduce_module);
    }
    mca_coll_strata_say_staging("allreduce");
    span(dtype, (size_t) count, &lo, &len);
    rc = pair_in(&p, sbuf, lo, len, rbuf, lo, len);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.allreduce(p.su, p.ru, count, dtype, op, m->comm, m->prev.allreduce_module);
    }
    return pair_out(&p, 1, rc);
}

int mca_coll_strata_prev_reduce(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf,
                                int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                int root)
{
    int is_root = ompi_comm_rank(m->comm) == root;
    pair_t p;
    ptrdiff_t lo;
    size_t len;
    int rc;
    if (!is_device(sbuf) && !(is_root && is_device(rbuf))) {
        return m->prev.reduce(sbuf, rbuf, count, dtype, op, root, m->comm, m->prev.reduce_module);
    }
    mca_coll_strata_say_staging("reduce");
    span(dtype, (size_t) count, &lo, &len);
    rc = pair_in(&p, sbuf, lo, len, rbuf, lo, is_root ? len : 0);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.reduce(p.su, p.ru, count, dtype, op, root, m->comm, m->prev.reduce_module);
    }
    return pair_out(&p, is_root, rc);
}

int mca_coll_strata_prev_bcast(mca_coll_strata_module_t *m, void *buf, int count,
                               struct ompi_datatype_t *dtype, int root)
{
    host_copy_t b = HOST_COPY_INIT;
    void *bu;
    ptrdiff_t lo;
    size_t len;
    int rc;
    if (!is_device(buf)) {
        return m->prev.bcast(buf, count, dtype, root, m->comm, m->prev.bcast_module);
    }
    mca_coll_strata_say_staging("bcast");
    span(dtype, (size_t) count, &lo, &len);
    rc = copy_in(buf, lo, len, &b, &bu);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.bcast(bu, count, dtype, root, m->comm, m->prev.bcast_module);
    }
    return copy_out(&b, ompi_comm_rank(m->comm) != root, rc);
}

int mca_coll_strata_prev_allgather(mca_coll_strata_module_t *m, const void *sbuf, int scount,
                                   struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   struct ompi_datatype_t *rdtype)
{
    pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    int rc;
    if (!is_device(sbuf) && !is_device(rbuf)) {
        return m->prev.allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, m->comm,
                                 m->prev.allgather_module);
    }
    mca_coll_strata_say_staging("allgather");
    span(sdtype, (size_t) scount, &slo, &slen);
    span(rdtype, (size_t) rcount * (size_t) ompi_comm_size(m->comm), &rlo, &rlen);
    rc = pair_in(&p, sbuf, slo, slen, rbuf, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.allgather(p.su, scount, sdtype, p.ru, rcount, rdtype, m->comm,
                               m->prev.allgather_module);
    }
    return pair_out(&p, 1, rc);
}

int mca_coll_strata_prev_allgatherv(mca_coll_strata_module_t *m, const void *sbuf, int scount,
                                    struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                    const int *disps, struct ompi_datatype_t *rdtype)
{
    pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    int rc;
    if (!is_device(sbuf) && !is_device(rbuf)) {
        return m->prev.allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, m->comm,
                                  m->prev.allgatherv_module);
    }
    mca_coll_strata_say_staging("allgatherv");
    span(sdtype, (size_t) scount, &slo, &slen);
    span_blocks(rdtype, ompi_comm_size(m->comm), rcounts, disps, &rlo, &rlen);
    rc = pair_in(&p, sbuf, slo, slen, rbuf, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.allgatherv(p.su, scount, sdtype, p.ru, rcounts, disps, rdtype, m->comm,
                                m->prev.allgatherv_module);
    }
    return pair_out(&p, 1, rc);
}

int mca_coll_strata_prev_reduce_scatter(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf,
                                        const int *rcounts, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op)
{
    int i, n = ompi_comm_size(m->comm), rank = ompi_comm_rank(m->comm), rc;
    size_t total = 0, slen, rlen;
    pair_t p;
    ptrdiff_t slo, rlo;
    if (!is_device(sbuf) && !is_device(rbuf)) {
        return m->prev.reduce_scatter(sbuf, rbuf, rcounts, dtype, op, m->comm,
                                      m->prev.reduce_scatter_module);
    }
    mca_coll_strata_say_staging("reduce_scatter");
    for (i = 0; i < n; ++i) {
        total += (size_t) rcounts[i];
    }
    span(dtype, total, &slo, &slen);
    span(dtype, MPI_IN_PLACE == sbuf ? total : (size_t) rcounts[rank], &rlo, &rlen);
    rc = pair_in(&p, sbuf, slo, slen, rbuf, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.reduce_scatter(p.su, p.ru, rcounts, dtype, op, m->comm,
                                    m->prev.reduce_scatter_module);
    }
    return pair_out(&p, 1, rc);
}

int mca_coll_strata_prev_reduce_scatter_block(mca_coll_strata_module_t *m, const void *sbuf,
                                              void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op)
{
    size_t total = (size_t) rcount * (size_t) ompi_comm_size(m->comm), slen, rlen;
    pair_t p;
    ptrdiff_t slo, rlo;
    int rc;
    if (!is_device(sbuf) && !is_device(rbuf)) {
        return m->prev.reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, m->comm,
                                            m->prev.reduce_scatter_block_module);
    }
    mca_coll_strata_say_staging("reduce_scatter_block");
    span(dtype, total, &slo, &slen);
    span(dtype, MPI_IN_PLACE == sbuf ? total : (size_t) rcount, &rlo, &rlen);
    rc = pair_in(&p, sbuf, slo, slen, rbuf, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.reduce_scatter_block(p.su, p.ru, rcount, dtype, op, m->comm,
                                          m->prev.reduce_scatter_block_module);
    }
    return pair_out(&p, 1, rc);
}

int mca_coll_strata_prev_alltoall(mca_coll_strata_module_t *m, const void *sbuf, int scount,
                                  struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                  struct ompi_datatype_t *rdtype)
{
    size_t n = (size_t) ompi_comm_size(m->comm), slen, rlen;
    pair_t p;
    ptrdiff_t slo, rlo;
    int rc;
    if (!is_device(sbuf) && !is_device(rbuf)) {
        return m->prev.alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, m->comm,
                                m->prev.alltoall_module);
    }
    mca_coll_strata_say_staging("alltoall");
    span(sdtype, (size_t) scount * n, &slo, &slen);
    span(rdtype, (size_t) rcount * n, &rlo, &rlen);
    rc = pair_in(&p, sbuf, slo, slen, rbuf, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.alltoall(p.su, scount, sdtype, p.ru, rcount, rdtype, m->comm,
                              m->prev.alltoall_module);
    }
    return pair_out(&p, 1, rc);
}

int mca_coll_strata_prev_alltoallv(mca_coll_strata_module_t *m, const void *sbuf,
                                   const int *scounts, const int *sdisps,
                                   struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                   const int *rdisps, struct ompi_datatype_t *rdtype)
{
    int n = ompi_comm_size(m->comm), rc;
    pair_t p;
    ptrdiff_t slo = 0, rlo;
    size_t slen = 0, rlen;
    if (!is_device(sbuf) && !is_device(rbuf)) {
        return m->prev.alltoallv(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype,
                                 m->comm, m->prev.alltoallv_module);
    }
    mca_coll_strata_say_staging("alltoallv");
    if (MPI_IN_PLACE != sbuf) {
        span_blocks(sdtype, n, scounts, sdisps, &slo, &slen);
    }
    span_blocks(rdtype, n, rcounts, rdisps, &rlo, &rlen);
    rc = pair_in(&p, sbuf, slo, slen, rbuf, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = m->prev.alltoallv(p.su, scounts, sdisps, sdtype, p.ru, rcounts, rdisps, rdtype, m->comm,
                               m->prev.alltoallv_module);
    }
    return pair_out(&p, 1, rc);
}

int mca_coll_strata_pack_block(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rblock, int rcount, struct ompi_datatype_t *rdtype)
{
    pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    int rc;
    span(sdtype, (size_t) scount, &slo, &slen);
    span(rdtype, (size_t) rcount, &rlo, &rlen);
    rc = pair_in(&p, sbuf, slo, slen, rblock, rlo, rlen);
    if (MPI_SUCCESS == rc) {
        rc = ompi_datatype_sndrcv(p.su, scount, sdtype, p.ru, rcount, rdtype);
    }
    return pair_out(&p, 1, rc);
}
