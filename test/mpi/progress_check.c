/* A rank blocked in strata's blocking allreduce must still progress libnbc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static void mysum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void) dt; for (int i = 0; i < *len; i++) ((int *) inout)[i] += ((int *) in)[i];
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op; MPI_Op_create(mysum, 1, &op);
    int n = 1 << 16, bad = 0;
    int *a = malloc(n * sizeof(int)), *b = malloc(n * sizeof(int)), *x = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) { a[i] = rank; x[i] = 1; }
    MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);   /* sets strata up */
    for (int i = 0; i < n; i++) x[i] = 1;
    MPI_Request r;
    MPI_Iallreduce(a, b, n, MPI_INT, op, MPI_COMM_WORLD, &r);            /* user op: libnbc */
    if (rank != size - 1) {
        MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    for (int i = 0; i < n; i++) bad += b[i] != size * (size - 1) / 2 || x[i] != size;
    printf("rank %d bad %d\n", rank, bad);
    MPI_Op_free(&op);
    MPI_Finalize();
    return bad != 0;
}
