/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_p2p.c - the transport callbacks the core uses on this communicator.
 *
 * Inter-node traffic is point-to-point on the communicator itself with collective
 * (negative) tags, as Open MPI's coll/base algorithms do; applications cannot use
 * negative tags, so nothing can match ours by accident.
 *
 * Tag range. The core uses tags 0..STRATA_TAG_SPACE-1; they become
 * MCA_COLL_STRATA_TAG_BASE - tag = [-(2^22) - STRATA_TAG_SPACE + 1, -(2^22)].
 *  - pml/ucx keeps only 24 bits of an MPI tag: PML_UCX_MAKE_SEND_TAG shifts the
 *    (sign-extended) tag left by PML_UCX_RANK_BITS + PML_UCX_CONTEXT_BITS = 40 bits
 *    of the 64-bit UCP tag (ompi/mca/pml/ucx/pml_ucx_request.h, PML_UCX_TAG_BITS 24),
 *    and receives compare only bits 40..62 (PML_UCX_TAG_MASK 0x7fffff0000000000):
 *    the low 23 bits of the tag, not its sign. So under pml/ucx a strata tag t can
 *    match an application tag t + 2^23. Ours have low bits 2^22 - tag, i.e.
 *    [4128769, 4194304]: far from the small tags applications use and from
 *    coll/base's -10..-27 (low bits 8388598..8388581). MPI_TAG_UB under pml/ucx is
 *    2^23 - 1, so no tag range is collision-free there; ob1 compares all 32 bits.
 *  - libnbc walks down from -27 by one per non-blocking collective on a communicator;
 *    it would need ~4 million of them on one communicator to reach our range, and
 *    even then only a concurrently outstanding one could collide.
 */
#include "coll_strata.h"

#include <stdlib.h>

#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#if (-(1 << 23) + 1) > (MCA_COLL_STRATA_TAG_BASE - STRATA_TAG_SPACE + 1) || MCA_COLL_STRATA_TAG_BASE > -28
#error "strata tags must stay within [-(2^23)+1, -28] (pml/ucx keeps 24 bits; coll/base uses -10..-27)"
#endif

static inline int strata_tag(int tag)
{
    return MCA_COLL_STRATA_TAG_BASE - tag;
}

static int p2p_check(void *ctx, int peer, int tag, size_t bytes)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) ctx;
    (void) bytes;
    if (NULL == m || peer < STRATA_ANY_SOURCE || peer >= ompi_comm_size(m->comm) || tag < 0 || tag >= STRATA_TAG_SPACE) {
        return STRATA_ERR_ARG;
    }
    return STRATA_OK;
}

static int mca_coll_strata_isend(void *ctx, const void *buf, size_t bytes, int peer, int tag, void **req)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) ctx;
    ompi_request_t *r = MPI_REQUEST_NULL;
    int rc = p2p_check(ctx, peer, tag, bytes);
    if (STRATA_OK != rc) {
        return rc;
    }
    if (peer < 0) {
        return STRATA_ERR_ARG;
    }
    rc = MCA_PML_CALL(isend(buf, bytes, MPI_BYTE, peer, strata_tag(tag),
                            MCA_PML_BASE_SEND_STANDARD, m->comm, &r));
    if (OMPI_SUCCESS != rc) {
        opal_output_verbose(1, mca_coll_strata_component.output,
                            "coll:strata: isend of %zu bytes to %d failed (%d)", bytes, peer, rc);
        return STRATA_ERR_COMM;
    }
    *req = r;
    return STRATA_OK;
}

static int mca_coll_strata_irecv(void *ctx, void *buf, size_t bytes, int peer, int tag, void **req)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) ctx;
    ompi_request_t *r = MPI_REQUEST_NULL;
    int rc = p2p_check(ctx, peer, tag, bytes);
    if (STRATA_OK != rc) {
        return rc;
    }
    rc = MCA_PML_CALL(irecv(buf, bytes, MPI_BYTE, STRATA_ANY_SOURCE == peer ? MPI_ANY_SOURCE : peer,
                            strata_tag(tag), m->comm, &r));
    if (OMPI_SUCCESS != rc) {
        opal_output_verbose(1, mca_coll_strata_component.output,
                            "coll:strata: irecv of %zu bytes from %d failed (%d)", bytes, peer, rc);
        return STRATA_ERR_COMM;
    }
    *req = r;
    return STRATA_OK;
}

/* Looks at the request without progressing Open MPI: the core calls progress (below)
 * once per pass that moved nothing, not once per request it tests. (ompi_request_test
 * on a request still open runs the whole opal_progress loop, which yields the core
 * when mpi_yield_when_idle is set: a few such tests per call had cost a small call
 * more than the call itself.) On completion ompi_request_test frees the request (and
 * sets it to MPI_REQUEST_NULL) unless it carries an error, in which case we free it. */
static int mca_coll_strata_test(void *ctx, void *req, int *done, size_t *bytes)
{
    ompi_request_t *r = (ompi_request_t *) req;
    ompi_status_public_t status;
    int completed = 0, rc;
    (void) ctx;

    *done = 0;
    if (NULL == r || MPI_REQUEST_NULL == r) {
        *done = 1;
        return STRATA_OK;
    }
    if (!REQUEST_COMPLETE(r)) {
        return STRATA_OK;
    }
    rc = ompi_request_test(&r, &completed, &status);
    if (OMPI_SUCCESS != rc) {
        if (MPI_REQUEST_NULL != r) {
            (void) ompi_request_free(&r);
        }
        *done = 1;
        opal_output_verbose(1, mca_coll_strata_component.output,
                            "coll:strata: point-to-point request failed (%d)", rc);
        /* A peer sent more than this rank posted: the ranks passed different sizes. */
        return MPI_ERR_TRUNCATE == status.MPI_ERROR ? STRATA_ERR_TRUNCATE : STRATA_ERR_COMM;
    }
    if (completed) {
        if (NULL != bytes) {
            *bytes = status._ucount;
        }
        if (MPI_REQUEST_NULL != r) {   /* persistent requests never come here */
            (void) ompi_request_free(&r);
        }
        *done = 1;
    }
    return STRATA_OK;
}

/* A receive is cancelled and completed (so it never writes its buffer later); a send
 * is freed, which lets it finish on its own (MPI_Request_free semantics). */
static void mca_coll_strata_cancel(void *ctx, void *req, int is_recv)
{
    ompi_request_t *r = (ompi_request_t *) req;
    (void) ctx;
    if (NULL == r || MPI_REQUEST_NULL == r) {
        return;
    }
    if (is_recv && !REQUEST_COMPLETE(r)) {
        (void) ompi_request_cancel(r);
        (void) ompi_request_wait(&r, MPI_STATUS_IGNORE);
    }
    if (MPI_REQUEST_NULL != r) {
        (void) ompi_request_free(&r);
    }
}

/* Open MPI's progress loop: the PML, libnbc's nonblocking collectives, and strata's
 * own queued calls (strata_progress, registered in coll_strata_nonblocking.c). */
static void mca_coll_strata_progress(void *ctx)
{
    (void) ctx;
    (void) opal_progress();
}

void mca_coll_strata_transport_init(mca_coll_strata_module_t *m, strata_transport_t *t)
{
    t->ctx = m;
    t->isend = mca_coll_strata_isend;
    t->irecv = mca_coll_strata_irecv;
    t->test = mca_coll_strata_test;
    t->cancel = mca_coll_strata_cancel;
    t->progress = mca_coll_strata_progress;
    /* Whether the PML takes GPU memory: the Open MPI build and its settings decide,
     * the same on every rank of a job (coll_strata_compat.h; Debian's is not). */
    t->device_capable = mca_coll_strata_stack_cuda_aware();
}
