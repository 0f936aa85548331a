/*
 * coll_strata_alltoall.c - MPI_Alltoall and MPI_Alltoallv entry points.
 *
 * Alltoall moves bytes: any gap-free datatype qualifies. Alltoallv has no strata
 * algorithm: it is overridden only so that device buffers can be staged later.
 */
#include "coll_strata.h"

#include "ompi/datatype/ompi_datatype.h"

/* The core call; one line to enable when strata_alltoall lands (issue 3). */
static strata_status_t alltoall_core(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf,
                                     size_t bytes_per_rank, const char **why)
{
    (void) m; (void) sbuf; (void) rbuf; (void) bytes_per_rank;
    *why = mca_coll_strata_why_core_pending;   /* core algorithm lands with issue 3 */
    return STRATA_FALLBACK;
    /* return strata_alltoall(m->team, sbuf, rbuf, bytes_per_rank); */
}

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
        why = mca_coll_strata_check_buffers(in_place ? NULL : sbuf, rbuf);
    }
    if (NULL == why) {
        strata_status_t st = alltoall_core(m, in_place ? NULL : sbuf, rbuf, rbytes, &why);
        if (STRATA_FALLBACK != st) {
            return mca_coll_strata_status_to_mpi(st, comm, "alltoall");
        }
        if (NULL == why) {
            why = mca_coll_strata_why_core_declined;
        }
    }
    mca_coll_strata_log_fallback(comm, "alltoall", rbytes * (size_t) ompi_comm_size(comm), why);
    return m->prev.alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                            m->prev.alltoall_module);
}

int mca_coll_strata_alltoallv(const void *sbuf, const int *scounts, const int *sdisps,
                              struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                              const int *rdisps, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    size_t size = 0, total = 0;
    int i;

    ompi_datatype_type_size(rdtype, &size);
    for (i = 0; i < ompi_comm_size(comm); ++i) {
        total += (size_t) rcounts[i] * size;
    }
    mca_coll_strata_log_fallback(comm, "alltoallv", total, mca_coll_strata_why_not_in_strata);
    return m->prev.alltoallv(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, comm,
                             m->prev.alltoallv_module);
}
