/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strata.h - the C API of the strata core.
 *
 * The core never sees Open MPI: the glue (coll/strata) describes a communicator
 * with a rank, a size, a node key and a transport (point-to-point callbacks plus
 * two tiny collectives run by the module strata replaced). Everything here is
 * plain C so that the glue, which must be C, and the C++ core agree on one ABI.
 *
 * Ownership: a team is created and destroyed by the glue; buffers always belong
 * to the caller. Every function returns a strata_status_t; nothing throws.
 */
#ifndef STRATA_H
#define STRATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* strata's release: configure.ac's AC_INIT, which the build passes to every compile
 * (-DSTRATA_VERSION_STRING, Makefile.am); "unknown" in a program built without it. */
#ifdef STRATA_VERSION_STRING
#define STRATA_VERSION STRATA_VERSION_STRING
#else
#define STRATA_VERSION "unknown"
#endif

typedef enum strata_status {
    STRATA_OK = 0,
    STRATA_FALLBACK = 1,        /* nothing was done: hand the call to the previous module */
    STRATA_ERR_ARG = -1,        /* bad argument (message logged) */
    STRATA_ERR_NOMEM = -2,
    STRATA_ERR_SYS = -3,        /* errno-style failure (shm, mmap, ...) */
    STRATA_ERR_COMM = -4,       /* a transport callback failed */
    STRATA_ERR_UNSUPPORTED = -5,
    STRATA_ERR_DEVICE = -6,     /* CUDA driver / runtime failure */
    STRATA_ERR_INTERNAL = -7,
    STRATA_ERR_BUFFER = -8,     /* a NULL buffer where the call has bytes to move (this rank) */
    STRATA_ERR_TRUNCATE = -9,   /* ranks disagree on the size of the call (coll_strata_check_args) */
    STRATA_ERR_PEER = -10,      /* another rank failed this call; this rank stopped waiting for it */
    STRATA_ERR_TIMEOUT = -11,   /* no progress for coll_strata_timeout seconds */
    STRATA_ERR_BROKEN = -12     /* an earlier call on this team failed: it takes no more calls */
} strata_status_t;

/* MPI_IN_PLACE as the core sees it: its own value, so that a NULL send buffer is an
 * error and never taken for "in place". */
#define STRATA_IN_PLACE ((const void *) 1)

/* Element types with a kernel. The glue maps MPI predefined types onto these by
 * kind and size; anything else falls back. */
typedef enum strata_dtype {
    STRATA_INT8, STRATA_UINT8, STRATA_INT16, STRATA_UINT16,
    STRATA_INT32, STRATA_UINT32, STRATA_INT64, STRATA_UINT64,
    STRATA_FLOAT, STRATA_DOUBLE, STRATA_LONG_DOUBLE,
    STRATA_C_FLOAT_COMPLEX, STRATA_C_DOUBLE_COMPLEX, STRATA_C_LONG_DOUBLE_COMPLEX,
    STRATA_BOOL,                /* C _Bool / C++ bool: one byte, 0 or 1 */
    STRATA_LOGICAL4,            /* Fortran LOGICAL: 4 bytes, 0 is false */
    STRATA_BYTE,                /* MPI_BYTE: bitwise ops only */
    STRATA_FLOAT_INT,           /* MPI_FLOAT_INT {float; int}, MINLOC/MAXLOC */
    STRATA_2INT,                /* MPI_2INT {int; int}, MINLOC/MAXLOC */
    STRATA_DTYPE_COUNT
} strata_dtype_t;

typedef enum strata_op {
    STRATA_OP_SUM, STRATA_OP_PROD, STRATA_OP_MAX, STRATA_OP_MIN,
    STRATA_OP_LAND, STRATA_OP_LOR, STRATA_OP_LXOR,
    STRATA_OP_BAND, STRATA_OP_BOR, STRATA_OP_BXOR,
    STRATA_OP_MAXLOC, STRATA_OP_MINLOC,
    STRATA_OP_COUNT
} strata_op_t;

typedef enum strata_coll {
    STRATA_COLL_ALLREDUCE,
    STRATA_COLL_ALLGATHER,
    STRATA_COLL_REDUCE_SCATTER,     /* also serves reduce_scatter_block */
    STRATA_COLL_BCAST,
    STRATA_COLL_ALLTOALL,
    STRATA_COLL_REDUCE,
    STRATA_COLL_GATHER,
    STRATA_COLL_SCATTER,
    STRATA_COLL_COUNT
} strata_coll_t;

/* Point-to-point callbacks, provided by the glue.
 * Tags are small non-negative integers (< STRATA_TAG_SPACE); the glue maps them
 * into a range of collective tags that no application can use.
 * isend/irecv start a transfer and return an opaque request; test completes and
 * releases it when *done becomes 1. test only looks: it need not progress the stack
 * (the core calls progress below whenever a pass over its steps moved nothing).
 * The core's agreements (setup, coll_strata_check_args) are its own messages over
 * these, waited for in its own loop under coll_strata_timeout: never a blocking
 * collective of the stack, which may be unable to wait where strata is set up (Open
 * MPI's progress loop, with threads enabled). */
#define STRATA_TAG_SPACE (1 << 22)
#define STRATA_ANY_SOURCE (-1)  /* irecv from any rank (the team's failure notices only) */
typedef struct strata_transport {
    void *ctx;
    int (*isend)(void *ctx, const void *buf, size_t bytes, int peer, int tag, void **req);
    int (*irecv)(void *ctx, void *buf, size_t bytes, int peer, int tag, void **req);
    /* *bytes (when not NULL): the bytes a completed receive got, which the core
     * compares with what it posted (MPI completes a shorter message silently). */
    int (*test)(void *ctx, void *req, int *done, size_t *bytes);
    /* Gives up a request that has not completed: a receive (is_recv) is cancelled and
     * must not write its buffer afterwards, a send is left to finish on its own.
     * Releases req. May be NULL (requests of an abandoned call are then left alone;
     * an agreement given up at its deadline then leaves a receive posted).
     * test() returning an error has released its request already. A receive whose
     * message is larger than posted fails test() with STRATA_ERR_TRUNCATE. */
    void (*cancel)(void *ctx, void *req, int is_recv);
    int device_capable;  /* isend/irecv take GPU memory (a CUDA-aware stack), the same on every rank */
    /* A communicator of strata's own for this team's messages (Open MPI: a duplicate of
     * the communicator, on which nothing else in the job sends), so that no message of
     * the stack's own -- its nonblocking collectives, other components -- can ever
     * match one of strata's, whatever tags either uses. open_private starts making it
     * and gives a request the core completes with test(): collective over the team, it
     * is called at the same blocking call on every rank with none of the team's
     * messages outstanding. private_done(ctx, 1) then moves every later message there;
     * private_done(ctx, 0) gives it up (the wait failed; the request is abandoned and
     * what it makes, if it ever completes, is freed with the team). While it is being
     * made, the team hands every call back (the stack makes it with the communicator's
     * own collectives). Both NULL: messages stay on the team's communicator. */
    int (*open_private)(void *ctx, void **req);
    void (*private_done)(void *ctx, int ok);
    /* Nonzero when the team's messages must move to a communicator of their own at
     * this call: the stack's own tags on the communicator could come near strata's
     * (Open MPI: its nonblocking collectives' tag counter has walked far from its
     * start, or a component that takes tags from below is loaded). Read at a call's
     * start, where the stack's own matching needs the value alike on every rank.
     * NULL: always due (the team makes its communicator at setup or its first call,
     * in steps when that call is nonblocking). */
    int (*own_comm_due)(void *ctx);
    /* Progresses the stack's outstanding work (Open MPI: opal_progress, which also
     * runs strata_progress), called while a call waits: strata's own requests, and
     * the stack's nonblocking collectives a peer may be waiting for, advance. May be
     * NULL when test progresses by itself. */
    void (*progress)(void *ctx);
} strata_transport_t;

/* Where schedules run when every rank of a communicator has a GPU. */
typedef enum strata_device_path {
    STRATA_DEVICE_PATH_GPU = 0,   /* in GPU memory: CUDA IPC inside a node, reductions on the GPU */
    STRATA_DEVICE_PATH_HOST = 1   /* in host memory: each rank stages its device buffers */
} strata_device_path_t;

/* How device memory crosses nodes on the GPU path. */
typedef enum strata_device_transport {
    STRATA_DEVICE_TRANSPORT_AUTO = 0,   /* direct when the stack is CUDA-aware, else staged */
    STRATA_DEVICE_TRANSPORT_DIRECT = 1, /* device pointers to point-to-point */
    STRATA_DEVICE_TRANSPORT_STAGED = 2  /* pipelined through page-locked host bounce buffers */
} strata_device_transport_t;

/* Node-wide flags of a GPU team's calls: written (and waited for) by the GPU's stream
 * (stream memory operations, where every rank's GPU has them: agreed, the least level
 * asked for by any rank) or by the host. */
typedef enum strata_stream_flags {
    STRATA_STREAM_FLAGS_OFF = 0,    /* the host signals and waits for every flag */
    STRATA_STREAM_FLAGS_AUTO = 1,   /* the stream writes and waits, where every rank's GPU can,
                                     * for a peer's flag value only once the peer has queued
                                     * it (so GPU work never waits for a peer's host) */
    STRATA_STREAM_FLAGS_WRITES = 2, /* the stream writes, the host waits (nothing on the
                                     * stream waits for a peer) */
    STRATA_STREAM_FLAGS_EAGER = 3   /* as auto, but the stream waits for a peer's flag value
                                     * whether or not the peer has queued it yet: a started
                                     * call completes without host progress, but a device
                                     * synchronize may then wait for a peer to start it */
} strata_stream_flags_t;

/* coll_strata_setup_at_creation: which communicators are set up as they are made. */
typedef enum strata_setup_at_creation {
    STRATA_SETUP_AT_CREATION_OFF = 0,  /* none: at the first call (a nonblocking one sets up in steps) */
    STRATA_SETUP_AT_CREATION_ON = 1,   /* every one */
    /* every one that will not take the GPU path; one whose ranks all have a GPU makes
     * its GPU regions only at its first call (the default) */
    STRATA_SETUP_AT_CREATION_HOST = 2
} strata_setup_at_creation_t;

/* coll_strata_check_args: where every call's arguments are agreed before it runs.
 * A one-node team compares its ranks' signatures in its shared segment at each call's
 * end, at no extra message; across nodes only an agreement sees every rank's. */
typedef enum strata_check_args {
    STRATA_CHECK_ARGS_OFF = 0,   /* never: across nodes a mismatch may return success on some ranks */
    STRATA_CHECK_ARGS_ON = 1,    /* every call, on every team (and no lazy calls) */
    STRATA_CHECK_ARGS_NODES = 2  /* every call of a team that spans nodes (the default) */
} strata_check_args_t;

/* Settings: one copy per team, filled from MCA variables by the glue. */
#define STRATA_ALG_AUTO (-1)
#define STRATA_ALG_BASE (-2)  /* every call of the collective to the component strata replaced */
typedef struct strata_config {
    int verbose;                    /* 0 quiet, 1 fallbacks/setup, 2 every call */
    int node_size;                  /* >0: split each node into virtual nodes of this many ranks */
    size_t segment_size;            /* pipeline segment, bytes */
    size_t device_segment_size;     /* the segment of a one-node team whose schedules run in GPU
                                       memory; 0: segment_size there too */
    size_t device_multinode_segment_size;  /* the same for a team across nodes; 0: segment_size */
    size_t small_msg_size;          /* auto rules: at or below this, latency algorithms */
    size_t zero_copy_size;          /* GPU path: above this, node peers' buffers are read in place */
    int algorithm[STRATA_COLL_COUNT];   /* STRATA_ALG_AUTO, STRATA_ALG_BASE or an index into the table */
    const char *shm_dir;            /* where segments are created; NULL = /dev/shm */
    int host_buffers;               /* 0: a communicator where no rank has a GPU falls back */
    int device_path;                /* strata_device_path_t */
    int device_transport;           /* strata_device_transport_t */
    int ipc_cache_size;             /* node peers' device buffers kept mapped (CUDA IPC); 0: copy instead */
    size_t ipc_cache_bytes;         /* and at most this many bytes of their allocations; 0: no byte bound */
    double timeout;                 /* seconds without progress before a call fails; 0: wait for ever */
    int check_args;                 /* strata_check_args_t: agree count x signature, op and root before each call */
    int lazy_calls;                 /* small calls a new team hands back before it sets up */
    const char *rules_file;         /* algorithm rules (docs/rules.md), read at team creation; NULL: built-in rules only */
    int setup_at_creation;          /* strata_setup_at_creation_t: the glue sets a team up when its communicator is made (strata_team_setup) */
    int host_handback;              /* host-memory teams: the built-in host rules hand small calls back (rules.h) */
    int opt_out;                    /* this rank's communicator says strata=off (info key): setup agrees, and
                                       every rank hands its calls back when any rank opted out */
    const char *p2p_channel;        /* point-to-point channel kind (btl/channels.h): "transport", "ucx";
                                       NULL or "auto": the built-in choice (the transport) */
    int stream_flags;               /* strata_stream_flags_t */
} strata_config_t;

/* A status in words ("invalid buffer", "timed out", ...). */
const char *strata_status_name(strata_status_t status);

/* Logging: the glue routes core messages to its own output (opal_output). */
typedef void (*strata_log_fn)(int level, const char *msg);
void strata_set_logger(strata_log_fn fn);
/* Warnings every user sees, each under a topic of coll/strata/help-coll-strata.txt: the
 * glue hands them to Open MPI's help system, which aggregates them across processes.
 * msg is the warning's one line, the same on every rank that meets the same problem.
 * Without a warner (NULL, the default) they go to the logger at level 0. */
typedef void (*strata_warn_fn)(const char *topic, const char *msg);
void strata_set_warner(strata_warn_fn fn);
/* Messages above max_level are not even formatted (the logger would drop them): a
 * call's log line costs nothing when nobody reads it. Default: every level. */
void strata_set_log_level(int max_level);
/* The calls this thread makes from now on are (1) or are not (0) Open MPI's own (made
 * while it creates a communicator, say): their per-call lines (level 2) are not logged.
 * A queued call keeps the value it was made with; a call keeps its own through the calls
 * Open MPI makes inside it (strata's setup makes a communicator). */
void strata_log_quiet(int quiet);
int strata_log_is_quiet(void);
/* Whether the blocking calls this thread makes from now on are (1) or are not (0) Open
 * MPI's own (a communicator's creation), as strata_start_t::internal says of a
 * nonblocking one: the glue says so as it enters each call. On a team whose schedules
 * run in GPU memory such a call is handed back (STRATA_HANDBACK_STACK). */
void strata_stack_call(int yes);

/* Fills cfg with the built-in defaults. */
void strata_config_defaults(strata_config_t *cfg);

/* Algorithm tables: names for MCA enums and for logs. index 0..n-1. */
int strata_algorithm_count(strata_coll_t coll);
const char *strata_algorithm_name(strata_coll_t coll, int index);
const char *strata_algorithm_description(strata_coll_t coll, int index);
const char *strata_coll_name(strata_coll_t coll);

/* Element size in bytes of a strata type; whether (type, op) has a kernel. */
size_t strata_dtype_size(strata_dtype_t dtype);
int strata_op_supported(strata_dtype_t dtype, strata_op_t op);
const char *strata_dtype_name(strata_dtype_t dtype);
const char *strata_op_name(strata_op_t op);

typedef struct strata_team strata_team_t;

/* Creates a team; communicates nothing. node_key must be equal on ranks that
 * share a node and differ otherwise (the glue uses the lowest rank of the node).
 * The transport is copied. Shared-memory setup happens in strata_team_setup (the
 * glue calls it as the communicator is made: coll_strata_setup_at_creation) or else
 * in the first collective, and its outcome is agreed by every rank. */
strata_status_t strata_team_create(int rank, int size, int node_key,
                                   const strata_transport_t *transport,
                                   const strata_config_t *cfg, strata_team_t **team);
/* Sets the team up now (shared memory, GPU path; what the first collective call that
 * needs it does otherwise): collective over the communicator, every rank must call it.
 * STRATA_OK: calls may be served, nonblocking ones included; STRATA_FALLBACK: the team
 * hands its calls back (agreed; a team where no rank had a GPU yet asks again at
 * later blocking calls). */
strata_status_t strata_team_setup(strata_team_t *team);
/* Releases everything; safe on NULL. Not collective. */
void strata_team_destroy(strata_team_t *team);

/* This rank cannot take part in the current call (status says why, why is one line;
 * call_bytes: the size of the call as every rank sees it, bytes received in all, 0 for
 * alltoallv; dtype and op: a reduction's, STRATA_BYTE and STRATA_OP_SUM otherwise):
 * its peers are told, so they return an error instead of waiting for it (node peers
 * at once, other nodes by a message), and the team takes no further calls. Collective
 * in the sense that every rank of the call must reach a strata entry point. Returns
 * status, or STRATA_FALLBACK when the team hands this call back (its peers run the
 * previous component: so must this rank, with its own arguments). */
strata_status_t strata_fail_call(strata_team_t *team, strata_coll_t coll, strata_status_t status,
                                 const char *why, size_t call_bytes, strata_dtype_t dtype, strata_op_t op);

/* The last error of this team, one line (what, call number, collective, peer), or "". */
const char *strata_team_last_error(const strata_team_t *team);

/* Collectives. sendbuf == STRATA_IN_PLACE or sendbuf == recvbuf means in place; a NULL
 * buffer where the call has bytes for it is STRATA_ERR_BUFFER.
 * Return STRATA_OK with the result in recvbuf, STRATA_FALLBACK when the team has
 * (agreed) not to run strata (nothing was touched), or an error. */
strata_status_t strata_allreduce(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                 size_t count, strata_dtype_t dtype, strata_op_t op);

/* Data movement: sizes in bytes (any contiguous datatype). sendbuf == STRATA_IN_PLACE
 * means MPI_IN_PLACE with MPI's meaning for that collective:
 *   allgather(v): this rank's block is already in place in recvbuf;
 *   alltoall(v): recvbuf holds the input and receives the output;
 *   reduce_scatter: recvbuf holds the whole input, the result lands at its start;
 *   reduce: (root only) recvbuf holds the root's input;
 *   gather: (root only) the root's block is already in place in recvbuf.
 * scatter takes recvbuf == STRATA_IN_PLACE instead (root only): the root's block stays
 * where it is in sendbuf. */
strata_status_t strata_allgather(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                 size_t bytes_per_rank);
/* bytes[r], displs[r]: rank r's block size and offset in recvbuf, in bytes. */
strata_status_t strata_allgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                  const size_t *bytes, const size_t *displs);
strata_status_t strata_bcast(strata_team_t *team, void *buf, size_t bytes, int root);
strata_status_t strata_alltoall(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                size_t bytes_per_rank);
/* sbytes/sdispls: what this rank sends to each rank; rbytes/rdispls: what it receives. */
strata_status_t strata_alltoallv(strata_team_t *team, const void *sendbuf, const size_t *sbytes,
                                 const size_t *sdispls, void *recvbuf, const size_t *rbytes,
                                 const size_t *rdispls);
/* counts[r] elements of the reduced vector go to rank r, in rank order. */
strata_status_t strata_reduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                      const size_t *counts, strata_dtype_t dtype, strata_op_t op);
strata_status_t strata_reduce(strata_team_t *team, const void *sendbuf, void *recvbuf,
                              size_t count, strata_dtype_t dtype, strata_op_t op, int root);
/* Rooted data movement: bytes_per_rank per rank, the root's buffer holding size x
 * bytes_per_rank in rank order. gather: every rank's sendbuf goes to its block of the
 * root's recvbuf (recvbuf is ignored on the other ranks); scatter: block r of the root's
 * sendbuf goes to rank r's recvbuf (sendbuf is ignored on the other ranks). The size of
 * the call (strata_fail_call's call_bytes) is size x bytes_per_rank. */
strata_status_t strata_gather(strata_team_t *team, const void *sendbuf, void *recvbuf,
                              size_t bytes_per_rank, int root);
strata_status_t strata_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf,
                               size_t bytes_per_rank, int root);

/* Nonblocking and persistent collectives: strata_i<collective>, with the arguments of
 * the blocking call and two more. how->persistent = 0: the call starts now (queued
 * behind this team's earlier ones) and completes later; 1: it is built now and each
 * strata_request_start runs it (no allocation per start). how->complete(how->ctx,
 * status) is called once per start when the call completed, from whatever progress
 * completed it (strata_progress, strata_request_test, or a later call on the thread);
 * it must not call back into strata. NULL how: nonblocking, no callback.
 * Returns STRATA_OK with *req set (NULL: nothing to do, e.g. zero bytes; complete at
 * once, and at every start of a persistent call), STRATA_FALLBACK when the team does
 * not take it (agreed, like every decision: a team not set up yet sets up in steps
 * behind the call, and only the stack's own calls are handed back there), or an error. A nonblocking call never
 * waits for another rank here. Calls on one team run in the order they are made, one
 * at a time; a blocking call on it first completes every queued one. */
typedef struct strata_request strata_request_t;
typedef struct strata_start {
    int persistent;
    void (*complete)(void *ctx, strata_status_t status);
    void *ctx;
    /* The stack's own call (a communicator's creation), not the application's: it
     * never starts a team's setup (it may be part of the very communicator creation
     * that setup would wait for); on a team never set up it is handed back. */
    int internal;
} strata_start_t;

strata_status_t strata_iallreduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                                  strata_dtype_t dtype, strata_op_t op, const strata_start_t *how,
                                  strata_request_t **req);
strata_status_t strata_iallgather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                  const strata_start_t *how, strata_request_t **req);
strata_status_t strata_iallgatherv(strata_team_t *team, const void *sendbuf, void *recvbuf, const size_t *bytes,
                                   const size_t *displs, const strata_start_t *how, strata_request_t **req);
strata_status_t strata_ibcast(strata_team_t *team, void *buf, size_t bytes, int root, const strata_start_t *how,
                              strata_request_t **req);
strata_status_t strata_ialltoall(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                 const strata_start_t *how, strata_request_t **req);
strata_status_t strata_ialltoallv(strata_team_t *team, const void *sendbuf, const size_t *sbytes,
                                  const size_t *sdispls, void *recvbuf, const size_t *rbytes, const size_t *rdispls,
                                  const strata_start_t *how, strata_request_t **req);
strata_status_t strata_ireduce_scatter(strata_team_t *team, const void *sendbuf, void *recvbuf,
                                       const size_t *counts, strata_dtype_t dtype, strata_op_t op,
                                       const strata_start_t *how, strata_request_t **req);
strata_status_t strata_ireduce(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t count,
                               strata_dtype_t dtype, strata_op_t op, int root, const strata_start_t *how,
                               strata_request_t **req);
strata_status_t strata_igather(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                               int root, const strata_start_t *how, strata_request_t **req);
strata_status_t strata_iscatter(strata_team_t *team, const void *sendbuf, void *recvbuf, size_t bytes_per_rank,
                                int root, const strata_start_t *how, strata_request_t **req);
/* strata_fail_call for a nonblocking or persistent call: on STRATA_OK *req fails with
 * status (at every start); STRATA_FALLBACK as strata_fail_call. */
strata_status_t strata_ifail_call(strata_team_t *team, strata_coll_t coll, strata_status_t status, const char *why,
                                  size_t call_bytes, strata_dtype_t dtype, strata_op_t op, const strata_start_t *how,
                                  strata_request_t **req);
/* A persistent call's next start (the previous one completed). */
strata_status_t strata_request_start(strata_request_t *req);
/* Progresses once (the team's transport progress, which runs strata_progress; without
 * one, every queued call), then 1 when req has completed (*status: its outcome), else 0. */
int strata_request_test(strata_request_t *req, strata_status_t *status);
/* Releases a request that is not running (completed, or a persistent one between
 * starts); STRATA_ERR_ARG while it runs. */
strata_status_t strata_request_free(strata_request_t *req);
/* Progresses every queued call of this thread's teams; returns how many completed.
 * Does nothing when called from inside strata (a transport's progress). */
int strata_progress(void);
/* Whether any call of the process is queued (a progress thread's cue to keep going). */
int strata_progress_pending(void);

/* For tests and logs: how many calls of a collective ran strata's algorithm `alg`. */
uint64_t strata_team_calls(const strata_team_t *team, strata_coll_t coll, int alg);
/* The name of the algorithm the team's last call that strata served ran (as
 * strata_algorithm_name gives it); NULL when no call was served yet. */
const char *strata_team_last_algorithm(const strata_team_t *team);

/* ---------------------------------------------------------------- counters
 * Process-wide counters of what strata did, over every communicator (the glue's
 * MPI_T performance variables read them). They only grow; each costs one relaxed
 * atomic add where it happens. */

/* Why a call went to the component strata replaced. */
typedef enum {
    STRATA_HANDBACK_UNSUPPORTED,   /* arguments strata does not take (type, op, intercommunicator, ...) */
    STRATA_HANDBACK_OFF,           /* strata is off on the communicator (no GPU and host buffers off, strata=off,
                                      failed setup) */
    STRATA_HANDBACK_LAZY,          /* a small call before setup (coll_strata_lazy_calls) */
    STRATA_HANDBACK_NOT_SET_UP,    /* the stack's own call on a communicator not set up yet */
    STRATA_HANDBACK_SETTING,       /* coll_strata_<coll>_algorithm=base */
    STRATA_HANDBACK_RULES_FILE,    /* a rules file line says base */
    STRATA_HANDBACK_HOST_RULES,    /* the built-in host rules (coll_strata_host_handback) */
    STRATA_HANDBACK_NO_KERNEL,     /* no GPU kernel for the type and op */
    STRATA_HANDBACK_NO_ALGORITHM,  /* no algorithm of strata's fits (a nonblocking call) */
    STRATA_HANDBACK_FAILED,        /* an earlier call on the communicator failed */
    STRATA_HANDBACK_STACK,         /* Open MPI's own call (its buffers host memory) on a team in GPU memory */
    STRATA_HANDBACK_HOST_CALL,     /* a small call on host buffers on every rank of a team in GPU memory */
    STRATA_HANDBACK_COUNT
} strata_handback_t;

/* Bytes, by the path they took, and events. Bytes are counted per served call as MPI
 * counts the call (a reduction's vector, all an allgather gathers, what this rank
 * receives in an alltoall), except BYTES_SENT: what this rank's schedules handed to the
 * point-to-point layer. */
typedef enum {
    STRATA_STAT_BYTES_IN_PLACE,    /* calls in which node peers' buffers were read in place (CUDA IPC) */
    STRATA_STAT_BYTES_SLOTS,       /* calls whose node part went through the shared-memory or GPU slots */
    STRATA_STAT_BYTES_STAGED,      /* calls whose buffers on this rank were staged (device <-> host copies) */
    STRATA_STAT_BYTES_SENT,        /* bytes sent point-to-point by this rank's schedules */
    STRATA_STAT_IPC_HITS,          /* a node peer's buffer found mapped in the IPC cache */
    STRATA_STAT_IPC_MISSES,        /* one mapped anew */
    STRATA_STAT_IPC_EVICTIONS,     /* a mapping closed to make room */
    STRATA_STAT_DEADLINES,         /* calls or setup exchanges failed by coll_strata_timeout on this rank */
    STRATA_STAT_COUNT
} strata_stat_t;

uint64_t strata_stat(strata_stat_t which);
/* Calls strata served of coll with algorithm alg (an index of its table; < 0: any). */
uint64_t strata_stat_served(strata_coll_t coll, int alg);
uint64_t strata_stat_handed_back(strata_handback_t why);
/* Names for the performance variables ("lazy_calls", "bytes_slots") and the reason in
 * plain words (log lines, the verbose-1 summary); NULL out of range. */
const char *strata_handback_name(strata_handback_t why);
const char *strata_handback_words(strata_handback_t why);
const char *strata_stat_name(strata_stat_t which);
const char *strata_stat_description(strata_stat_t which);
/* A call the glue hands back before it reaches the core (unsupported arguments): counted
 * on the team (NULL: only the process) and the process. */
void strata_team_count_handback(strata_team_t *team, strata_handback_t why);
/* coll_strata_verbose >= 1: one line of what the team did (calls, served by collective
 * and algorithm, handed back by reason), logged at level 1 under the name given. Nothing
 * when the team saw no call. */
void strata_team_report(const strata_team_t *team, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* STRATA_H */
