/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata.h - the Open MPI side of strata: component, module, entry points.
 *
 * The module replaces allreduce, allgather(v), reduce_scatter(_block), bcast,
 * alltoall(v), reduce, gather and scatter (MCA_COLL_STRATA_COLLS). Every entry point checks support first and hands anything
 * strata does not take to the module it replaced (captured in enable), so the
 * component never fails a call it does not support.
 */
#ifndef MCA_COLL_STRATA_H
#define MCA_COLL_STRATA_H

#include "coll_strata_compat.h"
#include "strata.h"

BEGIN_C_DECLS

/* ---------------------------------------------------------------- component */

typedef struct mca_coll_strata_component_t {
    mca_coll_strata_base_component_t super;

    /* MCA variables (registered in coll_strata_component.c) */
    int priority;
    int verbose;
    bool verbose_internal;  /* also log the calls Open MPI makes itself (MCA_COLL_STRATA_ENTER) */
    bool enable;
    bool host_buffers;
    int node_size;
    size_t segment_size;
    size_t device_segment_size;
    size_t device_multinode_segment_size;
    size_t small_msg_size;
    size_t zero_copy_size;
    int algorithm[STRATA_COLL_COUNT];
    char *shm_dir;
    int device_path;        /* strata_device_path_t */
    int device_transport;   /* strata_device_transport_t */
    int stream_flags;       /* strata_stream_flags_t */
    int ipc_cache_size;     /* peers' device buffers kept mapped per communicator; 0: off */
    size_t ipc_cache_bytes; /* and the most bytes of their allocations; 0: no byte bound */
    double timeout;         /* seconds without progress before a call fails; 0: none */
    int check_args;         /* strata_check_args_t: agree size, type, op and root before calls */
    int lazy_calls;         /* small calls a new communicator hands back before setup */
    int setup_at_creation;  /* strata_setup_at_creation_t: set a communicator up when it is made */
    bool host_handback;     /* host-memory teams: built-in host rules hand small calls back */
    char *p2p_channel;      /* point-to-point channel kind (btl/channels.h): auto, transport, ucx */
    bool progress_thread;   /* a thread progresses nonblocking calls (MPI_THREAD_MULTIPLE) */

    int output;     /* opal_output stream, verbosity = verbose */
} mca_coll_strata_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_strata_component_t mca_coll_strata_component;

/* ---------------------------------------------------------------- module */

/* Every MPI collective strata replaces, each with its nonblocking (i<name>) and
 * persistent (<name>_init) entries, all three in coll_strata_<collective>.c: the one
 * list the module's tables expand (the previous component's entries, strata's
 * declarations, what enable captures and release gives back). */
#define MCA_COLL_STRATA_COLLS(X)                                                   \
    X(allreduce) X(allgather) X(allgatherv) X(reduce_scatter) X(reduce_scatter_block) \
    X(bcast) X(alltoall) X(alltoallv) X(reduce) X(gather) X(scatter)

/* The previous module's function and module for each collective strata overrides;
 * the nonblocking and persistent ones are optional (NULL: strata leaves that entry
 * alone). */
#define MCA_COLL_STRATA_PREV(name)                  \
    mca_coll_base_module_##name##_fn_t name;        \
    mca_coll_base_module_t *name##_module;
#define MCA_COLL_STRATA_PREV_ALL(name) \
    MCA_COLL_STRATA_PREV(name) MCA_COLL_STRATA_PREV(i##name) MCA_COLL_STRATA_PREV(name##_init)

typedef struct mca_coll_strata_prev_t {
    MCA_COLL_STRATA_COLLS(MCA_COLL_STRATA_PREV_ALL)
} mca_coll_strata_prev_t;

typedef struct mca_coll_strata_module_t {
    mca_coll_base_module_t super;
    struct ompi_communicator_t *comm;   /* not retained: the module lives inside it */
    mca_coll_strata_prev_t prev;
    strata_team_t *team;                /* created in enable, destroyed with the module */
    strata_transport_t transport;       /* ctx = this module */
    /* The team's own communicator (a duplicate of comm that strata alone sends on),
     * once made: every message of strata's goes over it (coll_strata_p2p.c). wire_slot
     * is where a pending duplicate lands; one given up is left to Open MPI. */
    struct ompi_communicator_t *wire;
    struct ompi_communicator_t **wire_slot;
    int32_t nbc_tag_seen;               /* comm's nonblocking tag counter at the last call */
    size_t *rs_counts;                  /* reduce_scatter scratch, comm size entries */
    /* The count arrays of allgather(v) and alltoall(v) calls (MCA_COLL_STRATA_COUNTS_*),
     * made at a communicator's first such call and kept: a blocking collective is one
     * at a time on a communicator, and a small call handed back paid two mallocs. */
    void *counts[2];
    size_t counts_bytes[2];
} mca_coll_strata_module_t;

enum { MCA_COLL_STRATA_COUNTS_INT = 0, MCA_COLL_STRATA_COUNTS_SIZE = 1 };
/* m->counts[which], at least bytes long (grown as needed); NULL when out of memory. */
void *mca_coll_strata_counts(mca_coll_strata_module_t *m, int which, size_t bytes);

OBJ_CLASS_DECLARATION(mca_coll_strata_module_t);

int mca_coll_strata_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_strata_comm_query(struct ompi_communicator_t *comm, int *priority);

/* Fills cfg from the MCA variables. */
void mca_coll_strata_fill_config(strata_config_t *cfg);

/* ---------------------------------------------------------------- transport (p2p) */

/* All strata tags lie in [MCA_COLL_STRATA_TAG_BASE - STRATA_TAG_SPACE + 1,
 * MCA_COLL_STRATA_TAG_BASE]; see coll_strata_p2p.c for why. */
#define MCA_COLL_STRATA_TAG_BASE (-(1 << 22))

void mca_coll_strata_transport_init(mca_coll_strata_module_t *m, strata_transport_t *t);
/* Frees the team's own communicator (after the team, whose requests use it). */
void mca_coll_strata_wire_release(mca_coll_strata_module_t *m);
/* The info key and value that mark a communicator as a team's own (comm_query declines it). */
#define MCA_COLL_STRATA_WIRE_KEY "strata"
#define MCA_COLL_STRATA_WIRE_VALUE "wire"

/* ---------------------------------------------------------------- support checks */

/* Each returns NULL when supported, else a short static reason for the fallback log. */
const char *mca_coll_strata_map_dtype(struct ompi_datatype_t *dt, strata_dtype_t *out);
const char *mca_coll_strata_map_op(struct ompi_op_t *op, strata_dtype_t dt, strata_op_t *out);
/* Reductions: predefined type with a kernel, predefined op with a kernel. */
const char *mca_coll_strata_check_reduction(struct ompi_datatype_t *dt, struct ompi_op_t *op,
                                            strata_dtype_t *sdt, strata_op_t *sop);
/* Reductions: as check_reduction, and also a derived datatype whose signature is one
 * predefined type repeated (*per of them per element, *basic that type; *packed: the
 * glue packs it, and hands the packed copy to the previous component too where
 * strata declines, since Open MPI 4.1's own algorithms mishandle such types). */
const char *mca_coll_strata_reduction_type(struct ompi_datatype_t *dt, struct ompi_op_t *op,
                                           strata_dtype_t *sdt, strata_op_t *sop, size_t *per,
                                           int *packed, struct ompi_datatype_t **basic);
/* Byte-moving collectives: count elements of dt form one gap-free block starting at
 * the buffer pointer; *bytes gets its size. */
const char *mca_coll_strata_check_bytes(struct ompi_datatype_t *dt, mca_coll_strata_count_t count,
                                        size_t *bytes);
/* ---------------------------------------------------------------- fallback (coll_strata_fallback.c)
 * The previous component's collectives, with this rank's device buffers staged
 * through host memory (host buffers go straight through). Every fallback goes
 * through these, so a device pointer never reaches a component that is not
 * CUDA-aware. */
int mca_coll_strata_prev_allreduce(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf,
                                   int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op);
int mca_coll_strata_prev_reduce(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf,
                                int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                int root);
int mca_coll_strata_prev_bcast(mca_coll_strata_module_t *m, void *buf, int count,
                               struct ompi_datatype_t *dtype, int root);
int mca_coll_strata_prev_allgather(mca_coll_strata_module_t *m, const void *sbuf, int scount,
                                   struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                   struct ompi_datatype_t *rdtype);
int mca_coll_strata_prev_allgatherv(mca_coll_strata_module_t *m, const void *sbuf, int scount,
                                    struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                    const int *disps, struct ompi_datatype_t *rdtype);
int mca_coll_strata_prev_reduce_scatter(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf,
                                        const int *rcounts, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op);
int mca_coll_strata_prev_reduce_scatter_block(mca_coll_strata_module_t *m, const void *sbuf,
                                              void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                              struct ompi_op_t *op);
int mca_coll_strata_prev_alltoall(mca_coll_strata_module_t *m, const void *sbuf, int scount,
                                  struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                  struct ompi_datatype_t *rdtype);
int mca_coll_strata_prev_alltoallv(mca_coll_strata_module_t *m, const void *sbuf,
                                   const int *scounts, const int *sdisps,
                                   struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                   const int *rdisps, struct ompi_datatype_t *rdtype);
/* Staging of this rank's device buffers through host memory for the previous
 * component (blocking here; around a request in coll_strata_request.c). */
typedef struct mca_coll_strata_host_copy {
    char *dev;      /* the caller's device pointer; NULL when nothing is staged */
    char *host;     /* host copy of the region: pinned (strata_host_copy_get) or malloc'ed */
    int pinned;
    ptrdiff_t lo;
    size_t len;
} mca_coll_strata_host_copy_t;
typedef struct mca_coll_strata_pair {
    mca_coll_strata_host_copy_t s, r;
    void *su, *ru;   /* what to hand the previous component */
} mca_coll_strata_pair_t;
int mca_coll_strata_is_device(const void *p);
/* The bytes count elements of dt cover, from the buffer pointer: [*lo, *lo + *len);
 * the same for blocks of counts[i] elements at displs[i] extents (v-collectives). */
void mca_coll_strata_span(struct ompi_datatype_t *dt, size_t count, ptrdiff_t *lo, size_t *len);
void mca_coll_strata_span_blocks(struct ompi_datatype_t *dt, int n, const int *counts, const int *displs,
                                 ptrdiff_t *lo, size_t *len);
/* Stages sbuf's region (unless MPI_IN_PLACE) and rbuf's where they are device memory
 * (p->su, p->ru: what to hand the previous component); pair_out frees the copies and
 * copies the receive side back when copy_back and rc is success; pair_refresh copies
 * the device contents in again. */
int mca_coll_strata_pair_in(mca_coll_strata_pair_t *p, const void *sbuf, ptrdiff_t slo, size_t slen,
                            void *rbuf, ptrdiff_t rlo, size_t rlen);
int mca_coll_strata_pair_out(mca_coll_strata_pair_t *p, int copy_back, int rc);
int mca_coll_strata_pair_refresh(mca_coll_strata_pair_t *p);
void mca_coll_strata_say_staging(const char *coll);

/* Packs scount sdtype elements from sbuf into rblock as rcount rdtype elements
 * (ompi_datatype_sndrcv), through host memory where either side is on a GPU. */
int mca_coll_strata_pack_block(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rblock, int rcount, struct ompi_datatype_t *rdtype);

/* A call handed back to the previous module: counted (the core counted its own), and
 * "coll:strata: <rank>: <coll> <bytes> B cid <cid>: fallback (why)" at verbose >= 2;
 * nothing for mca_coll_strata_why_core_declined, whose reason the core logged. */
void mca_coll_strata_log_fallback(mca_coll_strata_module_t *m, const char *coll,
                                  size_t bytes, const char *why);

/* The first statement of every entry point: whether the call is Open MPI's own (made
 * from inside the library, not through an MPI binding: a communicator's creation, say),
 * whose per-call lines verbose 2 leaves out unless coll_strata_verbose_internal; also
 * takes a coll_strata_verbose written through MPI_T since the last call. */
int mca_coll_strata_enter(const void *caller);
/* Whether the entry point this thread is in now was called by Open MPI itself. */
int mca_coll_strata_entered_internal(void);
#define MCA_COLL_STRATA_ENTER \
    int mca_coll_strata_entered_ __attribute__((unused)) = mca_coll_strata_enter(__builtin_return_address(0))


/* strata status -> MPI error code; an error is said in one line naming the
 * communicator, the collective and what went wrong (the core's last error). */
int mca_coll_strata_status_to_mpi(strata_status_t st, mca_coll_strata_module_t *m, const char *coll);
/* This rank cannot take part in the call (bad arguments the core cannot see, such as
 * send and receive sizes that differ): fails it on every rank (strata_fail_call) and
 * returns the MPI error for this one. *served = 0 when the team hands the call back
 * instead (the caller then falls back with its own arguments, as its peers do). */
int mca_coll_strata_fail(mca_coll_strata_module_t *m, strata_coll_t coll, const char *name,
                         strata_status_t st, const char *why, size_t call_bytes, int *served);
/* The same for a reduction, whose type and op every rank's decisions depend on. */
int mca_coll_strata_fail_reduction(mca_coll_strata_module_t *m, strata_coll_t coll, const char *name,
                                   strata_status_t st, const char *why, size_t call_bytes,
                                   strata_dtype_t dtype, strata_op_t op, int *served);
/* count elements of dt at buf, packed into out (size x count bytes), and back; device
 * buffers go through host memory. MPI_ERR_COUNT above INT_MAX bytes. */
int mca_coll_strata_pack(const void *buf, int count, struct ompi_datatype_t *dt, void *out);
int mca_coll_strata_unpack(const void *in, void *buf, int count, struct ompi_datatype_t *dt);
/* A call's packed copies of buffers laid out with gaps (every mode: a blocking call
 * packs once, a persistent one at each start). Zeroed is empty. */
typedef struct mca_coll_strata_layout {
    void *user;      /* count elements of dt in the user's buffer */
    int count;
    struct ompi_datatype_t *dt;   /* retained */
    char *packed;    /* their packed copy */
} mca_coll_strata_layout_t;
typedef struct mca_coll_strata_packing {
    mca_coll_strata_layout_t *pack, *unpack;   /* packed before the call / unpacked after */
    int npack, nunpack;
    char **mem;                                /* the packed copies */
    int nmem;
} mca_coll_strata_packing_t;
/* A packed copy of bytes (freed with pk); NULL when out of memory. */
char *mca_coll_strata_packing_mem(mca_coll_strata_packing_t *pk, size_t bytes);
/* count elements of dt at user, packed into packed before the call (at_start) or
 * unpacked from it after; 0 when out of memory. */
int mca_coll_strata_packing_add(mca_coll_strata_packing_t *pk, int at_start, void *user, int count,
                                struct ompi_datatype_t *dt, char *packed);
/* count elements of dt at buf, as the core sees them: buf itself when they form one
 * gap-free block, else a packed copy (packed before the call when in, unpacked after
 * when out). NULL when out of memory. */
void *mca_coll_strata_packing_as_bytes(mca_coll_strata_packing_t *pk, const void *buf, int count,
                                       struct ompi_datatype_t *dt, int in, int out);
int mca_coll_strata_packing_pack(const mca_coll_strata_packing_t *pk);
int mca_coll_strata_packing_unpack(const mca_coll_strata_packing_t *pk);
void mca_coll_strata_packing_free(mca_coll_strata_packing_t *pk);
/* MPI_IN_PLACE as the core spells it. */
#define MCA_COLL_STRATA_SBUF(sbuf) (MPI_IN_PLACE == (sbuf) ? STRATA_IN_PLACE : (sbuf))

/* Core logger registered with strata_set_logger. */
void mca_coll_strata_core_log(int level, const char *msg);
/* Warnings users see, each under its topic of help-coll-strata.txt, through Open MPI's
 * help system (aggregated across processes): the core's (registered with
 * strata_set_warner) and the glue's own, msg formatted from fmt. */
#define MCA_COLL_STRATA_HELP_FILE "help-coll-strata.txt"
void mca_coll_strata_core_warn(const char *topic, const char *msg);
void mca_coll_strata_warn(const char *topic, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The core logs each call under its core collective (allgather, reduce_scatter,
 * alltoall). An MPI-level variant it serves (allgatherv, reduce_scatter_block,
 * alltoallv) gets its own verbose-2 line naming the algorithm that ran, as the core
 * reports it (strata_team_last_algorithm); mode: "" or ", nonblocking" / ", persistent". */
void mca_coll_strata_log_variant(mca_coll_strata_module_t *m, strata_coll_t coll,
                                 const char *name, size_t bytes, const char *mode);

/* Fallback reasons shared by several entry points. */
extern const char mca_coll_strata_why_core_declined[];  /* core returned STRATA_FALLBACK */

/* ---------------------------------------------------------------- entry points */

/* mca_coll_strata_<name>, mca_coll_strata_i<name> and mca_coll_strata_<name>_init of
 * every collective in MCA_COLL_STRATA_COLLS, declared with the types of Open MPI's
 * coll API (coll_strata_compat.h picks the series), so that the compiler checks each
 * definition against the slot it fills. */
#define MCA_COLL_STRATA_DECLARE(name, entry) \
    extern __typeof__(*(mca_coll_base_module_##name##_fn_t) 0) mca_coll_strata_##entry;
#define MCA_COLL_STRATA_DECLARE_ALL(name)                                                   \
    MCA_COLL_STRATA_DECLARE(name, name) MCA_COLL_STRATA_DECLARE(i##name, i##name) \
    MCA_COLL_STRATA_DECLARE(name##_init, name##_init)
MCA_COLL_STRATA_COLLS(MCA_COLL_STRATA_DECLARE_ALL)

/* Stops Open MPI's progress loop from calling strata (component close). */
void mca_coll_strata_nonblocking_fini(void);

END_C_DECLS

#endif /* MCA_COLL_STRATA_H */
