/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_strata_bcast.c - MPI_Bcast entry point.
 *
 * Bcast moves bytes, so strata serves every datatype: one whose elements form one
 * gap-free block goes straight to the core, any other is packed into a contiguous
 * copy (at the root) and unpacked after (elsewhere). Which of the two a rank does
 * depends on its own datatype only and changes nothing its peers see, so ranks may
 * pass different layouts of the same signature (MPI allows it).
 */
#include "coll_strata.h"

#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"

int mca_coll_strata_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    MCA_COLL_STRATA_ENTER;
    mca_coll_strata_module_t *m = (mca_coll_strata_module_t *) module;
    size_t bytes = 0;
    char *packed = NULL;
    strata_status_t st;
    int rc, served = 1;

    if (NULL != mca_coll_strata_check_bytes(dtype, count, &bytes)) {
        ompi_datatype_type_size(dtype, &bytes);
        bytes *= (size_t) count;
        if (bytes > 0 && NULL != buf) {
            packed = malloc(bytes);
            if (NULL == packed) {
                rc = mca_coll_strata_fail(m, STRATA_COLL_BCAST, "bcast", STRATA_ERR_NOMEM,
                                          "no memory to pack a non-contiguous datatype", bytes, &served);
                return served ? rc : mca_coll_strata_prev_bcast(m, buf, count, dtype, root);
            }
            rc = ompi_comm_rank(comm) == root ? mca_coll_strata_pack(buf, count, dtype, packed)
                                              : MPI_SUCCESS;
            if (MPI_SUCCESS != rc) {
                free(packed);
                rc = mca_coll_strata_fail(m, STRATA_COLL_BCAST, "bcast", STRATA_ERR_ARG,
                                          "packing the datatype failed (more than 2 GiB?)", bytes, &served);
                return served ? rc : mca_coll_strata_prev_bcast(m, buf, count, dtype, root);
            }
        }
    }
    st = strata_bcast(m->team, NULL != packed ? packed : buf, bytes, root);
    if (STRATA_FALLBACK == st) {
        free(packed);
        mca_coll_strata_log_fallback(m, "bcast", bytes, mca_coll_strata_why_core_declined);
        return mca_coll_strata_prev_bcast(m, buf, count, dtype, root);
    }
    rc = mca_coll_strata_status_to_mpi(st, m, "bcast");
    if (NULL != packed && MPI_SUCCESS == rc && ompi_comm_rank(comm) != root) {
        rc = mca_coll_strata_unpack(packed, buf, count, dtype);
    }
    free(packed);
    return rc;
}
