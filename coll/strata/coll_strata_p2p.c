/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_p2p.c - the transport callbacks the core uses on this communicator.
 *
 * Messages go over the communicator itself until they might meet Open MPI's own
 * there, and from then on over the team's own communicator: a duplicate of the
 * communicator, made when the core asks (Team::own_comm_due: a team across nodes at
 * its setup or first call, a setup in steps, a team in one node once libnbc's counter
 * has walked far, own_comm_due below), which nothing but strata sends on. Tags alone
 * cannot keep strata's messages apart from Open MPI's own on the communicator itself
 * for ever:
 *  - 4.1 and 5.0 hand out every negative tag already: coll/base's blocking algorithms
 *    -10..-27, libnbc one per nonblocking collective counting down from -28 to
 *    -(INT_MAX/2)+1 and then wrapping, 5.0's neighborhood collectives, hcoll and UCC
 *    below that down to -INT_MAX (ompi/mca/coll/base/coll_tags.h);
 *  - pml/ucx matches only the low 23 bits of a tag, so libnbc's counter meets every
 *    value strata could pick after about 8.4 million nonblocking collectives on one
 *    communicator (4.2 million for the data tags), and an outstanding one could take
 *    a strata message or the reverse.
 * A communicator of its own has its own matching context (ob1 and ucx match the
 * context id first), so no tag of anyone's can meet strata's there, for the life of
 * a job of any length. Until it is made messages use the communicator itself, while
 * libnbc's counter on it (from -28) is far from the tags below.
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

#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/* How far libnbc's counter may walk before a team's messages leave the communicator:
 * about a quarter of the way to strata's tags. */
#define MCA_COLL_STRATA_TAG_WALK (1 << 20)
#if MCA_COLL_BASE_TAG_NONBLOCKING_BASE - MCA_COLL_STRATA_TAG_BASE < 3 * MCA_COLL_STRATA_TAG_WALK
#error "libnbc's tags start too near strata's for MCA_COLL_STRATA_TAG_WALK"
#endif
#if (-(1 << 23) + 1) > (MCA_COLL_STRATA_TAG_BASE - STRATA_TAG_SPACE + 1) || MCA_COLL_STRATA_TAG_BASE > -28
#error "strata tags must stay within [-(2^23)+1, -28] (pml/ucx keeps 24 bits; coll/base uses -10..-27)"
#endif

static inline int strata_tag(int tag)
{
    return MCA_COLL_STRATA_TAG_BASE - tag;
}

/* Where the team's messages go: its own communicator once made. */
static inline struct ompi_communicator_t *wire_of(mca_coll_strata_module_t *m)
{
    return NULL != m->wire ? m->wire : m->comm;
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
                            MCA_PML_BASE_SEND_STANDARD, wire_of(m), &r));
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
                            strata_tag(tag), wire_of(m), &r));
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
        return MPI_ERR_TRUNCATE == rc || MPI_ERR_TRUNCATE == status.MPI_ERROR ? STRATA_ERR_TRUNCATE : STRATA_ERR_COMM;
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
 * own queued calls (strata_progress, registered in coll_strata_request.c). */
static void mca_coll_strata_progress(void *ctx)
{
    (void) ctx;
    (void) opal_progress();
}

/* Starts duplicating the communicator, marked with the info key that makes strata
 * decline the duplicate; the core waits on *req with test(). */
static int mca_coll_strata_open_private(void *ctx, void **req)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) ctx;
    ompi_request_t *r = MPI_REQUEST_NULL;
    opal_info_t *info;
    int rc;

    if (NULL != m->wire || NULL != m->wire_slot) {
        return STRATA_ERR_ARG;   /* made once */
    }
    m->wire_slot = (struct ompi_communicator_t **) malloc(sizeof *m->wire_slot);
    info = OBJ_NEW(opal_info_t);
    if (NULL == m->wire_slot || NULL == info) {
        free(m->wire_slot);
        m->wire_slot = NULL;
        if (NULL != info) {
            OBJ_RELEASE(info);
        }
        return STRATA_ERR_NOMEM;
    }
    *m->wire_slot = NULL;
    rc = opal_info_set(info, MCA_COLL_STRATA_WIRE_KEY, MCA_COLL_STRATA_WIRE_VALUE);
    if (OPAL_SUCCESS == rc) {
        rc = ompi_comm_idup_with_info(m->comm, info, m->wire_slot, &r);   /* copies info */
    }
    OBJ_RELEASE(info);
    if (OMPI_SUCCESS != rc) {
        opal_output_verbose(1, mca_coll_strata_component.output,
                            "coll:strata: duplicating %s for strata's messages failed (%d)",
                            m->comm->c_name, rc);
        free(m->wire_slot);
        m->wire_slot = NULL;
        return STRATA_ERR_COMM;
    }
    *req = r;
    return STRATA_OK;
}

static void mca_coll_strata_private_done(void *ctx, int ok)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) ctx;

    if (NULL == m->wire_slot) {
        return;
    }
    if (ok && NULL != *m->wire_slot && MPI_COMM_NULL != *m->wire_slot) {
        m->wire = *m->wire_slot;
        free(m->wire_slot);
        m->wire_slot = NULL;
        (void) snprintf(m->wire->c_name, sizeof(m->wire->c_name), "strata messages of %.40s", m->comm->c_name);
    }
    /* Given up: Open MPI may still write the slot when the duplicate completes, so
     * it is never freed (a pointer's worth); the duplicate, if any, is left to
     * MPI_Finalize. */
    m->wire_slot = NULL;
}

/* Whether a component that numbers its messages below libnbc's tags (hcoll) is
 * loaded: its counter cannot be read, so teams make their communicator at once. */
static int tags_taken_from_below(void)
{
    static int known = -1;
    mca_base_component_list_item_t *cli;

    if (known < 0) {
        known = 0;
        OPAL_LIST_FOREACH(cli, &ompi_coll_base_framework.framework_components, mca_base_component_list_item_t) {
            if (0 == strcmp(cli->cli_component->mca_component_name, "hcoll")) {
                known = 1;
            }
        }
    }
    return known;
}

/* The team may keep its messages on the communicator itself while libnbc's counter
 * (c_nbc_tag, one tag or more per nonblocking collective on it, the same on every
 * rank at the same call, as libnbc's own matching needs) is far from strata's range:
 * from MCA_COLL_BASE_TAG_NONBLOCKING_BASE it walks down to strata's tags after about
 * 4.2 million collectives (under pml/ucx, which keeps 23 bits, as well). Due once it
 * has walked MCA_COLL_STRATA_TAG_WALK (about a million), or wrapped since the last
 * call. The core asks only for a team in one node, which keeps nothing posted between
 * its calls: one of its calls outstanding while 3 million other nonblocking
 * collectives start on the communicator could still meet one (docs/design.md). */
static int mca_coll_strata_own_comm_due(void *ctx)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) ctx;
    const int32_t now = m->comm->c_nbc_tag;
    const int wrapped = now > m->nbc_tag_seen;

    m->nbc_tag_seen = now;
    return wrapped || tags_taken_from_below() ||
           (int64_t) MCA_COLL_BASE_TAG_NONBLOCKING_BASE - (int64_t) now >= MCA_COLL_STRATA_TAG_WALK;
}

void mca_coll_strata_wire_release(mca_coll_strata_module_t *m)
{
    if (NULL == m->wire) {
        return;
    }
    /* In MPI_Finalize Open MPI releases every communicator left, this one included,
     * in an order of its own: freeing it here could free it twice. */
    if (ompi_mpi_state < OMPI_MPI_STATE_FINALIZE_STARTED) {
        (void) ompi_comm_free(&m->wire);
    }
    m->wire = NULL;
}

void mca_coll_strata_transport_init(mca_coll_strata_module_t *m, strata_transport_t *t)
{
    t->ctx = m;
    t->isend = mca_coll_strata_isend;
    t->irecv = mca_coll_strata_irecv;
    t->test = mca_coll_strata_test;
    t->cancel = mca_coll_strata_cancel;
    t->progress = mca_coll_strata_progress;
    t->open_private = mca_coll_strata_open_private;
    t->private_done = mca_coll_strata_private_done;
    t->own_comm_due = mca_coll_strata_own_comm_due;
    m->nbc_tag_seen = m->comm->c_nbc_tag;
    /* Whether the PML takes GPU memory: the Open MPI build and its settings decide,
     * the same on every rank of a job (coll_strata_compat.h; Debian's is not). */
    t->device_capable = mca_coll_strata_stack_cuda_aware();
}
