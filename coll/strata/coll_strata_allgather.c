/*
 * coll_strata_allgather.c - MPI_Allgather and MPI_Allgatherv entry points.
 *
 * Allgather moves bytes, so any datatype whose elements form one gap-free block
 * qualifies. Allgatherv has no strata algorithm: it is overridden only so that
 * device buffers can be staged for the previous module later.
 */
#include "coll_strata.h"

#include "ompi/datatype/ompi_datatype.h"

/* The core call; one line to enable when strata_allgather lands (issue 3). */
static strata_status_t allgather_core(mca_coll_strata_module_t *m, const void *sbuf, void *rbuf,
                                      size_t bytes_per_rank, const char **why)
{
    (void) m; (void) sbuf; (void) rbuf; (void) bytes_per_rank;
    *why = mca_coll_strata_why_core_pending;   /* core algorithm lands with issue 3 */
    return STRATA_FALLBACK;
    /* return strata_allgather(m->team, sbuf, rbuf, bytes_per_rank); */
}

int mca_coll_strata_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
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
        strata_status_t st = allgather_core(m, in_place ? NULL : sbuf, rbuf, rbytes, &why);
        if (STRATA_FALLBACK != st) {
            return mca_coll_strata_status_to_mpi(st, comm, "allgather");
        }
        if (NULL == why) {
            why = mca_coll_strata_why_core_declined;
        }
    }
    mca_coll_strata_log_fallback(comm, "allgather", rbytes * (size_t) ompi_comm_size(comm), why);
    return m->prev.allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             m->prev.allgather_module);
}

int mca_coll_strata_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *disps,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *module)
{
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    size_t size = 0;
    int i;
    size_t total = 0;

    ompi_datatype_type_size(rdtype, &size);
    for (i = 0; i < ompi_comm_size(comm); ++i) {
        total += (size_t) rcounts[i] * size;
    }
    mca_coll_strata_log_fallback(comm, "allgatherv", total, mca_coll_strata_why_not_in_strata);
    return m->prev.allgatherv(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm,
                              m->prev.allgatherv_module);
}
