# lib/bootstrap: rank, size and node membership from PMIx (fallbacks: Open MPI and Slurm
# environments, a single process).
lib_libhpctrain_a_SOURCES += lib/bootstrap/bootstrap.h lib/bootstrap/bootstrap.c
