/* mpi_check.c: PASS/FAIL lines of the multi-rank test programs (see mpi_check.h). */
#include "mpi_check.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>

int world_rank, world_size, failures;

void check(int cond, const char *fmt, ...)
{
    int all = cond ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) failures++;
    if (world_rank != 0) return;
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("%s W=%d: %s\n", all ? "PASS" : "FAIL", world_size, msg);
    fflush(stdout);
}
