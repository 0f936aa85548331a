/*
 * coll_strata_alltoall.c - MPI_Alltoall and MPI_Alltoallv entry points.
 *
 * Both move bytes: any gap-free datatype qualifies (for alltoallv one whose extent
 * equals its size, so counts and displacements convert to bytes). Alltoall is the
 * uniform case of alltoallv in the core.
 */
#include "coll_strata.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

int mca_coll_strata_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int in_place = MPI_IN_PLACE == sbuf;
    size_t rbytes = 0, sbytes = 0;
    const char *why;

    why = mca_coll_strata_check_bytes(rdtype, rcount, &rbytes);
    if (NULL == why && !in_place) {
        why = mca_coll_strata_check_bytes(sdtype, scount, &sbytes);
        if (NULL == why && sbytes != rbytes) {
            why = "send and receive sizes differ";
        }
    }
    if (NULL == why) {
        strata_status_t st = strata_alltoall(m->team, in_place ? NULL : sbuf, rbuf, rbytes);
        if (STRATA_FALLBACK != st) {
            return mca_coll_strata_status_to_mpi(st, comm, "alltoall");
        }
        why = mca_coll_strata_why_core_declined;
    }
    mca_coll_strata_log_fallback(comm, "alltoall", rbytes * (size_t) ompi_comm_size(comm), why);
    return mca_coll_strata_prev_alltoall(m, sbuf, scount, sdtype, rbuf, rcount, rdtype);
}

/* Converts alltoallv's element counts and displacements to bytes and runs the core.
 * Returns NULL when the call was served (*rc set), else why it was not. */
static const char *alltoallv_core(mca_coll_strata_module_t *m, const void *sbuf, const int *scounts,
                                  const int *sdisps, size_t ssize, void *rbuf, const int *rcounts,
                                  const int *rdisps, size_t rsize, int *rc)
{
    int i, n = ompi_comm_size(m->comm), in_place = MPI_IN_PLACE == sbuf;
    size_t *v = malloc(4 * (size_t) n * sizeof(size_t)), total = 0;
    uint64_t before[MCA_COLL_STRATA_MAX_ALGS];
    strata_status_t st;

    if (NULL == v) {
        return "out of memory for byte counts";
    }
    for (i = 0; i < n; ++i) {
        v[i] = in_place ? 0 : (size_t) scounts[i] * ssize;
        v[n + i] = in_place ? 0 : (size_t) sdisps[i] * ssize;
        v[2 * n + i] = (size_t) rcounts[i] * rsize;
        v[3 * n + i] = (size_t) rdisps[i] * rsize;
        total += v[2 * n + i];
    }
    mca_coll_strata_calls_snapshot(m, STRATA_COLL_ALLTOALL, before);
    st = strata_alltoallv(m->team, in_place ? NULL : sbuf, in_place ? NULL : v,
                          in_place ? NULL : v + n, rbuf, v + 2 * n, v + 3 * n);
    free(v);
    if (STRATA_FALLBACK == st) {
        return mca_coll_strata_why_core_declined;
    }
    if (STRATA_OK == st) {
        mca_coll_strata_log_variant(m, STRATA_COLL_ALLTOALL, "alltoallv", total, before);
    }
    *rc = mca_coll_strata_status_to_mpi(st, m->comm, "alltoallv");
    return NULL;
}

int mca_coll_strata_alltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                              struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                              const int *rdisps, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    int in_place = MPI_IN_PLACE == sbuf, rc = MPI_SUCCESS;
    size_t rsize = 0, ssize = 0, total = 0;
    const char *why;
    int i;

    /* One element gap-free with extent == size: every count and displacement is then
     * a whole number of bytes. */
    why = mca_coll_strata_check_bytes(rdtype, 1, &rsize);
    if (NULL == why && !in_place) {
        why = mca_coll_strata_check_bytes(sdtype, 1, &ssize);
    }
    for (i = 0; i < ompi_comm_size(comm); ++i) {
        total += (size_t) rcounts[i] * rsize;
    }
    if (NULL == why) {
        why = alltoallv_core(m, sbuf, scounts, sdisps, ssize, rbuf, rcounts, rdisps, rsize, &rc);
        if (NULL == why) {
            return rc;
        }
    }
    mca_coll_strata_log_fallback(comm, "alltoallv", total, why);
    return mca_coll_strata_prev_alltoallv(m, sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps,
                                          rdtype);
}
