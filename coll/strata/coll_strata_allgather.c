/*
 * coll_strata_allgather.c - MPI_Allgather and MPI_Allgatherv entry points.
 *
 * Both move bytes, so any receive datatype whose elements form one gap-free block
 * qualifies, and both reach the core as strata_allgatherv's byte counts and
 * offsets (allgather is its uniform case). A send datatype with gaps is packed
 * straight into this rank's block of the receive buffer first, which turns the
 * call into an in-place one: then whether strata runs depends on the receive side
 * only, which MPI makes agree across ranks for the usual case of one receive type.
 */
#include "coll_strata.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

/* Checks the send side of rank `rank` against its receive block (rbytes at rblock).
 * On success *sbuf_out is the send buffer for the core (NULL: in place). */
static const char *prepare_send(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rblock, int rcount, struct ompi_datatype_t *rdtype,
                                size_t rbytes, const void **sbuf_out)
{
    size_t sbytes = 0, ssize = 0;

    *sbuf_out = NULL;
    if (MPI_IN_PLACE == sbuf) {
        return NULL;
    }
    if (NULL == mca_coll_strata_check_bytes(sdtype, scount, &sbytes)) {
        if (sbytes != rbytes) {
            return "send and receive sizes differ";
        }
        *sbuf_out = sbuf;
        return NULL;
    }
    /* Gaps in the send type: pack into place (through host memory for device
     * buffers), then run in place. */
    ompi_datatype_type_size(sdtype, &ssize);
    if (ssize * (size_t) scount != rbytes) {
        return "send and receive sizes differ";
    }
    if (OMPI_SUCCESS != mca_coll_strata_pack_block(sbuf, scount, sdtype, rblock, rcount, rdtype)) {
        return "packing the send datatype failed";
    }
    return NULL;
}

int mca_coll_strata_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    size_t rbytes = 0;
    const void *core_sbuf = NULL;
    const char *why;

    why = mca_coll_strata_check_bytes(rdtype, rcount, &rbytes);
    if (NULL == why) {
        why = prepare_send(sbuf, scount, sdtype,
                           (char *) rbuf + rbytes * (size_t) ompi_comm_rank(comm), rcount, rdtype,
                           rbytes, &core_sbuf);
    }
    if (NULL == why) {
        strata_status_t st = strata_allgather(m->team, core_sbuf, rbuf, rbytes);
        if (STRATA_FALLBACK != st) {
            return mca_coll_strata_status_to_mpi(st, comm, "allgather");
        }
        why = mca_coll_strata_why_core_declined;
        /* Nothing was touched but our own block, which a packed send put in place. */
        if (MPI_IN_PLACE != sbuf && NULL == core_sbuf) {
            sbuf = MPI_IN_PLACE;
        }
    }
    mca_coll_strata_log_fallback(comm, "allgather", rbytes * (size_t) ompi_comm_size(comm), why);
    return mca_coll_strata_prev_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype);
}

int mca_coll_strata_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *disps,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    enum { ON_STACK = 64 };
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int i, n = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    size_t stack_bytes[ON_STACK], stack_displs[ON_STACK];
    size_t *bytes = stack_bytes, *displs = stack_displs;
    size_t size = 0, total = 0;
    ptrdiff_t lb = 0, extent = 0;
    const void *core_sbuf = NULL;
    const char *why;
    int rc = MPI_SUCCESS, done = 0;

    ompi_datatype_type_size(rdtype, &size);
    ompi_datatype_get_extent(rdtype, &lb, &extent);
    for (i = 0; i < n; ++i) {
        total += (size_t) rcounts[i] * size;
    }

    /* The receive type is checked for the largest count; a gap-free type is gap-free
     * for any smaller count too. Negative displacements (legal in MPI) fall back. */
    {
        int most = 0;
        for (i = 0; i < n; ++i) {
            most = rcounts[i] > most ? rcounts[i] : most;
        }
        why = mca_coll_strata_check_bytes(rdtype, most, &size);
        if (NULL == why) {
            ompi_datatype_type_size(rdtype, &size);
        }
    }
    for (i = 0; NULL == why && i < n; ++i) {
        if (disps[i] < 0) {
            why = "negative displacement";
        }
    }
    if (NULL == why && 0 == total) {
        why = "zero counts";
    }
    if (NULL == why && n > ON_STACK) {
        bytes = (size_t *) malloc(2 * (size_t) n * sizeof(size_t));
        displs = bytes + n;
        if (NULL == bytes) {
            why = "out of memory for the counts";
        }
    }
    if (NULL == why) {
        for (i = 0; i < n; ++i) {
            bytes[i] = (size_t) rcounts[i] * size;
            displs[i] = (size_t) disps[i] * (size_t) extent;
        }
        why = prepare_send(sbuf, scount, sdtype, (char *) rbuf + displs[rank], rcounts[rank],
                           rdtype, bytes[rank], &core_sbuf);
    }
    if (NULL == why) {
        uint64_t before[MCA_COLL_STRATA_MAX_ALGS];
        strata_status_t st;
        int verbose = mca_coll_strata_component.verbose >= 2;
        if (verbose) {
            mca_coll_strata_calls_snapshot(m, STRATA_COLL_ALLGATHER, before);
        }
        st = strata_allgatherv(m->team, core_sbuf, rbuf, bytes, displs);
        if (STRATA_OK == st && verbose) {
            mca_coll_strata_log_variant(m, STRATA_COLL_ALLGATHER, "allgatherv", total, before);
        }
        if (STRATA_FALLBACK != st) {
            rc = mca_coll_strata_status_to_mpi(st, comm, "allgatherv");
            done = 1;
        } else {
            why = mca_coll_strata_why_core_declined;
            if (MPI_IN_PLACE != sbuf && NULL == core_sbuf) {
                sbuf = MPI_IN_PLACE;
            }
        }
    }
    if (bytes != stack_bytes) {
        free(bytes);
    }
    if (done) {
        return rc;
    }
    mca_coll_strata_log_fallback(comm, "allgatherv", total, why);
    return mca_coll_strata_prev_allgatherv(m, sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype);
}
