/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_dtype.c - MPI datatypes and ops -> strata enums, the support checks
 * shared by all entry points, fallback logging and error mapping.
 *
 * Predefined types are mapped by kind and size (so MPI_LONG, MPI_AINT, MPI_COUNT or
 * Fortran INTEGER land on the right width on every platform); types with holes
 * (size != extent), MPI_CHAR/MPI_WCHAR (characters: no arithmetic in MPI), 16-byte
 * Fortran reals (may not be long double) and everything derived fall back.
 */
#include "coll_strata.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"

const char mca_coll_strata_why_core_declined[] = "core declined";

typedef enum {
    KIND_SINT, KIND_UINT, KIND_FLOAT, KIND_LDOUBLE, KIND_COMPLEX, KIND_LDCOMPLEX,
    KIND_BOOL, KIND_LOGICAL, KIND_BYTE, KIND_FLOAT_INT, KIND_2INT
} dtype_kind_t;

typedef struct {
    MPI_Datatype type;
    dtype_kind_t kind;
} dtype_entry_t;

/* Built once (pthread_once: MPI_THREAD_MULTIPLE callers may race to the first call);
 * the handles are addresses of Open MPI's predefined objects. */
static dtype_entry_t dtype_entries[64];
static size_t dtype_count = 0;
static pthread_once_t dtype_once = PTHREAD_ONCE_INIT;

static void dtype_table_fill(void)
{
    dtype_entry_t *table = dtype_entries;
    size_t k = 0;
#define E(t, kd) table[k].type = (t); table[k].kind = (kd); ++k
    E(MPI_SIGNED_CHAR, KIND_SINT); E(MPI_UNSIGNED_CHAR, KIND_UINT);
    E(MPI_SHORT, KIND_SINT); E(MPI_UNSIGNED_SHORT, KIND_UINT);
    E(MPI_INT, KIND_SINT); E(MPI_UNSIGNED, KIND_UINT);
    E(MPI_LONG, KIND_SINT); E(MPI_UNSIGNED_LONG, KIND_UINT);
    E(MPI_LONG_LONG_INT, KIND_SINT); E(MPI_UNSIGNED_LONG_LONG, KIND_UINT);
    E(MPI_INT8_T, KIND_SINT); E(MPI_UINT8_T, KIND_UINT);
    E(MPI_INT16_T, KIND_SINT); E(MPI_UINT16_T, KIND_UINT);
    E(MPI_INT32_T, KIND_SINT); E(MPI_UINT32_T, KIND_UINT);
    E(MPI_INT64_T, KIND_SINT); E(MPI_UINT64_T, KIND_UINT);
    E(MPI_AINT, KIND_SINT); E(MPI_OFFSET, KIND_SINT); E(MPI_COUNT, KIND_SINT);
    /* The sized Fortran types exist only where Open MPI was built with a Fortran
     * compiler that has them (mpi.h defines them under OMPI_HAVE_FORTRAN_*): an Open
     * MPI configured --disable-mpi-fortran lacks them. */
    E(MPI_INTEGER, KIND_SINT);
#ifdef MPI_INTEGER1
    E(MPI_INTEGER1, KIND_SINT);
#endif
#ifdef MPI_INTEGER2
    E(MPI_INTEGER2, KIND_SINT);
#endif
#ifdef MPI_INTEGER4
    E(MPI_INTEGER4, KIND_SINT);
#endif
#ifdef MPI_INTEGER8
    E(MPI_INTEGER8, KIND_SINT);
#endif
    E(MPI_FLOAT, KIND_FLOAT); E(MPI_DOUBLE, KIND_FLOAT); E(MPI_LONG_DOUBLE, KIND_LDOUBLE);
    E(MPI_REAL, KIND_FLOAT); E(MPI_DOUBLE_PRECISION, KIND_FLOAT);
#ifdef MPI_REAL4
    E(MPI_REAL4, KIND_FLOAT);
#endif
#ifdef MPI_REAL8
    E(MPI_REAL8, KIND_FLOAT);
#endif
    E(MPI_C_FLOAT_COMPLEX, KIND_COMPLEX); E(MPI_C_DOUBLE_COMPLEX, KIND_COMPLEX);
    E(MPI_C_LONG_DOUBLE_COMPLEX, KIND_LDCOMPLEX);
    E(MPI_CXX_FLOAT_COMPLEX, KIND_COMPLEX); E(MPI_CXX_DOUBLE_COMPLEX, KIND_COMPLEX);
    E(MPI_CXX_LONG_DOUBLE_COMPLEX, KIND_LDCOMPLEX);
    E(MPI_COMPLEX, KIND_COMPLEX); E(MPI_DOUBLE_COMPLEX, KIND_COMPLEX);
#ifdef MPI_COMPLEX8
    E(MPI_COMPLEX8, KIND_COMPLEX);
#endif
#ifdef MPI_COMPLEX16
    E(MPI_COMPLEX16, KIND_COMPLEX);
#endif
    E(MPI_C_BOOL, KIND_BOOL); E(MPI_CXX_BOOL, KIND_BOOL);
    E(MPI_LOGICAL, KIND_LOGICAL);
#ifdef MPI_LOGICAL4
    E(MPI_LOGICAL4, KIND_LOGICAL);
#endif
    E(MPI_BYTE, KIND_BYTE);
    E(MPI_FLOAT_INT, KIND_FLOAT_INT); E(MPI_2INT, KIND_2INT);
#undef E
    dtype_count = k;
}

static const dtype_entry_t *dtype_table(size_t *n)
{
    (void) pthread_once(&dtype_once, dtype_table_fill);
    *n = dtype_count;
    return dtype_entries;
}

const char *mca_coll_strata_map_dtype(struct ompi_datatype_t *dt, strata_dtype_t *out)
{
    const dtype_entry_t *table;
    size_t n, i, size = 0;
    ptrdiff_t lb = 0, extent = 0;

    if (NULL == dt || !ompi_datatype_is_predefined(dt)) {
        return "derived datatype";
    }
    table = dtype_table(&n);
    for (i = 0; i < n && table[i].type != dt; ++i) {
    }
    if (i == n) {
        return "datatype without a strata kernel";
    }
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    if (0 == size || 0 != lb || (ptrdiff_t) size != extent) {
        return "datatype with holes or unavailable";
    }

    switch (table[i].kind) {
    case KIND_SINT:
    case KIND_UINT: {
        static const strata_dtype_t s[] = { STRATA_INT8, STRATA_INT16, STRATA_INT32, STRATA_INT64 };
        static const strata_dtype_t u[] = { STRATA_UINT8, STRATA_UINT16, STRATA_UINT32, STRATA_UINT64 };
        int idx = 1 == size ? 0 : 2 == size ? 1 : 4 == size ? 2 : 8 == size ? 3 : -1;
        if (idx < 0) {
            return "integer size without a strata kernel";
        }
        *out = KIND_SINT == table[i].kind ? s[idx] : u[idx];
        return NULL;
    }
    case KIND_FLOAT:
        if (4 == size) { *out = STRATA_FLOAT; return NULL; }
        if (8 == size) { *out = STRATA_DOUBLE; return NULL; }
        return "floating-point size without a strata kernel";
    case KIND_LDOUBLE:
        if (sizeof(long double) == size) { *out = STRATA_LONG_DOUBLE; return NULL; }
        return "long double size mismatch";
    case KIND_COMPLEX:
        if (8 == size) { *out = STRATA_C_FLOAT_COMPLEX; return NULL; }
        if (16 == size) { *out = STRATA_C_DOUBLE_COMPLEX; return NULL; }
        return "complex size without a strata kernel";
    case KIND_LDCOMPLEX:
        if (2 * sizeof(long double) == size) { *out = STRATA_C_LONG_DOUBLE_COMPLEX; return NULL; }
        return "long double complex size mismatch";
    case KIND_BOOL:
        if (1 == size) { *out = STRATA_BOOL; return NULL; }
        return "bool size without a strata kernel";
    case KIND_LOGICAL:
        if (4 == size) { *out = STRATA_LOGICAL4; return NULL; }
        return "Fortran LOGICAL size without a strata kernel";
    case KIND_BYTE:
        *out = STRATA_BYTE;
        return NULL;
    case KIND_FLOAT_INT:
        if (sizeof(float) + sizeof(int) == size) { *out = STRATA_FLOAT_INT; return NULL; }
        return "MPI_FLOAT_INT layout mismatch";
    case KIND_2INT:
        if (2 * sizeof(int) == size) { *out = STRATA_2INT; return NULL; }
        return "MPI_2INT layout mismatch";
    }
    return "datatype without a strata kernel";
}

const char *mca_coll_strata_map_op(struct ompi_op_t *op, strata_dtype_t dt, strata_op_t *out)
{
    MPI_Op ops[STRATA_OP_COUNT];
    int i;

    ops[STRATA_OP_SUM] = MPI_SUM;   ops[STRATA_OP_PROD] = MPI_PROD;
    ops[STRATA_OP_MAX] = MPI_MAX;   ops[STRATA_OP_MIN] = MPI_MIN;
    ops[STRATA_OP_LAND] = MPI_LAND; ops[STRATA_OP_LOR] = MPI_LOR;  ops[STRATA_OP_LXOR] = MPI_LXOR;
    ops[STRATA_OP_BAND] = MPI_BAND; ops[STRATA_OP_BOR] = MPI_BOR;  ops[STRATA_OP_BXOR] = MPI_BXOR;
    ops[STRATA_OP_MAXLOC] = MPI_MAXLOC; ops[STRATA_OP_MINLOC] = MPI_MINLOC;
    for (i = 0; i < STRATA_OP_COUNT; ++i) {
        if (ops[i] == op) {
            break;
        }
    }
    if (STRATA_OP_COUNT == i) {
        return "user-defined or unsupported op";
    }
    if (!strata_op_supported(dt, (strata_op_t) i)) {
        return "no kernel for this (datatype, op)";
    }
    *out = (strata_op_t) i;
    return NULL;
}

const char *mca_coll_strata_check_reduction(struct ompi_datatype_t *dt, struct ompi_op_t *op,
                                            strata_dtype_t *sdt, strata_op_t *sop)
{
    const char *why = mca_coll_strata_map_dtype(dt, sdt);
    return NULL != why ? why : mca_coll_strata_map_op(op, *sdt, sop);
}

/* A derived datatype whose signature is one predefined type repeated (vector,
 * indexed, struct of one type, resized, subarray...) reduces as that type: the glue
 * packs it (Open MPI's binding refuses such calls unless mpi_param_check is off).
 * Decided from the signature alone, so every rank with the same signature decides
 * alike whatever its layout. Pair types (MINLOC/MAXLOC) only as predefined types. */
const char *mca_coll_strata_reduction_type(struct ompi_datatype_t *dt, struct ompi_op_t *op,
                                           strata_dtype_t *sdt, strata_op_t *sop, size_t *per,
                                           int *packed, struct ompi_datatype_t **basic)
{
    const dtype_entry_t *table;
    size_t n, i, size = 0, bsize = 0;
    uint32_t used;

    *per = 1;
    *packed = 0;
    *basic = dt;
    if (NULL == dt) {
        return "invalid datatype";
    }
    if (ompi_datatype_is_predefined(dt)) {
        return mca_coll_strata_check_reduction(dt, op, sdt, sop);
    }
    used = dt->super.bdt_used;
    if (0 == used || 0 != (used & (used - 1))) {
        return "derived datatype of more than one basic type";
    }
    table = dtype_table(&n);
    for (i = 0; i < n; ++i) {
        struct ompi_datatype_t *t = table[i].type;
        if (table[i].kind != KIND_FLOAT_INT && table[i].kind != KIND_2INT &&
            t->super.bdt_used == used && NULL == mca_coll_strata_check_reduction(t, op, sdt, sop)) {
            break;
        }
    }
    if (i == n) {
        return "derived datatype of a basic type without a strata kernel for this op";
    }
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_type_size(table[i].type, &bsize);
    if (0 == bsize || 0 != size % bsize) {
        return "derived datatype of a basic type without a strata kernel for this op";
    }
    *per = size / bsize;
    *packed = 1;
    *basic = table[i].type;
    return NULL;
}

const char *mca_coll_strata_check_bytes(struct ompi_datatype_t *dt, mca_coll_strata_count_t count,
                                        size_t *bytes)
{
    size_t size = 0;
    ptrdiff_t lb = 0, extent = 0, tlb = 0, textent = 0;

    if (NULL == dt || count < 0) {
        return "invalid datatype";
    }
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &tlb, &textent);
    /* One gap-free block that starts at the buffer and whose blocks tile by size. */
    if (0 != lb || 0 != tlb || (ptrdiff_t) size != extent || (ptrdiff_t) size != textent ||
        !ompi_datatype_is_contiguous_memory_layout(dt, count > 0 ? count : 1)) {
        return "non-contiguous datatype";
    }
    *bytes = size * (size_t) count;
    return NULL;
}

void mca_coll_strata_log_fallback(mca_coll_strata_module_t *m, const char *coll,
                                  size_t bytes, const char *why)
{
    if (mca_coll_strata_why_core_declined == why) {
        return;
    }
    strata_team_count_handback(m->team, STRATA_HANDBACK_UNSUPPORTED);
    if (mca_coll_strata_component.verbose >= 2 && !strata_log_is_quiet()) {
        opal_output(mca_coll_strata_component.output,
                    "coll:strata: %d: %s %zu B cid %d: fallback (%s)",
                    ompi_comm_rank((ompi_communicator_t *) &ompi_mpi_comm_world), coll, bytes,
                    MCA_COLL_STRATA_CID(m->comm), why);
    }
}

/* The application's calls come through an MPI binding (MPI_Allreduce, PMPI_Allreduce,
 * MPIX_Allreduce_init: the exported symbol dladdr finds at the caller's address), Open MPI's own from inside
 * libmpi (its hidden functions, where dladdr finds the library but no symbol; or an
 * exported one such as ompi_comm_split). A caller outside libmpi is the application's
 * (a static libmpi too: logged). A handful of call sites make every call: their
 * answers are kept per thread. */
static int called_through_binding(const void *caller)
{
    enum { SEEN = 8 };
    static __thread const void *seen[SEEN];
    static __thread int answer[SEEN];
    static __thread unsigned next;
    Dl_info info, mpi;
    int i, app = 1;

    for (i = 0; i < SEEN; ++i) {
        if (seen[i] == caller) {
            return answer[i];
        }
    }
    /* libmpi is where a function of its own lives (not its data: an executable may hold
     * a copy of MPI_COMM_WORLD's object, and addresses of MPI_ functions a PLT entry) */
    if (0 != dladdr(caller, &info) && 0 != dladdr((const void *) (uintptr_t) &ompi_comm_split, &mpi) &&
        info.dli_fbase == mpi.dli_fbase) {
        const char *n = NULL != info.dli_sname ? info.dli_sname : "";
        n += 'P' == n[0];   /* PMPI_, PMPIX_ */
        app = 0 == strncmp(n, "MPI_", 4) || 0 == strncmp(n, "MPIX_", 5);
    }
    seen[next % SEEN] = caller;
    answer[next % SEEN] = app;
    ++next;
    return app;
}

/* Whether the entry point this thread is in was called by Open MPI itself. */
static __thread int entered_internal;

int mca_coll_strata_entered_internal(void)
{
    return entered_internal;
}

int mca_coll_strata_enter(const void *caller)
{
    static int level = -1;   /* the core's log level as last set; a stale read only sets it again */
    const mca_coll_strata_component_t *cs = &mca_coll_strata_component;
    int quiet;

    if (level != cs->verbose) {
        level = cs->verbose;
        strata_set_log_level(level);
    }
    entered_internal = !called_through_binding(caller);
    strata_stack_call(entered_internal);
    quiet = cs->verbose >= 2 && !cs->verbose_internal && entered_internal;
    strata_log_quiet(quiet);
    return quiet;
}

/* The help topic of a failed call: the rank whose own call failed says why; its peers
 * only heard of it, or gave up waiting (each topic aggregates on its own). */
static const char *call_failed_topic(strata_status_t st)
{
    switch (st) {
    case STRATA_ERR_PEER:    return "call failed on a peer";
    case STRATA_ERR_TIMEOUT: return "call timed out";
    default:                 return "call failed";
    }
}

int mca_coll_strata_status_to_mpi(strata_status_t st, mca_coll_strata_module_t *m, const char *coll)
{
    const char *detail;
    int err;
    switch (st) {
    case STRATA_OK:
    case STRATA_FALLBACK:
        return MPI_SUCCESS;
    case STRATA_ERR_ARG:         err = MPI_ERR_ARG; break;
    case STRATA_ERR_BUFFER:      err = MPI_ERR_BUFFER; break;
    case STRATA_ERR_TRUNCATE:    err = MPI_ERR_TRUNCATE; break;
    case STRATA_ERR_NOMEM:       err = MPI_ERR_NO_MEM; break;
    case STRATA_ERR_UNSUPPORTED: err = MPI_ERR_UNSUPPORTED_OPERATION; break;
    case STRATA_ERR_PEER:
    case STRATA_ERR_TIMEOUT:
    case STRATA_ERR_BROKEN:      err = MPI_ERR_OTHER; break;
    case STRATA_ERR_SYS:
    case STRATA_ERR_COMM:
    case STRATA_ERR_DEVICE:
    case STRATA_ERR_INTERNAL:
    default:                     err = MPI_ERR_INTERN; break;
    }
    /* One line that says what was wrong, on every rank that returns an error (the
     * communicator's error handler then decides what happens). */
    detail = strata_team_last_error(m->team);
    if (STRATA_ERR_BROKEN == st) {
        mca_coll_strata_warn("call refused", "rank %d: %s on communicator %s (cid %d) refused: an earlier call "
                             "on it failed (%s); this communicator takes no more collectives",
                             ompi_comm_rank(m->comm), coll, m->comm->c_name, MCA_COLL_STRATA_CID(m->comm),
                             '\0' != detail[0] ? detail : "see above");
    } else {
        mca_coll_strata_warn(call_failed_topic(st), "rank %d: %s on communicator %s (cid %d) failed: %s",
                             ompi_comm_rank(m->comm), coll, m->comm->c_name, MCA_COLL_STRATA_CID(m->comm),
                             '\0' != detail[0] ? detail : strata_status_name(st));
    }
    return err;
}

int mca_coll_strata_fail(mca_coll_strata_module_t *m, strata_coll_t coll, const char *name,
                         strata_status_t st, const char *why, size_t call_bytes, int *served)
{
    return mca_coll_strata_fail_reduction(m, coll, name, st, why, call_bytes, STRATA_BYTE, STRATA_OP_SUM, served);
}

int mca_coll_strata_fail_reduction(mca_coll_strata_module_t *m, strata_coll_t coll, const char *name,
                                   strata_status_t st, const char *why, size_t call_bytes,
                                   strata_dtype_t dtype, strata_op_t op, int *served)
{
    st = strata_fail_call(m->team, coll, st, why, call_bytes, dtype, op);
    *served = STRATA_FALLBACK != st;
    return mca_coll_strata_status_to_mpi(st, m, name);
}

/* ---------------------------------------------------------------- packing */

/* count elements of dt <-> their size x count packed bytes (to_packed says which way). */
static int convert(const void *buf, int count, struct ompi_datatype_t *dt, void *packed, int to_packed)
{
    size_t size = 0;
    ompi_datatype_type_size(dt, &size);
    if (0 == count || 0 == size) {
        return MPI_SUCCESS;
    }
    if ((size_t) count * size > (size_t) INT_MAX) {
        return MPI_ERR_COUNT;
    }
    return to_packed ? mca_coll_strata_pack_block(buf, count, dt, packed, (int) ((size_t) count * size), MPI_BYTE)
                     : mca_coll_strata_pack_block(packed, (int) ((size_t) count * size), MPI_BYTE, (void *) buf,
                                                  count, dt);
}

int mca_coll_strata_pack(const void *buf, int count, struct ompi_datatype_t *dt, void *out)
{
    return convert(buf, count, dt, out, 1);
}

int mca_coll_strata_unpack(const void *in, void *buf, int count, struct ompi_datatype_t *dt)
{
    return convert(buf, count, dt, (void *) in, 0);
}

/* ---------------------------------------------------------------- a call's packed copies */

char *mca_coll_strata_packing_mem(mca_coll_strata_packing_t *pk, size_t bytes)
{
    char **mem = realloc(pk->mem, (size_t) (pk->nmem + 1) * sizeof *mem);
    if (NULL == mem) {
        return NULL;
    }
    pk->mem = mem;
    mem[pk->nmem] = malloc(bytes > 0 ? bytes : 1);
    return mem[pk->nmem] ? mem[pk->nmem++] : NULL;
}

int mca_coll_strata_packing_add(mca_coll_strata_packing_t *pk, int at_start, void *user, int count,
                                struct ompi_datatype_t *dt, char *packed)
{
    mca_coll_strata_layout_t **list = at_start ? &pk->pack : &pk->unpack;
    int *n = at_start ? &pk->npack : &pk->nunpack;
    mca_coll_strata_layout_t *l = realloc(*list, (size_t) (*n + 1) * sizeof *l);
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

void *mca_coll_strata_packing_as_bytes(mca_coll_strata_packing_t *pk, const void *buf, int count,
                                       struct ompi_datatype_t *dt, int in, int out)
{
    size_t bytes = 0, size = 0;
    char *p;
    if (NULL == mca_coll_strata_check_bytes(dt, count, &bytes) || NULL == buf) {
        return (void *) buf;
    }
    ompi_datatype_type_size(dt, &size);
    p = mca_coll_strata_packing_mem(pk, size * (size_t) count);
    if (NULL == p || (in && !mca_coll_strata_packing_add(pk, 1, (void *) buf, count, dt, p)) ||
        (out && !mca_coll_strata_packing_add(pk, 0, (void *) buf, count, dt, p))) {
        return NULL;
    }
    return p;
}

int mca_coll_strata_packing_pack(const mca_coll_strata_packing_t *pk)
{
    int i, rc = MPI_SUCCESS;
    for (i = 0; MPI_SUCCESS == rc && i < pk->npack; ++i) {
        const mca_coll_strata_layout_t *l = &pk->pack[i];
        rc = mca_coll_strata_pack(l->user, l->count, l->dt, l->packed);
    }
    return rc;
}

int mca_coll_strata_packing_unpack(const mca_coll_strata_packing_t *pk)
{
    int i, rc = MPI_SUCCESS;
    for (i = 0; MPI_SUCCESS == rc && i < pk->nunpack; ++i) {
        const mca_coll_strata_layout_t *l = &pk->unpack[i];
        rc = mca_coll_strata_unpack(l->packed, l->user, l->count, l->dt);
    }
    return rc;
}

void mca_coll_strata_packing_free(mca_coll_strata_packing_t *pk)
{
    int i;
    for (i = 0; i < pk->nmem; ++i) {
        free(pk->mem[i]);
    }
    free(pk->mem);
    for (i = 0; i < pk->npack; ++i) {
        OBJ_RELEASE(pk->pack[i].dt);
    }
    for (i = 0; i < pk->nunpack; ++i) {
        OBJ_RELEASE(pk->unpack[i].dt);
    }
    free(pk->pack);
    free(pk->unpack);
    memset(pk, 0, sizeof *pk);
}
