/* bootstrap.c: rank, node and job facts from PMIx, with Open MPI, Slurm and
 * single-process fallbacks (in that order; the source used is logged). */
#include "bootstrap.h"

#include <pmix.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *hpcti_topo_source_name(hpct_topo_source_t source)
{
    switch (source) {
    case HPCT_TOPO_PMIX: return "pmix";
    case HPCT_TOPO_OPENMPI_ENV: return "openmpi-env";
    case HPCT_TOPO_SLURM_ENV: return "slurm-env";
    case HPCT_TOPO_OVERRIDE: return "override";
    default: return "single";
    }
}

const char *hpcti_pmix_version(void)
{
    const char *v = PMIx_Get_version();
    return v ? v : "";
}

/* Integer value of an environment variable, or -1 when unset or not a number. */
static long env_long(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return -1;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    return (*end || errno || x < 0) ? -1 : x;
}

/* One PMIx value as an integer (uint16/uint32/int forms), or -1. */
static long pmix_long(const pmix_proc_t *proc, const char *key)
{
    pmix_value_t *v = NULL;
    if (PMIx_Get(proc, key, NULL, 0, &v) != PMIX_SUCCESS || !v) return -1;
    long x = -1;
    switch (v->type) {
    case PMIX_UINT32: x = (long)v->data.uint32; break;
    case PMIX_UINT16: x = (long)v->data.uint16; break;
    case PMIX_INT: x = (long)v->data.integer; break;
    case PMIX_PROC_RANK: x = (long)v->data.rank; break;
    default: break;
    }
    PMIX_VALUE_RELEASE(v);
    return x;
}

/* Only ask PMIx when a PMIx server launched us: a plain ./prog would wait for none. */
static int probe_pmix(hpct_ctx_t ctx, struct hpcti_boot *b)
{
    if (!getenv("PMIX_NAMESPACE") && !getenv("PMIX_RANK")) return 0;
    pmix_proc_t me;
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        hpcti_log(ctx, HPCT_LOG_WARN, "bootstrap: PMIx_Init failed (%s); trying the fallbacks",
                  PMIx_Error_string(rc));
        return 0;
    }
    b->pmix_up = 1;
    pmix_proc_t job = me;
    job.rank = PMIX_RANK_WILDCARD;
    long node = pmix_long(&me, PMIX_NODEID);
    if (node < 0) {
        hpcti_log(ctx, HPCT_LOG_WARN, "bootstrap: PMIx gives no %s; trying the fallbacks",
                  PMIX_NODEID);
        return 0;
    }
    b->have_node_key = 1;
    b->node_key = node;
    b->rank = (int)me.rank;
    b->size = (int)pmix_long(&job, PMIX_JOB_SIZE);
    b->local_rank = (int)pmix_long(&me, PMIX_LOCAL_RANK);
    b->local_size = (int)pmix_long(&job, PMIX_LOCAL_SIZE);
    snprintf(b->job_id, sizeof b->job_id, "%.127s", me.nspace);
    b->source = HPCT_TOPO_PMIX;
    return 1;
}

static int probe_openmpi_env(struct hpcti_boot *b)
{
    long lr = env_long("OMPI_COMM_WORLD_LOCAL_RANK"), ls = env_long("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (lr < 0 || ls <= 0) return 0;
    b->rank = (int)env_long("OMPI_COMM_WORLD_RANK");
    b->size = (int)env_long("OMPI_COMM_WORLD_SIZE");
    b->local_rank = (int)lr, b->local_size = (int)ls;
    b->have_node_key = 0; /* nodes = MPI shared-memory domains (MPI_Comm_split_type) */
    b->source = HPCT_TOPO_OPENMPI_ENV;
    return 1;
}

static int probe_slurm_env(struct hpcti_boot *b)
{
    long node = env_long("SLURM_NODEID");
    if (node < 0) return 0;
    b->have_node_key = 1;
    b->node_key = node;
    b->rank = (int)env_long("SLURM_PROCID");
    b->size = (int)env_long("SLURM_NTASKS");
    b->local_rank = (int)env_long("SLURM_LOCALID");
    b->local_size = -1; /* SLURM_TASKS_PER_NODE has a compressed form; counted by MPI later */
    b->source = HPCT_TOPO_SLURM_ENV;
    return 1;
}

hpct_status_t hpcti_bootstrap_probe(hpct_ctx_t ctx, struct hpcti_boot *b)
{
    memset(b, 0, sizeof *b);
    b->rank = b->size = b->local_rank = b->local_size = -1;
    if (gethostname(b->hostname, sizeof b->hostname - 1) != 0)
        snprintf(b->hostname, sizeof b->hostname, "unknown");
    if (!probe_pmix(ctx, b) && !probe_openmpi_env(b) && !probe_slurm_env(b)) {
        b->source = HPCT_TOPO_SINGLE;
        b->have_node_key = 1;
        b->node_key = 0;
    }
    const char *slurm_job = getenv("SLURM_JOB_ID");
    if (slurm_job && *slurm_job) snprintf(b->job_id, sizeof b->job_id, "%s", slurm_job);
    if (!b->job_id[0]) snprintf(b->job_id, sizeof b->job_id, "none");
    long k = 0;
    int set = 0;
    hpct_status_t s = hpcti_tunable_long(ctx, "HPCT_RANKS_PER_NODE", &k, &set);
    if (s) return s;
    if (set) b->ranks_per_node = (int)k;
    hpcti_log(ctx, HPCT_LOG_INFO,
              "bootstrap: source %s, launcher rank %d of %d, local %d of %d, host %s, job %s",
              hpcti_topo_source_name(b->source), b->rank, b->size, b->local_rank, b->local_size,
              b->hostname, b->job_id);
    return HPCT_SUCCESS;
}

void hpcti_bootstrap_release(struct hpcti_boot *b)
{
    if (b->pmix_up) PMIx_Finalize(NULL, 0);
    b->pmix_up = 0;
}
