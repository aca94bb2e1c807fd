/* walltime.c: when does the batch job end? HPCT_JOB_END_TIME (Unix seconds) first; under
 * Slurm, the job's end time from libslurm when the library was built with it. */
#include "config.h"
#include "ckpt.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#ifdef HPCT_HAVE_SLURM
#include <pthread.h>
#include <slurm/slurm.h>
#include <unistd.h>

static pthread_once_t slurm_once = PTHREAD_ONCE_INIT;

static void slurm_setup(void)
{
    slurm_init(NULL);
}

/* libslurm stops the process when it finds no slurm.conf: only ask when one is readable
 * ($SLURM_CONF, set by slurmd in configless mode, or the default path). */
static int slurm_conf_readable(void)
{
    const char *conf = getenv("SLURM_CONF");
    return access(conf && *conf ? conf : "/etc/slurm/slurm.conf", R_OK) == 0;
}

/* slurm_get_end_time for $SLURM_JOB_ID (one RPC to slurmctld); 0 on success. */
static int slurm_end(double *end)
{
    const char *job = getenv("SLURM_JOB_ID");
    if (!job || !*job || !slurm_conf_readable()) return -1;
    char *rest;
    unsigned long id = strtoul(job, &rest, 10);
    if (*rest || id == 0 || id > UINT32_MAX) return -1;
    time_t t = 0;
    pthread_once(&slurm_once, slurm_setup);
    if (slurm_get_end_time((uint32_t)id, &t) != 0 || t <= 0) return -1;
    *end = (double)t;
    return 0;
}
#endif

hpct_status_t hpcti_walltime_end(hpct_ctx_t ctx, double *end)
{
    int set = 0;
    hpct_status_t s = hpcti_tunable_real(ctx, "HPCT_JOB_END_TIME", end, &set);
    if (s || set) return s;
#ifdef HPCT_HAVE_SLURM
    if (slurm_end(end) == 0) return HPCT_SUCCESS;
    return hpcti_error(ctx, HPCT_ERR_NOT_FOUND,
                       "no job end time: HPCT_JOB_END_TIME is unset and Slurm gave none for "
                       "SLURM_JOB_ID='%s'",
                       getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "");
#else
    return hpcti_error(ctx, HPCT_ERR_NOT_FOUND,
                       "no job end time: HPCT_JOB_END_TIME is unset (this library was built "
                       "without libslurm)");
#endif
}

hpct_status_t hpct_walltime_remaining(hpct_ctx_t ctx, double *seconds)
{
    if (!ctx) return HPCT_ERR_INVALID_ARG;
    hpcti_clear_error(ctx);
    if (!seconds)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_walltime_remaining: seconds is NULL");
    double end = 0;
    hpct_status_t s = hpcti_walltime_end(ctx, &end);
    if (s) return s;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *seconds = end - (ts.tv_sec + ts.tv_nsec * 1e-9);
    return HPCT_SUCCESS;
}
