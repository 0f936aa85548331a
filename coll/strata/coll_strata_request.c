/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_request.c - what every collective's nonblocking and persistent entries
 * share (coll_strata_request.h): their Open MPI requests, the progress loop, and the
 * hand-back of a call the core queued and then declined.
 *
 * strata serves a nonblocking call on a communicator set up at its creation, or set up
 * in steps behind its first call (setup agrees among all ranks, which a nonblocking
 * call must not wait for): the
 * core builds the call's schedule at once and queues it behind the communicator's
 * earlier calls (src/strata.h); Open MPI's progress loop (opal_progress, which every
 * MPI_Wait/Test runs) advances the queues, and the call's end completes the request.
 * A persistent call is built once at _init; each MPI_Start runs it again.
 *
 * Whether strata serves depends only on what matches on every rank (the core's
 * decisions, the type signature, the kind of call), never on this rank's buffers: a
 * datatype laid out with gaps is packed at each start and unpacked at completion.
 * Everything else goes to the previous component's nonblocking entry; where this
 * rank's buffers are device memory and that component cannot take them, they are
 * staged through host memory around its request (copied back when it completes).
 */
#include "coll_strata_request.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "strata_device.h"

/* ---------------------------------------------------------------- requests */

static void request_construct(mca_coll_strata_request_t *r)
{
    r->m = NULL;
    r->variant = NULL;
    r->core_coll = STRATA_COLL_ALLREDUCE;
    r->variant_bytes = 0;
    r->core = NULL;
    r->inner = NULL;
    r->staged = 0;
    r->copy_back = 0;
    memset(&r->packing, 0, sizeof r->packing);
    memset(&r->replay, 0, sizeof r->replay);
}

OBJ_CLASS_INSTANCE(mca_coll_strata_request_t, ompi_coll_base_nbc_request_t, request_construct, NULL);

static int progress_registered = 0;

/* Open MPI's progress loop advances every queued strata call of the thread. */
static int strata_progress_cb(void)
{
    return strata_progress();
}

/* coll_strata_progress_thread: a thread that progresses the queued calls while the
 * application computes (MPI_THREAD_MULTIPLE only: it calls the PML). It spins
 * (yielding) while calls are queued and naps otherwise. */
static pthread_t progress_thread;
static volatile int progress_thread_on = 0;

static void *progress_thread_main(void *arg)
{
    (void) arg;
    while (__atomic_load_n(&progress_thread_on, __ATOMIC_ACQUIRE)) {
        /* Only while strata has calls queued: then the whole loop, where the PML moves
         * strata's requests (the core's tests only look) and strata_progress_cb moves
         * the calls on. Never otherwise: MPI_Finalize tears the PML down before the
         * component closes and stops this thread (a correct program has no call
         * queued by then). */
        if (strata_progress_pending()) {
            (void) opal_progress();
            sched_yield();
        } else {
            struct timespec nap = { 0, 200 * 1000 };
            nanosleep(&nap, NULL);
        }
    }
    return NULL;
}

/* Once, at the first nonblocking call: the progress loop, and the thread if asked. */
static void start_progress(void)
{
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&once);
    if (!progress_registered) {
        opal_progress_register(strata_progress_cb);
        progress_registered = 1;
        if (mca_coll_strata_component.progress_thread && !ompi_mpi_thread_multiple) {
            opal_output_verbose(1, mca_coll_strata_component.output,
                                "coll:strata: coll_strata_progress_thread needs MPI_THREAD_MULTIPLE (the thread "
                                "calls the point-to-point layer): no progress thread; nonblocking calls advance "
                                "in MPI calls");
        } else if (mca_coll_strata_component.progress_thread) {
            __atomic_store_n(&progress_thread_on, 1, __ATOMIC_RELEASE);
            if (0 != pthread_create(&progress_thread, NULL, progress_thread_main, NULL)) {
                progress_thread_on = 0;
                mca_coll_strata_warn("progress thread", "cannot start the progress thread (coll_strata_progress_thread): "
                                     "nonblocking calls advance in MPI calls");
            }
        }
    }
    pthread_mutex_unlock(&once);
}

void mca_coll_strata_nonblocking_fini(void)
{
    if (progress_thread_on) {
        __atomic_store_n(&progress_thread_on, 0, __ATOMIC_RELEASE);
        (void) pthread_join(progress_thread, NULL);
    }
    if (progress_registered) {
        opal_progress_unregister(strata_progress_cb);
        progress_registered = 0;
    }
}

static void release(mca_coll_strata_request_t *r)
{
    if (NULL != r->core) {
        (void) strata_request_free(r->core);
    }
    if (NULL != r->inner && &ompi_request_empty != r->inner && MPI_REQUEST_NULL != r->inner) {
        (void) ompi_request_free(&r->inner);
    }
    if (r->staged) {
        (void) mca_coll_strata_pair_out(&r->stage, 0, MPI_SUCCESS);
    }
    mca_coll_strata_packing_free(&r->packing);
    if (NULL != r->replay.ops) {
        OBJ_RELEASE(r->replay.rdt);
        if (NULL != r->replay.sdt) {
            OBJ_RELEASE(r->replay.sdt);
        }
        if (NULL != r->replay.op) {
            OBJ_RELEASE(r->replay.op);
        }
    }
    OBJ_RELEASE(r->m->comm);
    OMPI_REQUEST_FINI(&r->super.super);
    OBJ_RELEASE(r);
}

static int request_free(ompi_request_t **req)
{
    mca_coll_strata_request_t *r = (mca_coll_strata_request_t *) *req;
    if (!REQUEST_COMPLETE(&r->super.super)) {
        return MPI_ERR_REQUEST;   /* a running collective cannot be let go (as libnbc) */
    }
    release(r);
    *req = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

static int request_cancel(ompi_request_t *req, int complete)
{
    (void) req;
    (void) complete;
    return MPI_ERR_REQUEST;   /* collectives cannot be cancelled */
}

static void finish(mca_coll_strata_request_t *r, int rc)
{
    r->super.super.req_status.MPI_ERROR = rc;
    ompi_request_complete(&r->super.super, true);
}

static int inner_done(ompi_request_t *inner);

/* The core handed back a call it had queued: the previous component runs it on the
 * team's own communicator (made in steps before the call was decided: a setup in steps
 * or a move when due), this rank's device
 * buffers staged through host memory around it (copied back when it completes). */
static void hand_back_queued(mca_coll_strata_request_t *r)
{
    const mca_coll_strata_replay_t *a = &r->replay;
    mca_coll_strata_replay_t on = r->replay;   /* the call on the buffers the previous component gets */
    ompi_request_t *inner = NULL;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    int rc;
    if (NULL == a->ops || NULL == r->m->wire) {
        opal_output(0, "coll:strata: %s on %s: handing the call back to the previous component failed: %s", r->name,
                    r->m->comm->c_name,
                    NULL == a->ops ? "no record of its arguments" : "strata's own communicator could not be made");
        finish(r, MPI_ERR_INTERN);
        return;
    }
    if (NULL != r->inner) {   /* a persistent call's previous start */
        (void) ompi_request_free(&r->inner);
    }
    if (r->staged) {
        (void) mca_coll_strata_pair_out(&r->stage, 0, MPI_SUCCESS);
        r->staged = 0;
    }
    r->copy_back = 0;
    if ((MPI_IN_PLACE != a->sbuf && NULL != a->sbuf && mca_coll_strata_is_device(a->sbuf)) ||
        (NULL != a->rbuf && mca_coll_strata_is_device(a->rbuf))) {
        a->ops->spans(a, ompi_comm_size(r->m->comm), ompi_comm_rank(r->m->comm), &slo, &slen, &rlo, &rlen);
        mca_coll_strata_say_staging(r->name);
        rc = mca_coll_strata_pair_in(&r->stage, a->sbuf, slo, slen, a->rbuf, rlo, rlen);
        if (MPI_SUCCESS != rc) {
            finish(r, rc);
            return;
        }
        r->staged = 1;
        r->copy_back = !a->ops->result_at_root_only || ompi_comm_rank(r->m->comm) == a->root;
        on.sbuf = r->stage.su;
        on.rbuf = r->stage.ru;
    }
    rc = a->ops->start(&on, r->m->wire, &inner);
    if (MPI_SUCCESS != rc) {
        finish(r, rc);
        return;
    }
    r->inner = inner;
    (void) ompi_request_set_callback(inner, inner_done, r);
}

/* The core's call ended (from strata_progress). */
static void core_done(void *ctx, strata_status_t st)
{
    mca_coll_strata_request_t *r = (mca_coll_strata_request_t *) ctx;
    int rc;
    if (STRATA_FALLBACK == st) {
        hand_back_queued(r);
        return;
    }
    rc = mca_coll_strata_status_to_mpi(st, r->m, r->name);
    if (STRATA_OK == st && NULL != r->variant) {   /* the MPI call by its own name, as blocking ones */
        mca_coll_strata_log_variant(r->m, r->core_coll, r->variant, r->variant_bytes,
                                    r->how.persistent ? ", persistent" : ", nonblocking");
    }
    if (MPI_SUCCESS == rc) {
        rc = mca_coll_strata_packing_unpack(&r->packing);
    }
    finish(r, rc);
}

/* The previous component's request ended: the receive side goes back to the device. */
static int inner_done(ompi_request_t *inner)
{
    mca_coll_strata_request_t *r = (mca_coll_strata_request_t *) inner->req_complete_cb_data;
    mca_coll_strata_host_copy_t *c = &r->stage.r;
    int rc = inner->req_status.MPI_ERROR;
    if (MPI_SUCCESS == rc && r->copy_back && NULL != c->dev &&
        0 != strata_device_copy(c->dev + c->lo, c->host, c->len)) {
        rc = MPI_ERR_INTERN;
    }
    finish(r, rc);
    return 0;
}

/* Starts (again) what the request holds. */
static int start_one(mca_coll_strata_request_t *r)
{
    int rc;
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.super.req_complete = REQUEST_PENDING;
    r->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    if (NULL != r->core) {
        rc = mca_coll_strata_packing_pack(&r->packing);
        if (MPI_SUCCESS != rc) {
            finish(r, rc);   /* before the call starts: nothing reached the peers */
            return rc;
        }
        return STRATA_OK == strata_request_start(r->core) ? MPI_SUCCESS : MPI_ERR_REQUEST;
    }
    if (NULL != r->inner && OMPI_REQUEST_NOOP == r->inner->req_type) {
        /* The previous component had nothing to move: its persistent no-op request has
         * no req_start (MPI_Start only marks it). */
        finish(r, MPI_SUCCESS);
        return MPI_SUCCESS;
    }
    if (NULL != r->inner) {
        if (r->staged && MPI_SUCCESS != mca_coll_strata_pair_refresh(&r->stage)) {
            finish(r, MPI_ERR_INTERN);
            return MPI_ERR_INTERN;
        }
        r->inner->req_complete_cb = NULL;
        rc = r->inner->req_start(1, &r->inner);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
        return ompi_request_set_callback(r->inner, inner_done, r);
    }
    finish(r, MPI_SUCCESS);   /* nothing to move */
    return MPI_SUCCESS;
}

static int request_start(size_t count, ompi_request_t **requests)
{
    size_t i;
    for (i = 0; i < count; ++i) {
        int rc = start_one((mca_coll_strata_request_t *) requests[i]);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
    }
    return MPI_SUCCESS;
}

mca_coll_strata_request_t *mca_coll_strata_nb_new(mca_coll_strata_module_t *m, const char *name, int persistent)
{
    mca_coll_strata_request_t *r = OBJ_NEW(mca_coll_strata_request_t);
    if (NULL == r) {
        return NULL;
    }
    OMPI_REQUEST_INIT(&r->super.super, persistent);
    r->super.super.req_type = OMPI_REQUEST_COLL;
    r->super.super.req_mpi_object.comm = m->comm;
    r->super.super.req_free = request_free;
    r->super.super.req_cancel = request_cancel;
    r->super.super.req_start = request_start;
    r->super.super.req_status._cancelled = 0;
    r->m = m;
    r->name = name;
    r->how.persistent = persistent;
    r->how.internal = mca_coll_strata_entered_internal();
    r->how.complete = core_done;
    r->how.ctx = r;
    OBJ_RETAIN(m->comm);   /* the team must outlive the call */
    if (!progress_registered) {
        start_progress();
    }
    return r;
}

/* Keeps the call as the application made it (hand_back_queued). */
void mca_coll_strata_nb_keep(mca_coll_strata_request_t *r, const mca_coll_strata_replay_t *call)
{
    mca_coll_strata_replay_t *a;
    if (NULL == r) {
        return;
    }
    a = &r->replay;
    *a = *call;
    if (MPI_IN_PLACE == a->sbuf) {
        a->sdt = NULL;   /* ignored by MPI, and may be anything */
    }
    OBJ_RETAIN(a->rdt);
    if (NULL != a->sdt) {
        OBJ_RETAIN(a->sdt);
    }
    if (NULL != a->op) {
        OBJ_RETAIN(a->op);
    }
}

/* An MPI variant strata serves with another core collective: its log line names it. */
void mca_coll_strata_nb_name_variant(mca_coll_strata_request_t *r, const char *variant, strata_coll_t coll,
                                     size_t bytes)
{
    if (NULL != r) {
        r->variant = variant;
        r->core_coll = coll;
        r->variant_bytes = bytes;
    }
}

/* After the core was asked: 1 when strata took the call (*rc: the MPI code, *request
 * set on success), 0 when it handed it back (the request is let go). */
int mca_coll_strata_nb_taken(mca_coll_strata_request_t *r, strata_status_t st, ompi_request_t **request, int *rc)
{
    int persistent = r->how.persistent;
    if (STRATA_FALLBACK == st) {
        release(r);
        return 0;
    }
    if (STRATA_OK != st) {
        *rc = mca_coll_strata_status_to_mpi(st, r->m, r->name);
        release(r);
        return 1;
    }
    *request = &r->super.super;
    *rc = MPI_SUCCESS;
    if (persistent) {
        return 1;   /* inactive until MPI_Start */
    }
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    if (NULL == r->core) {
        finish(r, MPI_SUCCESS);   /* nothing to move */
    }
    return 1;
}

/* Why strata does not take nonblocking calls in this process at all (NULL: it may). */
const char *mca_coll_strata_nb_refused(void)
{
    return mca_coll_strata_nbc_request_fits() ? NULL : "this Open MPI's nonblocking collective request is larger "
                                                       "than strata's (nonblocking calls go to the previous component)";
}

/* The previous component's request on this rank's buffers, staged through host memory
 * where they are device memory. staged: the regions were staged (p). */
int mca_coll_strata_nb_wrap(mca_coll_strata_module_t *m, const char *name, int persistent, mca_coll_strata_pair_t *p,
                            int copy_back, int rc, ompi_request_t *inner, ompi_request_t **request)
{
    mca_coll_strata_request_t *r;
    if (MPI_SUCCESS != rc) {
        (void) mca_coll_strata_pair_out(p, 0, rc);
        return rc;
    }
    r = mca_coll_strata_nb_new(m, name, persistent);
    if (NULL == r) {
        (void) mca_coll_strata_pair_out(p, 0, rc);
        return MPI_ERR_NO_MEM;   /* the previous component's request is left to finish */
    }
    r->inner = inner;
    r->stage = *p;
    r->staged = 1;
    r->copy_back = copy_back;
    *request = &r->super.super;
    if (persistent) {
        return MPI_SUCCESS;
    }
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    return ompi_request_set_callback(inner, inner_done, r);
}

/* Stages this rank's device regions for the previous component; 0 when there is
 * nothing to stage (host buffers: call it directly). */
int mca_coll_strata_nb_stage(mca_coll_strata_pair_t *p, const char *name, const void *sbuf, ptrdiff_t slo,
                             size_t slen, void *rbuf, ptrdiff_t rlo, size_t rlen, int *rc)
{
    int sdev = MPI_IN_PLACE != sbuf && mca_coll_strata_is_device(sbuf), rdev = mca_coll_strata_is_device(rbuf);
    if (!sdev && !rdev) {
        return 0;
    }
    mca_coll_strata_say_staging(name);
    *rc = mca_coll_strata_pair_in(p, sbuf, slo, slen, rbuf, rlo, rlen);
    return 1;
}

int mca_coll_strata_nb_local_failure(mca_coll_strata_request_t *r, strata_coll_t coll, strata_status_t st,
                                     const char *why, size_t call_bytes, strata_dtype_t sdt, strata_op_t sop,
                                     ompi_request_t **request, int *rc)
{
    strata_status_t failed = strata_ifail_call(r->m->team, coll, st, why, call_bytes, sdt, sop, &r->how, &r->core);
    return mca_coll_strata_nb_taken(r, failed, request, rc);
}
