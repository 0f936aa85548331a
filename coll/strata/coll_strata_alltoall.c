/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_alltoall.c - MPI_Alltoall and MPI_Alltoallv entry points.
 *
 * Both move bytes, and both serve every datatype, so whether strata runs never
 * depends on one rank's layout. A side (send or receive) whose datatype is one
 * gap-free element with extent == size is used in place at the user's displacements
 * (negative ones included: the lowest block becomes the base); any other is packed
 * into a copy of its blocks one after the other (and the receive copy unpacked after
 * the call). Alltoall is the uniform case of alltoallv in the core.
 */
#include "coll_strata.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

/* One side of the call as the core sees it. */
typedef struct side {
    char *base;       /* what the core gets: the user's buffer from its lowest block, or packed */
    char *packed;     /* malloc'ed packed copy, or NULL */
    size_t *bytes, *displs;
    size_t total;
} side_t;

/* Lays out n blocks of counts[i] dt elements at disps[i] extents of buf. */
static const char *side_make(side_t *sd, void *buf, int n, const int *counts, const int *disps,
                             struct ompi_datatype_t *dt, int pack_in, strata_status_t *st)
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
    for (i = 0; i < n; ++i) {
        sd->displs[i] = at;
        at += sd->bytes[i];
    }
    sd->packed = malloc(at > 0 ? at : 1);
    if (NULL == sd->packed) {
        return "no memory to pack a non-contiguous datatype";
    }
    sd->base = sd->packed;
    if (pack_in && at > 0) {
        if (NULL == buf) {
            *st = STRATA_ERR_BUFFER;
            return "a buffer with bytes to move is NULL";
        }
        for (i = 0; i < n; ++i) {
            if (MPI_SUCCESS != mca_coll_strata_pack((char *) buf + (ptrdiff_t) disps[i] * extent, counts[i], dt,
                                                    sd->packed + sd->displs[i])) {
                *st = STRATA_ERR_ARG;
                return "packing the datatype failed (more than 2 GiB?)";
            }
        }
    }
    return NULL;
}

static int side_unpack(const side_t *sd, void *buf, int n, const int *counts, const int *disps,
                       struct ompi_datatype_t *dt)
{
    ptrdiff_t lb = 0, extent = 0;
    int i, rc = MPI_SUCCESS;
    if (NULL == sd->packed) {
        return MPI_SUCCESS;
    }
    ompi_datatype_get_extent(dt, &lb, &extent);
    for (i = 0; i < n && MPI_SUCCESS == rc; ++i) {
        rc = mca_coll_strata_unpack(sd->packed + sd->displs[i], (char *) buf + (ptrdiff_t) disps[i] * extent,
                                    counts[i], dt);
    }
    return rc;
}

/* The shared body. *served = 0: the core declined (nothing was touched). */
static int alltoall_any(mca_coll_strata_module_t *m, const char *name, const void *sbuf, const int *scounts,
                        const int *sdisps, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                        const int *rdisps, struct ompi_datatype_t *rdtype, int uniform, int *served)
{
    int n = ompi_comm_size(m->comm), in_place = MPI_IN_PLACE == sbuf, rc = MPI_SUCCESS;
    size_t *v = mca_coll_strata_counts(m, MCA_COLL_STRATA_COUNTS_SIZE, 4 * (size_t) n * sizeof(size_t));
    side_t s = { NULL, NULL, NULL, NULL, 0 }, r = { NULL, NULL, NULL, NULL, 0 };
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
    r.bytes = v + 2 * n;
    r.displs = v + 3 * n;
    why = side_make(&r, rbuf, n, rcounts, rdisps, rdtype, in_place, &st);
    if (NULL == why && !in_place) {
        s.bytes = v;
        s.displs = v + n;
        why = side_make(&s, (void *) sbuf, n, scounts, sdisps, sdtype, 1, &st);
        if (NULL == why && uniform && s.total != r.total) {
            st = STRATA_ERR_TRUNCATE;
            why = "the send and receive sizes of this rank differ";
        }
    }
    if (NULL != why) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_ALLTOALL, name, st, why, call_bytes, served);
    } else {
        if (uniform) {
            st = strata_alltoall(m->team, in_place ? STRATA_IN_PLACE : s.base, r.base, r.bytes[0]);
        } else {
            st = strata_alltoallv(m->team, in_place ? STRATA_IN_PLACE : s.base, s.bytes, s.displs, r.base,
                                  r.bytes, r.displs);
        }
        if (STRATA_OK == st && !uniform) {
            mca_coll_strata_log_variant(m, STRATA_COLL_ALLTOALL, name, r.total, "");
        }
        if (STRATA_FALLBACK == st) {
            *served = 0;
        } else {
            rc = mca_coll_strata_status_to_mpi(st, m, name);
            if (MPI_SUCCESS == rc) {
                rc = side_unpack(&r, rbuf, n, rcounts, rdisps, rdtype);
            }
        }
    }
    free(s.packed);
    free(r.packed);
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
