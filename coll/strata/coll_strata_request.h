/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_request.h - what the nonblocking and persistent entries of every
 * collective share (coll_strata_request.c): the Open MPI request strata returns, the
 * packed copies of datatypes laid out with gaps, the hand-back of a call the core
 * queued and then declined, and the previous component's request on staged buffers.
 *
 * A collective's file (coll_strata_<coll>.c) maps its MPI arguments and then, for a
 * nonblocking or persistent call:
 *   r = mca_coll_strata_nb_new(...); mca_coll_strata_nb_keep(r, &call as made);
 *   its one argument mapping (shared with the blocking entry) into r->packing;
 *   mca_coll_strata_nb_taken(r, strata_i<coll>(..., &r->how, &r->core), ...);
 * and where strata declines: log, stage (MCA_COLL_STRATA_NB_STAGE), the previous
 * component's entry (MCA_COLL_STRATA_NB_PREV), mca_coll_strata_nb_wrap.
 */
#ifndef MCA_COLL_STRATA_REQUEST_H
#define MCA_COLL_STRATA_REQUEST_H

#include "coll_strata.h"

#include "ompi/request/request.h"

BEGIN_C_DECLS

typedef struct mca_coll_strata_replay mca_coll_strata_replay_t;

/* What a collective's file tells the shared code about its calls, to hand one back
 * after the core queued it (STRATA_FALLBACK at completion: a team whose setup ran in
 * steps decides its nonblocking calls at the head of its queue, src/api.cc). */
typedef struct mca_coll_strata_replay_ops {
    /* The previous component's nonblocking entry on comm, for the call a (its buffers
     * the application's, or their host copies). */
    int (*start)(const mca_coll_strata_replay_t *a, struct ompi_communicator_t *comm, ompi_request_t **inner);
    /* The regions of this rank's buffers the call covers, from the buffer pointers
     * (n ranks, this one me). */
    void (*spans)(const mca_coll_strata_replay_t *a, int n, int me, ptrdiff_t *slo, size_t *slen, ptrdiff_t *rlo,
                  size_t *rlen);
    /* Only the root receives (reduce): elsewhere nothing is copied back. */
    int result_at_root_only;
} mca_coll_strata_replay_ops_t;

/* A call as the application made it (ops NULL: none kept). When handed back it is
 * started in the previous component on the team's own communicator, which only
 * strata uses, so that such calls start there in the queue's order, the same on
 * every rank, whatever the application started on the communicator meanwhile. */
struct mca_coll_strata_replay {
    const mca_coll_strata_replay_ops_t *ops;
    const void *sbuf;
    void *rbuf;
    int scount, rcount, root;
    const int *scounts, *sdisps, *rcounts, *rdisps;   /* MPI keeps them valid until completion */
    struct ompi_datatype_t *sdt, *rdt;                /* retained; sdt NULL with MPI_IN_PLACE */
    struct ompi_op_t *op;                             /* retained (reductions) */
};
/* The send datatype of a kept call (the receive one where MPI_IN_PLACE left none). */
#define MCA_COLL_STRATA_REPLAY_SDT(a) (NULL != (a)->sdt ? (a)->sdt : (a)->rdt)

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
    mca_coll_strata_packing_t packing;   /* packed at each start, unpacked at completion */
    mca_coll_strata_replay_t replay; /* the call as the application made it */
} mca_coll_strata_request_t;

/* A new request for the call name (persistent: an _init one); NULL when out of memory. */
mca_coll_strata_request_t *mca_coll_strata_nb_new(mca_coll_strata_module_t *m, const char *name, int persistent);
/* Keeps the call as the application made it (retains its datatypes and op). */
void mca_coll_strata_nb_keep(mca_coll_strata_request_t *r, const mca_coll_strata_replay_t *call);
/* An MPI variant strata serves with another core collective: its log line names it. */
void mca_coll_strata_nb_name_variant(mca_coll_strata_request_t *r, const char *variant, strata_coll_t coll,
                                     size_t bytes);
/* After the core was asked: 1 when strata took the call (*rc: the MPI code, *request
 * set on success), 0 when it handed it back (the request is let go). */
int mca_coll_strata_nb_taken(mca_coll_strata_request_t *r, strata_status_t st, ompi_request_t **request, int *rc);
/* A local failure this rank found before the core saw the call: its peers hear of it
 * (strata_ifail_call); as taken. */
int mca_coll_strata_nb_local_failure(mca_coll_strata_request_t *r, strata_coll_t coll, strata_status_t st,
                                     const char *why, size_t call_bytes, strata_dtype_t sdt, strata_op_t sop,
                                     ompi_request_t **request, int *rc);
/* Why strata does not take nonblocking calls in this process at all (NULL: it may). */
const char *mca_coll_strata_nb_refused(void);
/* Stages this rank's device regions for the previous component; 0 when there is
 * nothing to stage (host buffers: call it directly). */
int mca_coll_strata_nb_stage(mca_coll_strata_pair_t *p, const char *name, const void *sbuf, ptrdiff_t slo,
                             size_t slen, void *rbuf, ptrdiff_t rlo, size_t rlen, int *rc);
/* The previous component's request inner (rc: how starting it went) on the buffers
 * staged in p, wrapped in strata's, which copies the receive side back (copy_back). */
int mca_coll_strata_nb_wrap(mca_coll_strata_module_t *m, const char *name, int persistent, mca_coll_strata_pair_t *p,
                            int copy_back, int rc, ompi_request_t *inner, ompi_request_t **request);

#define MCA_COLL_STRATA_M(module) ((mca_coll_strata_module_t *) (module))
#define MCA_COLL_STRATA_NB_NAME(persistent, coll) ((persistent) ? coll "_init" : "i" coll)
/* The previous component's nonblocking (or _init) entry, with args before the request:
 * into the local ompi_request_t *inner (to wrap), or straight into request. */
#define MCA_COLL_STRATA_NB_PREV(m, persistent, coll, ...)                                                   \
    ((persistent) ? (m)->prev.coll##_init(__VA_ARGS__, (m)->comm, NULL, &inner, (m)->prev.coll##_init_module) \
                  : (m)->prev.i##coll(__VA_ARGS__, (m)->comm, &inner, (m)->prev.i##coll##_module))
#define MCA_COLL_STRATA_NB_PREV_DIRECT(m, persistent, coll, ...)                                            \
    ((persistent) ? (m)->prev.coll##_init(__VA_ARGS__, (m)->comm, info, request, (m)->prev.coll##_init_module) \
                  : (m)->prev.i##coll(__VA_ARGS__, (m)->comm, request, (m)->prev.i##coll##_module))

END_C_DECLS

#endif /* MCA_COLL_STRATA_REQUEST_H */
