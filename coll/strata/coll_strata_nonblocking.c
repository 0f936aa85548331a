/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_nonblocking.c - MPI_I<collective> and the persistent <collective>_init
 * entry points, and the requests they return.
 *
 * strata serves a nonblocking call on a communicator its first blocking call has set
 * up (setup agrees among all ranks, which a nonblocking call must not wait for): the
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
#include "coll_strata.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "strata_device.h"

/* ---------------------------------------------------------------- requests */

/* A region of a user buffer laid out with gaps, and its packed copy. */
typedef struct layout {
    void *user;
    int count;
    struct ompi_datatype_t *dt;
    char *packed;
} layout_t;

/* A call as the application made it, for the core to hand back after it queued it
 * (STRATA_FALLBACK at completion: a team whose setup ran in steps decides its
 * nonblocking calls at the head of its queue, src/api.cc): then it is started in the
 * previous component on the team's own communicator, which only strata uses, so that
 * such calls start there in the queue's order, the same on every rank, whatever the
 * application started on the communicator meanwhile. */
typedef enum {
    RE_NONE, RE_ALLREDUCE, RE_REDUCE, RE_REDUCE_SCATTER, RE_REDUCE_SCATTER_BLOCK, RE_BCAST, RE_ALLGATHER,
    RE_ALLGATHERV, RE_ALLTOALL, RE_ALLTOALLV
} replay_kind_t;

typedef struct replay {
    replay_kind_t kind;
    const void *sbuf;
    void *rbuf;
    int scount, rcount, root;
    const int *scounts, *sdisps, *rcounts, *rdisps;   /* MPI keeps them valid until completion */
    struct ompi_datatype_t *sdt, *rdt;                /* retained */
    struct ompi_op_t *op;                             /* retained */
} replay_t;

/* Starts as an ompi_coll_base_nbc_request_t (coll_strata_compat.h): the MPI layer
 * writes retained datatypes and ops after ompi_request_t. */
typedef struct mca_coll_strata_request_t {
    mca_coll_strata_nbc_request_t super;
    mca_coll_strata_module_t *m;
    const char *name;
    const char *variant;             /* allgatherv, reduce_scatter_block, alltoallv: logged by name */
    strata_coll_t core_coll;         /* the core collective that serves the variant */
    size_t variant_bytes;
    strata_start_t how;              /* ctx = this request */
    strata_request_t *core;          /* strata serves it (NULL: nothing to do) */
    ompi_request_t *inner;           /* or the previous component does, on staged buffers */
    mca_coll_strata_pair_t stage;
    int staged, copy_back;
    layout_t *pack, *unpack;         /* packed at each start / unpacked at completion */
    int npack, nunpack;
    char **mem;                      /* packed copies, freed with the request */
    int nmem;
    replay_t replay;                 /* the call as the application made it */
} mca_coll_strata_request_t;

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
    r->pack = r->unpack = NULL;
    r->npack = r->nunpack = 0;
    r->mem = NULL;
    r->nmem = 0;
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
    int i;
    if (NULL != r->core) {
        (void) strata_request_free(r->core);
    }
    if (NULL != r->inner && &ompi_request_empty != r->inner && MPI_REQUEST_NULL != r->inner) {
        (void) ompi_request_free(&r->inner);
    }
    if (r->staged) {
        (void) mca_coll_strata_pair_out(&r->stage, 0, MPI_SUCCESS);
    }
    for (i = 0; i < r->nmem; ++i) {
        free(r->mem[i]);
    }
    free(r->mem);
    for (i = 0; i < r->npack; ++i) {
        OBJ_RELEASE(r->pack[i].dt);
    }
    for (i = 0; i < r->nunpack; ++i) {
        OBJ_RELEASE(r->unpack[i].dt);
    }
    free(r->pack);
    free(r->unpack);
    if (RE_NONE != r->replay.kind) {
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

/* The regions of this rank's buffers the kept call covers (from the buffer pointers). */
static void replay_spans(const mca_coll_strata_request_t *r, ptrdiff_t *slo, size_t *slen, ptrdiff_t *rlo,
                         size_t *rlen)
{
    const replay_t *a = &r->replay;
    const int n = ompi_comm_size(r->m->comm), me = ompi_comm_rank(r->m->comm);
    struct ompi_datatype_t *sdt = NULL != a->sdt ? a->sdt : a->rdt;
    size_t total = 0;
    int i;
    *slo = *rlo = 0;
    *slen = *rlen = 0;
    switch (a->kind) {
    case RE_ALLREDUCE:
    case RE_REDUCE:
        mca_coll_strata_span(a->rdt, (size_t) a->rcount, slo, slen);
        mca_coll_strata_span(a->rdt, (size_t) a->rcount, rlo, rlen);
        break;
    case RE_BCAST:
        mca_coll_strata_span(a->rdt, (size_t) a->rcount, rlo, rlen);
        break;
    case RE_REDUCE_SCATTER_BLOCK:
    case RE_REDUCE_SCATTER:
        for (i = 0; i < n; ++i) total += (size_t) (RE_REDUCE_SCATTER == a->kind ? a->rcounts[i] : a->rcount);
        mca_coll_strata_span(a->rdt, total, slo, slen);
        if (MPI_IN_PLACE == a->sbuf) {   /* the receive buffer holds the whole input */
            *rlo = *slo;
            *rlen = *slen;
        } else {
            mca_coll_strata_span(a->rdt, (size_t) (RE_REDUCE_SCATTER == a->kind ? a->rcounts[me] : a->rcount), rlo,
                                 rlen);
        }
        break;
    case RE_ALLGATHER:
        mca_coll_strata_span(sdt, (size_t) a->scount, slo, slen);
        mca_coll_strata_span(a->rdt, (size_t) a->rcount * (size_t) n, rlo, rlen);
        break;
    case RE_ALLGATHERV:
        mca_coll_strata_span(sdt, (size_t) a->scount, slo, slen);
        mca_coll_strata_span_blocks(a->rdt, n, a->rcounts, a->rdisps, rlo, rlen);
        break;
    case RE_ALLTOALL:
        mca_coll_strata_span(sdt, (size_t) a->scount * (size_t) n, slo, slen);
        mca_coll_strata_span(a->rdt, (size_t) a->rcount * (size_t) n, rlo, rlen);
        break;
    case RE_ALLTOALLV:
        if (MPI_IN_PLACE != a->sbuf) {
            mca_coll_strata_span_blocks(sdt, n, a->scounts, a->sdisps, slo, slen);
        }
        mca_coll_strata_span_blocks(a->rdt, n, a->rcounts, a->rdisps, rlo, rlen);
        break;
    default:
        break;
    }
}

/* The previous component's nonblocking entry on comm, for the call kept in r, on the
 * buffers sb and rb (the application's, or their host copies). */
static int replay_start(mca_coll_strata_request_t *r, const void *sb, void *rb, struct ompi_communicator_t *comm,
                        ompi_request_t **inner)
{
    replay_t kept = r->replay, *a = &kept;
    a->sbuf = sb;
    a->rbuf = rb;
    mca_coll_base_comm_coll_t *c = comm->c_coll;
    struct ompi_datatype_t *sdt = NULL != a->sdt ? a->sdt : a->rdt;
    switch (a->kind) {
    case RE_ALLREDUCE:
        return c->coll_iallreduce(a->sbuf, a->rbuf, a->rcount, a->rdt, a->op, comm, inner, c->coll_iallreduce_module);
    case RE_REDUCE:
        return c->coll_ireduce(a->sbuf, a->rbuf, a->rcount, a->rdt, a->op, a->root, comm, inner,
                               c->coll_ireduce_module);
    case RE_REDUCE_SCATTER:
        return c->coll_ireduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->rdt, a->op, comm, inner,
                                       c->coll_ireduce_scatter_module);
    case RE_REDUCE_SCATTER_BLOCK:
        return c->coll_ireduce_scatter_block(a->sbuf, a->rbuf, a->rcount, a->rdt, a->op, comm, inner,
                                             c->coll_ireduce_scatter_block_module);
    case RE_BCAST:
        return c->coll_ibcast(a->rbuf, a->rcount, a->rdt, a->root, comm, inner, c->coll_ibcast_module);
    case RE_ALLGATHER:
        return c->coll_iallgather(a->sbuf, a->scount, sdt, a->rbuf, a->rcount, a->rdt, comm, inner,
                                  c->coll_iallgather_module);
    case RE_ALLGATHERV:
        return c->coll_iallgatherv(a->sbuf, a->scount, sdt, a->rbuf, a->rcounts, a->rdisps, a->rdt, comm, inner,
                                   c->coll_iallgatherv_module);
    case RE_ALLTOALL:
        return c->coll_ialltoall(a->sbuf, a->scount, sdt, a->rbuf, a->rcount, a->rdt, comm, inner,
                                 c->coll_ialltoall_module);
    case RE_ALLTOALLV:
        return c->coll_ialltoallv(a->sbuf, a->scounts, a->sdisps, sdt, a->rbuf, a->rcounts, a->rdisps, a->rdt,
                                  comm, inner, c->coll_ialltoallv_module);
    default:
        return MPI_ERR_INTERN;
    }
}

/* The core handed back a call it had queued: the previous component runs it on the
 * team's own communicator (made by the setup that ran in steps), this rank's device
 * buffers staged through host memory around it (copied back when it completes). */
static void hand_back_queued(mca_coll_strata_request_t *r)
{
    const replay_t *a = &r->replay;
    ompi_request_t *inner = NULL;
    const void *sb = a->sbuf;
    void *rb = a->rbuf;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    int rc;
    if (RE_NONE == a->kind || NULL == r->m->wire) {
        opal_output(0, "coll:strata: %s on %s: handing the call back to the previous component failed: %s", r->name,
                    r->m->comm->c_name,
                    RE_NONE == a->kind ? "no record of its arguments" : "strata's own communicator could not be made");
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
        replay_spans(r, &slo, &slen, &rlo, &rlen);
        mca_coll_strata_say_staging(r->name);
        rc = mca_coll_strata_pair_in(&r->stage, a->sbuf, slo, slen, a->rbuf, rlo, rlen);
        if (MPI_SUCCESS != rc) {
            finish(r, rc);
            return;
        }
        r->staged = 1;
        r->copy_back = RE_REDUCE != a->kind || ompi_comm_rank(r->m->comm) == a->root;
        sb = r->stage.su;
        rb = r->stage.ru;
    }
    rc = replay_start(r, sb, rb, r->m->wire, &inner);
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
    int i, rc;
    if (STRATA_FALLBACK == st) {
        hand_back_queued(r);
        return;
    }
    rc = mca_coll_strata_status_to_mpi(st, r->m, r->name);
    if (STRATA_OK == st && NULL != r->variant) {   /* the MPI call by its own name, as blocking ones */
        mca_coll_strata_log_variant(r->m, r->core_coll, r->variant, r->variant_bytes,
                                    r->how.persistent ? ", persistent" : ", nonblocking");
    }
    for (i = 0; MPI_SUCCESS == rc && i < r->nunpack; ++i) {
        layout_t *l = &r->unpack[i];
        rc = mca_coll_strata_unpack(l->packed, l->user, l->count, l->dt);
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

static int run_packs(mca_coll_strata_request_t *r)
{
    int i, rc = MPI_SUCCESS;
    for (i = 0; MPI_SUCCESS == rc && i < r->npack; ++i) {
        layout_t *l = &r->pack[i];
        rc = mca_coll_strata_pack(l->user, l->count, l->dt, l->packed);
    }
    return rc;
}

/* Starts (again) what the request holds. */
static int start_one(mca_coll_strata_request_t *r)
{
    int rc;
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.super.req_complete = REQUEST_PENDING;
    r->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    if (NULL != r->core) {
        rc = run_packs(r);
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

static mca_coll_strata_request_t *request_new(mca_coll_strata_module_t *m, const char *name, int persistent)
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
static void keep_call(mca_coll_strata_request_t *r, replay_kind_t kind, const void *sbuf, void *rbuf, int scount,
                      int rcount, int root, const int *scounts, const int *sdisps, const int *rcounts,
                      const int *rdisps, struct ompi_datatype_t *sdt, struct ompi_datatype_t *rdt,
                      struct ompi_op_t *op)
{
    replay_t *a;
    if (NULL == r) {
        return;
    }
    a = &r->replay;
    if (MPI_IN_PLACE == sbuf) {
        sdt = NULL;   /* ignored by MPI, and may be anything */
    }
    a->kind = kind;
    a->sbuf = sbuf;
    a->rbuf = rbuf;
    a->scount = scount;
    a->rcount = rcount;
    a->root = root;
    a->scounts = scounts;
    a->sdisps = sdisps;
    a->rcounts = rcounts;
    a->rdisps = rdisps;
    a->sdt = sdt;
    a->rdt = rdt;
    a->op = op;
    OBJ_RETAIN(rdt);
    if (NULL != sdt) {
        OBJ_RETAIN(sdt);
    }
    if (NULL != op) {
        OBJ_RETAIN(op);
    }
}

/* An MPI variant strata serves with another core collective: its log line names it. */
static void name_variant(mca_coll_strata_request_t *r, const char *variant, strata_coll_t coll, size_t bytes)
{
    if (NULL != r) {
        r->variant = variant;
        r->core_coll = coll;
        r->variant_bytes = bytes;
    }
}

/* A packed copy of bytes (freed with the request); NULL when out of memory. */
static char *packed_mem(mca_coll_strata_request_t *r, size_t bytes)
{
    char **mem = realloc(r->mem, (size_t) (r->nmem + 1) * sizeof *mem);
    if (NULL == mem) {
        return NULL;
    }
    r->mem = mem;
    mem[r->nmem] = malloc(bytes > 0 ? bytes : 1);
    return mem[r->nmem] ? mem[r->nmem++] : NULL;
}

static int add_layout(mca_coll_strata_request_t *r, int at_start, void *user, int count,
                      struct ompi_datatype_t *dt, char *packed)
{
    layout_t **list = at_start ? &r->pack : &r->unpack;
    int *n = at_start ? &r->npack : &r->nunpack;
    layout_t *l = realloc(*list, (size_t) (*n + 1) * sizeof *l);
    if (NULL == l) {
        return 0;
    }
    *list = l;
    l[*n].user = user;
    l[*n].count = count;
    l[*n].dt = dt;
    l[*n].packed = packed;
    ++*n;
    OBJ_RETAIN(dt);   /* a persistent call's may be freed before its starts (MPI allows it) */
    return 1;
}

/* count elements of dt at buf, as the core sees them: buf itself when they form one
 * gap-free block, else a packed copy (packed at each start when in, unpacked at the
 * end when out). NULL when out of memory. */
static void *as_bytes(mca_coll_strata_request_t *r, const void *buf, int count, struct ompi_datatype_t *dt,
                      int in, int out)
{
    size_t bytes = 0, size = 0;
    char *p;
    if (NULL == mca_coll_strata_check_bytes(dt, count, &bytes) || NULL == buf) {
        return (void *) buf;
    }
    ompi_datatype_type_size(dt, &size);
    p = packed_mem(r, size * (size_t) count);
    if (NULL == p || (in && !add_layout(r, 1, (void *) buf, count, dt, p)) ||
        (out && !add_layout(r, 0, (void *) buf, count, dt, p))) {
        return NULL;
    }
    return p;
}

/* After the core was asked: 1 when strata took the call (*rc: the MPI code, *request
 * set on success), 0 when it handed it back (the request is let go). */
static int taken(mca_coll_strata_request_t *r, strata_status_t st, ompi_request_t **request, int *rc)
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
static const char *no_nonblocking(void)
{
    return mca_coll_strata_nbc_request_fits() ? NULL : "this Open MPI's nonblocking collective request is larger "
                                                       "than strata's (nonblocking calls go to the previous component)";
}

/* The previous component's request on this rank's buffers, staged through host memory
 * where they are device memory. staged: the regions were staged (p). */
static int wrap(mca_coll_strata_module_t *m, const char *name, int persistent, mca_coll_strata_pair_t *p,
                int copy_back, int rc, ompi_request_t *inner, ompi_request_t **request)
{
    mca_coll_strata_request_t *r;
    if (MPI_SUCCESS != rc) {
        (void) mca_coll_strata_pair_out(p, 0, rc);
        return rc;
    }
    r = request_new(m, name, persistent);
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
static int stage(mca_coll_strata_pair_t *p, const char *name, const void *sbuf, ptrdiff_t slo, size_t slen,
                 void *rbuf, ptrdiff_t rlo, size_t rlen, int *rc)
{
    int sdev = MPI_IN_PLACE != sbuf && mca_coll_strata_is_device(sbuf), rdev = mca_coll_strata_is_device(rbuf);
    if (!sdev && !rdev) {
        return 0;
    }
    mca_coll_strata_say_staging(name);
    *rc = mca_coll_strata_pair_in(p, sbuf, slo, slen, rbuf, rlo, rlen);
    return 1;
}

#define M(module) ((mca_coll_strata_module_t *) (module))
#define NAME(persistent, coll) ((persistent) ? coll "_init" : "i" coll)
/* The previous component's nonblocking (or _init) entry, with args before the request. */
#define PREV(m, persistent, coll, ...)                                                                 \
    ((persistent) ? (m)->prev.coll##_init(__VA_ARGS__, (m)->comm, NULL, &inner, (m)->prev.coll##_init_module) \
                  : (m)->prev.i##coll(__VA_ARGS__, (m)->comm, &inner, (m)->prev.i##coll##_module))
#define PREV_DIRECT(m, persistent, coll, ...)                                                          \
    ((persistent) ? (m)->prev.coll##_init(__VA_ARGS__, (m)->comm, info, request, (m)->prev.coll##_init_module) \
                  : (m)->prev.i##coll(__VA_ARGS__, (m)->comm, request, (m)->prev.i##coll##_module))

/* ---------------------------------------------------------------- reductions */

/* A local failure this rank found before the core saw the call: its peers hear of it. */
static int local_failure(mca_coll_strata_request_t *r, strata_coll_t coll, strata_status_t st, const char *why,
                         size_t call_bytes, strata_dtype_t sdt, strata_op_t sop, ompi_request_t **request,
                         int *rc)
{
    return taken(r, strata_ifail_call(r->m->team, coll, st, why, call_bytes, sdt, sop, &r->how, &r->core), request,
                 rc);
}

/* reduce to root, or allreduce (root < 0). */
static int reduce_nb(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf, int count,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root, int persistent,
                     struct ompi_info_t *info, ompi_request_t **request)
{
    const int all = root < 0, is_root = all || ompi_comm_rank(m->comm) == root;
    const strata_coll_t coll = all ? STRATA_COLL_ALLREDUCE : STRATA_COLL_REDUCE;
    const char *name = all ? NAME(persistent, "allreduce") : NAME(persistent, "reduce"), *why = no_nonblocking();
    size_t bytes = 0, per = 1;
    strata_dtype_t sdt = STRATA_BYTE;
    strata_op_t sop = STRATA_OP_SUM;
    int packed = 0, rc = MPI_SUCCESS;
    struct ompi_datatype_t *basic = dtype;
    strata_status_t st;
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
        why = mca_coll_strata_reduction_type(dtype, op, &sdt, &sop, &per, &packed, &basic);
    }
    if (NULL == why) {
        mca_coll_strata_request_t *r = request_new(m, name, persistent);
        const void *s = sbuf;
        void *d = rbuf;
        if (NULL == r) {
            return MPI_ERR_NO_MEM;
        }
        keep_call(r, all ? RE_ALLREDUCE : RE_REDUCE, sbuf, rbuf, 0, count, root, NULL, NULL, NULL, NULL, NULL,
                  dtype, op);
        if (packed) {
            s = as_bytes(r, MPI_IN_PLACE == sbuf ? rbuf : sbuf, count, dtype, 1, 0);
            d = is_root ? as_bytes(r, rbuf, count, dtype, 0, 1) : NULL;
            if (NULL == s || (is_root && NULL == d)) {
                return local_failure(r, coll, STRATA_ERR_NOMEM, "no memory to pack the datatype", bytes,
                                     sdt, sop, request, &rc) ? rc : MPI_ERR_NO_MEM;
            }
            if (!persistent && MPI_SUCCESS != run_packs(r)) {
                return local_failure(r, coll, STRATA_ERR_ARG, "packing the datatype failed", bytes, sdt,
                                     sop, request, &rc) ? rc : MPI_ERR_INTERN;
            }
        }
        st = all ? strata_iallreduce(m->team, MCA_COLL_STRATA_SBUF(s), d, (size_t) count * per, sdt, sop, &r->how,
                                     &r->core)
                 : strata_ireduce(m->team, MCA_COLL_STRATA_SBUF(s), d, (size_t) count * per, sdt, sop, root, &r->how,
                                  &r->core);
        if (taken(r, st, request, &rc)) {
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    mca_coll_strata_log_fallback(m, name, bytes, why);
    mca_coll_strata_span(dtype, (size_t) count, &lo, &len);
    if (!stage(&p, name, sbuf, lo, len, is_root ? rbuf : NULL, lo, is_root ? len : 0, &rc)) {
        return all ? PREV_DIRECT(m, persistent, allreduce, sbuf, rbuf, count, dtype, op)
                   : PREV_DIRECT(m, persistent, reduce, sbuf, rbuf, count, dtype, op, root);
    }
    if (MPI_SUCCESS == rc) {
        rc = all ? PREV(m, persistent, allreduce, p.su, p.ru, count, dtype, op)
                 : PREV(m, persistent, reduce, p.su, is_root ? p.ru : rbuf, count, dtype, op, root);
    }
    return wrap(m, name, persistent, &p, is_root, rc, inner, request);
}

int mca_coll_strata_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_nb(M(module), sbuf, rbuf, count, dtype, op, -1, 0, NULL, request);
}

int mca_coll_strata_allreduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_nb(M(module), sbuf, rbuf, count, dtype, op, -1, 1, info, request);
}

int mca_coll_strata_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_nb(M(module), sbuf, rbuf, count, dtype, op, root, 0, NULL, request);
}

int mca_coll_strata_reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_nb(M(module), sbuf, rbuf, count, dtype, op, root, 1, info, request);
}

/* reduce_scatter and reduce_scatter_block: rcounts[i] elements to rank i (block: rcount
 * each, rcounts NULL). */
static int reduce_scatter_nb(mca_coll_strata_module_t *m, const char *name, const void *sbuf, void *rbuf,
                             const int *rcounts, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             int persistent, struct ompi_info_t *info, ompi_request_t **request)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm), mine = rcounts ? rcounts[me] : rcount;
    const char *why = no_nonblocking();
    size_t size = 0, total = 0, per = 1;
    size_t *counts = malloc((size_t) n * sizeof(size_t));
    strata_dtype_t sdt = STRATA_BYTE;
    strata_op_t sop = STRATA_OP_SUM;
    int i, packed = 0, rc = MPI_SUCCESS;
    struct ompi_datatype_t *basic = dtype;
    mca_coll_strata_pair_t p;
    ptrdiff_t slo, rlo;
    size_t slen, rlen;
    ompi_request_t *inner = NULL;

    if (NULL == counts) {
        return MPI_ERR_NO_MEM;   /* before anything: this rank only (as the blocking call's malloc) */
    }
    ompi_datatype_type_size(dtype, &size);
    for (i = 0; i < n; ++i) {
        counts[i] = (size_t) (rcounts ? rcounts[i] : rcount);
        total += counts[i];
    }
    if (NULL == why && 0 == total * size) {
        why = "nothing to move";
    }
    if (NULL == why) {
        why = mca_coll_strata_reduction_type(dtype, op, &sdt, &sop, &per, &packed, &basic);
    }
    if (NULL == why) {
        mca_coll_strata_request_t *r = request_new(m, name, persistent);
        name_variant(r, NULL == rcounts ? "reduce_scatter_block" : NULL, STRATA_COLL_REDUCE_SCATTER, total * size);
        keep_call(r, NULL == rcounts ? RE_REDUCE_SCATTER_BLOCK : RE_REDUCE_SCATTER, sbuf, rbuf, 0, rcount, 0, NULL,
                  NULL, rcounts, NULL, NULL, dtype, op);
        const void *s = sbuf;
        void *d = rbuf;
        if (NULL == r) {
            free(counts);
            return MPI_ERR_NO_MEM;
        }
        if (packed) {
            s = as_bytes(r, MPI_IN_PLACE == sbuf ? rbuf : sbuf, (int) total, dtype, 1, 0);
            d = as_bytes(r, rbuf, mine, dtype, 0, 1);
            for (i = 0; i < n; ++i) {
                counts[i] *= per;
            }
            if (NULL == s || NULL == d || (!persistent && MPI_SUCCESS != run_packs(r))) {
                free(counts);
                return local_failure(r, STRATA_COLL_REDUCE_SCATTER, STRATA_ERR_NOMEM, "packing the datatype failed",
                                     total * size, sdt, sop, request, &rc) ? rc : MPI_ERR_NO_MEM;
            }
        }
        if (taken(r, strata_ireduce_scatter(m->team, MCA_COLL_STRATA_SBUF(s), d, counts, sdt, sop, &r->how, &r->core),
                  request, &rc)) {
            free(counts);
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    free(counts);
    mca_coll_strata_log_fallback(m, name, total * size, why);
    mca_coll_strata_span(dtype, total, &slo, &slen);
    mca_coll_strata_span(dtype, MPI_IN_PLACE == sbuf ? total : (size_t) mine, &rlo, &rlen);
    if (!stage(&p, name, sbuf, slo, slen, rbuf, rlo, rlen, &rc)) {
        return rcounts ? PREV_DIRECT(m, persistent, reduce_scatter, sbuf, rbuf, rcounts, dtype, op)
                       : PREV_DIRECT(m, persistent, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op);
    }
    if (MPI_SUCCESS == rc) {
        rc = rcounts ? PREV(m, persistent, reduce_scatter, p.su, p.ru, rcounts, dtype, op)
                     : PREV(m, persistent, reduce_scatter_block, p.su, p.ru, rcount, dtype, op);
    }
    return wrap(m, name, persistent, &p, 1, rc, inner, request);
}

int mca_coll_strata_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_nb(M(module), "ireduce_scatter", sbuf, rbuf, rcounts, 0, dtype, op, 0, NULL, request);
}

int mca_coll_strata_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_nb(M(module), "reduce_scatter_init", sbuf, rbuf, rcounts, 0, dtype, op, 1, info, request);
}

int mca_coll_strata_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_nb(M(module), "ireduce_scatter_block", sbuf, rbuf, NULL, rcount, dtype, op, 0, NULL,
                             request);
}

int mca_coll_strata_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return reduce_scatter_nb(M(module), "reduce_scatter_block_init", sbuf, rbuf, NULL, rcount, dtype, op, 1, info,
                             request);
}

/* ---------------------------------------------------------------- data movement */

static int bcast_nb(mca_coll_strata_module_t *m, void *buf, int count, struct ompi_datatype_t *dtype, int root,
                    int persistent, struct ompi_info_t *info, ompi_request_t **request)
{
    const char *name = NAME(persistent, "bcast"), *why = no_nonblocking();
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
        mca_coll_strata_request_t *r = request_new(m, name, persistent);
        void *b;
        if (NULL == r) {
            return MPI_ERR_NO_MEM;
        }
        keep_call(r, RE_BCAST, NULL, buf, 0, count, root, NULL, NULL, NULL, NULL, NULL, dtype, NULL);
        b = as_bytes(r, buf, count, dtype, is_root, !is_root);
        if (NULL == b || (!persistent && MPI_SUCCESS != run_packs(r))) {
            return local_failure(r, STRATA_COLL_BCAST, STRATA_ERR_NOMEM, "packing the datatype failed", bytes,
                                 STRATA_BYTE, STRATA_OP_SUM, request, &rc) ? rc : MPI_ERR_NO_MEM;
        }
        if (taken(r, strata_ibcast(m->team, b, bytes, root, &r->how, &r->core), request, &rc)) {
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    mca_coll_strata_log_fallback(m, name, bytes, why);
    mca_coll_strata_span(dtype, (size_t) count, &lo, &len);
    if (!stage(&p, name, MPI_IN_PLACE, 0, 0, buf, lo, len, &rc)) {
        return PREV_DIRECT(m, persistent, bcast, buf, count, dtype, root);
    }
    if (MPI_SUCCESS == rc) {
        rc = PREV(m, persistent, bcast, p.ru, count, dtype, root);
    }
    return wrap(m, name, persistent, &p, !is_root, rc, inner, request);
}

int mca_coll_strata_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return bcast_nb(M(module), buf, count, dtype, root, 0, NULL, request);
}

int mca_coll_strata_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return bcast_nb(M(module), buf, count, dtype, root, 1, info, request);
}

/* allgather(v): rank i's block is rcounts[i] rdtype elements at disps[i] extents of
 * rbuf (allgather: rcount each, back to back; rcounts NULL). */
static int allgather_nb(mca_coll_strata_module_t *m, const char *name, const void *sbuf, int scount,
                        struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, int rcount,
                        const int *disps, struct ompi_datatype_t *rdtype, int persistent, struct ompi_info_t *info,
                        ompi_request_t **request)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    const char *why = no_nonblocking();
    size_t size = 0, ssize = 0, total = 0;
    size_t *bytes = malloc(2 * (size_t) n * sizeof(size_t)), *displs;
    ptrdiff_t lb = 0, extent = 0, slo, rlo;
    size_t slen, rlen;
    int i, rc = MPI_SUCCESS;
    mca_coll_strata_pair_t p;
    ompi_request_t *inner = NULL;
#define RCOUNT(i) (rcounts ? rcounts[i] : rcount)
#define RDISP(i) (rcounts ? disps[i] : (i) * rcount)

    if (NULL == bytes) {
        return MPI_ERR_NO_MEM;
    }
    displs = bytes + n;
    ompi_datatype_type_size(rdtype, &size);
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    for (i = 0; i < n; ++i) {
        bytes[i] = (size_t) RCOUNT(i) * size;
        total += bytes[i];
    }
    if (NULL == why && 0 == total) {
        why = "nothing to move";
    }
    if (NULL == why) {
        mca_coll_strata_request_t *r = request_new(m, name, persistent);
        name_variant(r, NULL != rcounts ? "allgatherv" : NULL, STRATA_COLL_ALLGATHER, total);
        keep_call(r, NULL != rcounts ? RE_ALLGATHERV : RE_ALLGATHER, sbuf, rbuf, scount, rcount, 0, NULL, NULL,
                  rcounts, disps, sdtype, rdtype, NULL);
        const char *bad = NULL;
        const void *s = STRATA_IN_PLACE;
        char *base = (char *) rbuf;
        int gaps = 0;
        if (NULL == r) {
            free(bytes);
            return MPI_ERR_NO_MEM;
        }
        for (i = 0; i < n; ++i) {
            size_t b;
            gaps = gaps || (RCOUNT(i) > 0 && NULL != mca_coll_strata_check_bytes(rdtype, RCOUNT(i), &b));
        }
        if (gaps) {   /* blocks back to back in a packed copy, unpacked one by one */
            size_t at = 0;
            base = packed_mem(r, total);
            for (i = 0; NULL != base && i < n; ++i) {
                displs[i] = at;
                if (!add_layout(r, 0, (char *) rbuf + (ptrdiff_t) RDISP(i) * extent, RCOUNT(i), rdtype, base + at)) {
                    base = NULL;
                }
                at += bytes[i];
            }
            if (NULL != base && MPI_IN_PLACE == sbuf &&
                !add_layout(r, 1, (char *) rbuf + (ptrdiff_t) RDISP(me) * extent, RCOUNT(me), rdtype,
                            base + displs[me])) {
                base = NULL;
            }
            bad = NULL == base ? "no memory to pack the datatype" : NULL;
        } else {
            for (i = 0; i < n; ++i) {
                displs[i] = (size_t) ((ptrdiff_t) RDISP(i) * extent);
            }
        }
        if (NULL == bad && MPI_IN_PLACE != sbuf) {
            ompi_datatype_type_size(sdtype, &ssize);
            if (ssize * (size_t) scount != bytes[me]) {
                bad = "the send and receive sizes of this rank differ";
            } else if (NULL == (s = as_bytes(r, sbuf, scount, sdtype, 1, 0)) && bytes[me] > 0) {
                bad = "no memory to pack the datatype";
            }
        }
        if (NULL == bad && !persistent && MPI_SUCCESS != run_packs(r)) {
            bad = "packing the datatype failed";
        }
        if (NULL != bad) {
            free(bytes);
            return local_failure(r, STRATA_COLL_ALLGATHER, 0 == strcmp(bad, "the send and receive sizes of this rank differ")
                                                              ? STRATA_ERR_TRUNCATE : STRATA_ERR_NOMEM,
                                 bad, total, STRATA_BYTE, STRATA_OP_SUM, request, &rc) ? rc : MPI_ERR_NO_MEM;
        }
        if (taken(r, strata_iallgatherv(m->team, s, base, bytes, displs, &r->how, &r->core), request, &rc)) {
            free(bytes);
            return rc;
        }
        why = mca_coll_strata_why_core_declined;
    }
    free(bytes);
    mca_coll_strata_log_fallback(m, name, total, why);
    mca_coll_strata_span(sdtype, (size_t) scount, &slo, &slen);
    if (rcounts) {
        mca_coll_strata_span_blocks(rdtype, n, rcounts, disps, &rlo, &rlen);
    } else {
        mca_coll_strata_span(rdtype, (size_t) rcount * (size_t) n, &rlo, &rlen);
    }
    if (!stage(&p, name, sbuf, slo, slen, rbuf, rlo, rlen, &rc)) {
        return rcounts ? PREV_DIRECT(m, persistent, allgatherv, sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype)
                       : PREV_DIRECT(m, persistent, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    }
    if (MPI_SUCCESS == rc) {
        rc = rcounts ? PREV(m, persistent, allgatherv, p.su, scount, sdtype, p.ru, rcounts, disps, rdtype)
                     : PREV(m, persistent, allgather, p.su, scount, sdtype, p.ru, rcount, rdtype);
    }
    return wrap(m, name, persistent, &p, 1, rc, inner, request);
#undef RCOUNT
#undef RDISP
}

int mca_coll_strata_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                               int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return allgather_nb(M(module), "iallgather", sbuf, scount, sdtype, rbuf, NULL, rcount, NULL, rdtype, 0, NULL,
                        request);
}

int mca_coll_strata_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                   int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                   struct ompi_info_t *info, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return allgather_nb(M(module), "allgather_init", sbuf, scount, sdtype, rbuf, NULL, rcount, NULL, rdtype, 1, info,
                        request);
}

int mca_coll_strata_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                const int *rcounts, const int *disps, struct ompi_datatype_t *rdtype,
                                struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return allgather_nb(M(module), "iallgatherv", sbuf, scount, sdtype, rbuf, rcounts, 0, disps, rdtype, 0, NULL,
                        request);
}

int mca_coll_strata_allgatherv_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                    const int *rcounts, const int *disps, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return allgather_nb(M(module), "allgatherv_init", sbuf, scount, sdtype, rbuf, rcounts, 0, disps, rdtype, 1, info,
                        request);
}

/* alltoall(v): the block for rank i is scounts[i] sdtype elements at sdisps[i] extents
 * of sbuf, the one from rank i rcounts[i] rdtype elements at rdisps[i] extents of
 * rbuf (alltoall: scount / rcount each, back to back; scounts and rcounts NULL). */
static int alltoall_nb(mca_coll_strata_module_t *m, const char *name, const void *sbuf, const int *scounts,
                       int scount, const int *sdisps, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, int rcount, const int *rdisps, struct ompi_datatype_t *rdtype,
                       int persistent, struct ompi_info_t *info, ompi_request_t **request)
{
    const int n = ompi_comm_size(m->comm), in_place = MPI_IN_PLACE == sbuf, uniform = NULL == rcounts;
    const char *why = no_nonblocking();
    size_t ssize = 0, rsize = 0, total = 0, stotal = 0;
    size_t *v = malloc(4 * (size_t) n * sizeof(size_t));
    ptrdiff_t lb = 0, sext = 0, rext = 0, slo = 0, rlo;
    size_t slen = 0, rlen;
    int i, rc = MPI_SUCCESS, gaps = 0;
    mca_coll_strata_pair_t p;
    ompi_request_t *inner = NULL;
#define SCOUNT(i) (in_place ? RCOUNT(i) : scounts ? scounts[i] : scount)
#define SDISP(i) (in_place ? RDISP(i) : scounts ? sdisps[i] : (i) * scount)
#define RCOUNT(i) (rcounts ? rcounts[i] : rcount)
#define RDISP(i) (rcounts ? rdisps[i] : (i) * rcount)

    if (NULL == v) {
        return MPI_ERR_NO_MEM;
    }
    if (in_place) {
        sdtype = rdtype;
    }
    ompi_datatype_type_size(sdtype, &ssize);
    ompi_datatype_type_size(rdtype, &rsize);
    ompi_datatype_get_extent(sdtype, &lb, &sext);
    ompi_datatype_get_extent(rdtype, &lb, &rext);
    for (i = 0; i < n; ++i) {
        size_t b;
        v[i] = (size_t) SCOUNT(i) * ssize;                      /* sbytes */
        v[n + i] = (size_t) ((ptrdiff_t) SDISP(i) * sext);      /* sdispls */
        v[2 * n + i] = (size_t) RCOUNT(i) * rsize;              /* rbytes */
        v[3 * n + i] = (size_t) ((ptrdiff_t) RDISP(i) * rext);  /* rdispls */
        total += v[2 * n + i];
        stotal += v[i];
        gaps = gaps || (SCOUNT(i) > 0 && NULL != mca_coll_strata_check_bytes(sdtype, SCOUNT(i), &b)) ||
               (RCOUNT(i) > 0 && NULL != mca_coll_strata_check_bytes(rdtype, RCOUNT(i), &b));
    }
    /* Plain alltoall moving nothing: the same on every rank. (alltoallv with nothing
     * for this rank still takes part.) */
    if (NULL == why && uniform && 0 == total) {
        why = "nothing to move";
    }
    if (NULL == why) {
        mca_coll_strata_request_t *r = request_new(m, name, persistent);
        name_variant(r, uniform ? NULL : "alltoallv", STRATA_COLL_ALLTOALL, total);
        keep_call(r, uniform ? RE_ALLTOALL : RE_ALLTOALLV, sbuf, rbuf, scount, rcount, 0, scounts, sdisps, rcounts,
                  rdisps, sdtype, rdtype, NULL);
        const char *bad = NULL;
        char *sb = (char *) sbuf, *rb = (char *) rbuf;
        if (NULL == r) {
            free(v);
            return MPI_ERR_NO_MEM;
        }
        if (uniform && !in_place && v[0] != v[2 * n]) {
            bad = "the send and receive sizes of this rank differ";
        } else if (gaps) {   /* every block packed back to back; unpacked one by one */
            size_t sat = 0, rat = 0;
            char *sp = in_place ? NULL : packed_mem(r, stotal), *rp = packed_mem(r, total);
            for (i = 0; NULL != rp && (in_place || NULL != sp) && i < n; ++i) {
                if ((!in_place && !add_layout(r, 1, (char *) sbuf + v[n + i], SCOUNT(i), sdtype, sp + sat)) ||
                    (in_place && !add_layout(r, 1, (char *) rbuf + v[3 * n + i], RCOUNT(i), rdtype, rp + rat)) ||
                    !add_layout(r, 0, (char *) rbuf + v[3 * n + i], RCOUNT(i), rdtype, rp + rat)) {
                    rp = NULL;
                    break;
                }
                v[n + i] = in_place ? rat : sat;
                v[3 * n + i] = rat;
                sat += v[i];
                rat += v[2 * n + i];
            }
            if (NULL == rp || (!in_place && NULL == sp)) {
                bad = "no memory to pack the datatype";
            }
            sb = in_place ? NULL : sp;
            rb = rp;
        }
        if (NULL == bad && !persistent && MPI_SUCCESS != run_packs(r)) {
            bad = "packing the datatype failed";
        }
        if (NULL != bad) {
            free(v);
            return local_failure(r, STRATA_COLL_ALLTOALL, 0 == strcmp(bad, "the send and receive sizes of this rank differ")
                                                             ? STRATA_ERR_TRUNCATE : STRATA_ERR_NOMEM,
                                 bad, uniform ? total : 0, STRATA_BYTE, STRATA_OP_SUM, request, &rc) ? rc
                                                                                                     : MPI_ERR_NO_MEM;
        }
        if (uniform) {
            rc = taken(r, strata_ialltoall(m->team, in_place ? STRATA_IN_PLACE : sb, rb, v[2 * n], &r->how, &r->core),
                       request, &rc) ? rc : -1;
        } else {
            rc = taken(r, strata_ialltoallv(m->team, in_place ? STRATA_IN_PLACE : sb, v, v + n, rb, v + 2 * n,
                                            v + 3 * n, &r->how, &r->core),
                       request, &rc) ? rc : -1;
        }
        if (-1 != rc) {
            free(v);
            return rc;
        }
        rc = MPI_SUCCESS;
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
    if (!stage(&p, name, sbuf, slo, slen, rbuf, rlo, rlen, &rc)) {
        return uniform ? PREV_DIRECT(m, persistent, alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype)
                       : PREV_DIRECT(m, persistent, alltoallv, sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps,
                                     rdtype);
    }
    if (MPI_SUCCESS == rc) {
        rc = uniform ? PREV(m, persistent, alltoall, p.su, scount, sdtype, p.ru, rcount, rdtype)
                     : PREV(m, persistent, alltoallv, p.su, scounts, sdisps, sdtype, p.ru, rcounts, rdisps, rdtype);
    }
    return wrap(m, name, persistent, &p, 1, rc, inner, request);
#undef SCOUNT
#undef SDISP
#undef RCOUNT
#undef RDISP
}

int mca_coll_strata_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                              int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return alltoall_nb(M(module), "ialltoall", sbuf, NULL, scount, NULL, sdtype, rbuf, NULL, rcount, NULL, rdtype, 0,
                       NULL, request);
}

int mca_coll_strata_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                  int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                  struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return alltoall_nb(M(module), "alltoall_init", sbuf, NULL, scount, NULL, sdtype, rbuf, NULL, rcount, NULL, rdtype,
                       1, info, request);
}

int mca_coll_strata_ialltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                               struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdisps,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return alltoall_nb(M(module), "ialltoallv", sbuf, scounts, 0, sdisps, sdtype, rbuf, rcounts, 0, rdisps, rdtype, 0,
                       NULL, request);
}

int mca_coll_strata_alltoallv_init(const void *sbuf, const int *scounts, const int *sdisps,
                                   struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                   const int *rdisps, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    (void) comm;
    return alltoall_nb(M(module), "alltoallv_init", sbuf, scounts, 0, sdisps, sdtype, rbuf, rcounts, 0, rdisps,
                       rdtype, 1, info, request);
}
