/* mpi.c (device double): a CUDA-aware MPI, on request. CUDA_DOUBLE_CUDA_AWARE=1 makes
 * MPIX_Query_cuda_support() answer 1 and lets MPI_Isend and MPI_Irecv take device memory (the
 * double passes its writable view to MPI); otherwise MPI answers 0, as Debian's Open MPI
 * does, and device memory given to either call is named as the error it would be (a real MPI
 * would fault on it). Interposed through the MPI profiling interface (PMPI_*). */
#include "double.h"

#include <mpi.h>

int MPIX_Query_cuda_support(void);

static int cuda_aware(void)
{
    return dd_env("CUDA_DOUBLE_CUDA_AWARE", 0) == 1;
}

int MPIX_Query_cuda_support(void)
{
    return cuda_aware();
}

/* buf as MPI may use it: itself, or device memory's view when MPI is CUDA-aware; NULL
 * after naming device memory given to an MPI that is not. */
static void *for_mpi(const void *buf, int count, MPI_Datatype type, const char *call)
{
    if (count <= 0 || dd_kind(buf) != 1) return (void *)buf;
    int size = 0;
    PMPI_Type_size(type, &size);
    if (cuda_aware()) return dd_dev(buf, (size_t)count * (size_t)size, call);
    dd_fail(cudaErrorIllegalAddress, "%s: device memory %p given to an MPI that is not CUDA-aware",
            call, buf);
    return NULL;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    const void *b = for_mpi(buf, count, type, "MPI_Isend");
    if (!b && buf) return MPI_ERR_BUFFER;
    return PMPI_Isend(b, count, type, dest, tag, comm, req);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    void *b = for_mpi(buf, count, type, "MPI_Irecv");
    if (!b && buf) return MPI_ERR_BUFFER;
    return PMPI_Irecv(b, count, type, source, tag, comm, req);
}
