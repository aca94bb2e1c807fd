/* bootstrap.h: what the resource manager says about this process (not installed). */
#ifndef HPCTI_BOOTSTRAP_H
#define HPCTI_BOOTSTRAP_H

#include "../core/core.h"

/* Facts learned before (or without) MPI; the comm layer turns them into communicators. */
struct hpcti_boot {
    hpct_topo_source_t source;
    int have_node_key; /* 1 when node_key names this process's node (pmix, slurm-env) */
    long node_key;     /* resource manager's node id */
    int rank, size;    /* launcher's view (for the log and a cross-check); -1 if unknown */
    int local_rank, local_size;
    int ranks_per_node; /* HPCT_RANKS_PER_NODE override; 0 = none */
    char hostname[256];
    char job_id[128];
    int pmix_up; /* 1 when PMIx_Init succeeded (PMIx_Finalize at release) */
};

/* Probe PMIx, then Open MPI variables, then Slurm variables, else single process. */
HPCTI_CHECK hpct_status_t hpcti_bootstrap_probe(hpct_ctx_t ctx, struct hpcti_boot *boot);
/* Release what the probe holds (PMIx). */
void hpcti_bootstrap_release(struct hpcti_boot *boot);
/* The PMIx library's own version string ("OpenPMIx 4.2.2 ..."), static. */
const char *hpcti_pmix_version(void);
/* Static name of a topology source ("pmix", "openmpi-env", ...). */
const char *hpcti_topo_source_name(hpct_topo_source_t source);

#endif
