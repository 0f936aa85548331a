/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_allgather.c - MPI_Allgather and MPI_Allgatherv entry points.
 *
 * Both move bytes and reach the core as strata_allgatherv's byte counts and offsets
 * (allgather is its uniform case). Every datatype is served, so whether strata runs
 * never depends on one rank's layout:
 *  - a receive datatype whose elements form one gap-free block is used in place,
 *    at any displacements (negative ones too: the core gets the lowest block as its
 *    base and offsets from there);
 *  - any other receive datatype gets a packed receive buffer (blocks one after the
 *    other) that is unpacked into the user's buffer after the call;
 *  - a send datatype with gaps is packed straight into this rank's block, which
 *    makes the call an in-place one.
 * Send and receive sizes that differ are an error of this rank, reported to all.
 */
#include "coll_strata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"

/* Puts this rank's contribution into its block (at block, bytes long, laid out as
 * the core sees it) unless it is already there: packs the send buffer, or in place
 * with a packed receive buffer, this rank's block of the user's receive buffer.
 * NULL when done (*core_sbuf: the send buffer for the core), else why not. */
static const char *own_block(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             const void *user_block, int rcount, struct ompi_datatype_t *rdtype,
                             int recv_packed, char *block, size_t bytes, const void **core_sbuf,
                             strata_status_t *st)
{
    size_t sbytes = 0;
    *core_sbuf = STRATA_IN_PLACE;
    *st = STRATA_ERR_ARG;
    if (MPI_IN_PLACE == sbuf) {
        if (!recv_packed || 0 == bytes) {
            return NULL;
        }
        if (NULL == user_block) {
            *st = STRATA_ERR_BUFFER;
            return "the receive buffer is NULL";
        }
        return MPI_SUCCESS == mca_coll_strata_pack(user_block, rcount, rdtype, block)
                   ? NULL : "packing the receive datatype failed";
    }
    ompi_datatype_type_size(sdtype, &sbytes);
    if (sbytes * (size_t) scount != bytes) {
        *st = STRATA_ERR_TRUNCATE;
        return "the send and receive sizes of this rank differ";
    }
    if (!recv_packed && NULL == mca_coll_strata_check_bytes(sdtype, scount, &sbytes)) {
        *core_sbuf = sbuf;   /* straight from the user's send buffer */
        return NULL;
    }
    if (0 == bytes) {
        return NULL;
    }
    if (NULL == sbuf) {
        *st = STRATA_ERR_BUFFER;
        return "the send buffer is NULL (MPI_IN_PLACE is not NULL)";
    }
    if (NULL == block) {
        *st = STRATA_ERR_BUFFER;
        return "the receive buffer is NULL";
    }
    return MPI_SUCCESS == mca_coll_strata_pack(sbuf, scount, sdtype, block)
               ? NULL : "packing the send datatype failed (more than 2 GiB?)";
}

/* The shared body: n blocks of rcounts[i] rdtype elements at disps[i] extents. */
static int allgather_any(mca_coll_strata_module_t *m, const char *name, const void *sbuf, int scount,
                         struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *disps, struct ompi_datatype_t *rdtype, int *served, int *now_in_place)
{
    int i, n = ompi_comm_size(m->comm), rank = ompi_comm_rank(m->comm), most = 0, rc = MPI_SUCCESS;
    size_t size = 0, total = 0, scratch, call_bytes = 0;
    ptrdiff_t lb = 0, extent = 0, lo = 0;
    size_t *bytes = mca_coll_strata_counts(m, MCA_COLL_STRATA_COUNTS_SIZE, 2 * (size_t) n * sizeof(size_t)), *displs;
    char *packed = NULL, *base = (char *) rbuf;
    const void *core_sbuf = STRATA_IN_PLACE;
    const char *why;
    strata_status_t st;
    int recv_packed;

    *served = 1;
    *now_in_place = 0;
    ompi_datatype_type_size(rdtype, &size);
    for (i = 0; i < n; ++i) {
        call_bytes += (size_t) rcounts[i] * size;
    }
    if (NULL == bytes) {
        return mca_coll_strata_fail(m, STRATA_COLL_ALLGATHER, name, STRATA_ERR_NOMEM, "no memory for the counts",
                                    call_bytes, served);
    }
    displs = bytes + n;
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    for (i = 0; i < n; ++i) {
        most = rcounts[i] > most ? rcounts[i] : most;
        bytes[i] = (size_t) rcounts[i] * size;
        total += bytes[i];
    }
    recv_packed = NULL != mca_coll_strata_check_bytes(rdtype, most, &scratch);
    if (recv_packed) {
        /* Blocks one after the other in a packed copy. */
        size_t at = 0;
        for (i = 0; i < n; ++i) {
            displs[i] = at;
            at += bytes[i];
        }
        packed = malloc(total > 0 ? total : 1);
        if (NULL == packed) {
            return mca_coll_strata_fail(m, STRATA_COLL_ALLGATHER, name, STRATA_ERR_NOMEM,
                                        "no memory to pack a non-contiguous datatype", call_bytes, served);
        }
        base = packed;
    } else {
        /* In place at the user's displacements, from the lowest one. */
        for (i = 0; i < n; ++i) {
            ptrdiff_t d = (ptrdiff_t) disps[i] * extent;
            lo = (0 == i || d < lo) ? d : lo;
        }
        for (i = 0; i < n; ++i) {
            displs[i] = (size_t) ((ptrdiff_t) disps[i] * extent - lo);
        }
        base = NULL != rbuf ? (char *) rbuf + lo : NULL;
    }
    why = own_block(sbuf, scount, sdtype,
                    NULL != rbuf ? (char *) rbuf + (ptrdiff_t) disps[rank] * extent : NULL, rcounts[rank],
                    rdtype, recv_packed, NULL != base ? base + displs[rank] : NULL, bytes[rank], &core_sbuf,
                    &st);
    if (NULL != why) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_ALLGATHER, name, st, why, call_bytes, served);
        *now_in_place = 0;
    } else {
        st = strata_allgatherv(m->team, core_sbuf, base, bytes, displs);
        if (STRATA_OK == st && 0 != strcmp(name, "allgather")) {
            mca_coll_strata_log_variant(m, STRATA_COLL_ALLGATHER, name, total, "");
        }
        if (STRATA_FALLBACK == st) {
            *served = 0;
            /* This rank's block may already be packed into rbuf: in place from here. */
            *now_in_place = MPI_IN_PLACE != sbuf && STRATA_IN_PLACE == core_sbuf && !recv_packed;
        } else {
            rc = mca_coll_strata_status_to_mpi(st, m, name);
        }
    }
    for (i = 0; recv_packed && *served && MPI_SUCCESS == rc && i < n; ++i) {
        rc = mca_coll_strata_unpack(packed + displs[i], (char *) rbuf + (ptrdiff_t) disps[i] * extent,
                                    rcounts[i], rdtype);
    }
    free(packed);
    return rc;
}

int mca_coll_strata_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, n = ompi_comm_size(comm), served, in_place, rc;
    int *counts = mca_coll_strata_counts(m, MCA_COLL_STRATA_COUNTS_INT, 2 * (size_t) n * sizeof(int));
    size_t size = 0;

    ompi_datatype_type_size(rdtype, &size);
    if (NULL == counts) {
        rc = mca_coll_strata_fail(m, STRATA_COLL_ALLGATHER, "allgather", STRATA_ERR_NOMEM,
                                  "no memory for the counts", size * (size_t) rcount * (size_t) n, &served);
        if (served) {
            return rc;
        }
        return mca_coll_strata_prev_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    }
    for (i = 0; i < n; ++i) {
        counts[i] = rcount;
        counts[n + i] = i * rcount;
    }
    rc = allgather_any(m, "allgather", sbuf, scount, sdtype, rbuf, counts, counts + n, rdtype, &served,
                       &in_place);
    if (served) {
        return rc;
    }
    mca_coll_strata_log_fallback(m, "allgather", size * (size_t) rcount * (size_t) n,
                                 mca_coll_strata_why_core_declined);
    return mca_coll_strata_prev_allgather(m, in_place ? MPI_IN_PLACE : sbuf, scount, sdtype, rbuf, rcount,
                                          rdtype);
}

int mca_coll_strata_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *disps,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, served, in_place, rc;
    size_t size = 0, total = 0;

    rc = allgather_any(m, "allgatherv", sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, &served,
                       &in_place);
    if (served) {
        return rc;
    }
    ompi_datatype_type_size(rdtype, &size);
    for (i = 0; i < ompi_comm_size(comm); ++i) {
        total += (size_t) rcounts[i] * size;
    }
    mca_coll_strata_log_fallback(m, "allgatherv", total, mca_coll_strata_why_core_declined);
    return mca_coll_strata_prev_allgatherv(m, in_place ? MPI_IN_PLACE : sbuf, scount, sdtype, rbuf, rcounts,
                                           disps, rdtype);
}
