/* pmix_probe.c: print what PMIx tells this process about its place in the job.
 * One line on stdout: "rank=R nodeid=N local_rank=L local_size=S"; exit 1 with a
 * message on stderr when PMIx is not there or a key is missing. Used by the Slurm tests. */
#include <pmix.h>
#include <stdio.h>
#include <string.h>

/* Fetch a job- or node-level uint key (rank wildcard: the value is not per process). */
static int get_uint(const pmix_proc_t *me, const char *key, int wildcard, unsigned *out)
{
    pmix_proc_t who = *me;
    pmix_value_t *val = NULL;
    if (wildcard) who.rank = PMIX_RANK_WILDCARD;
    pmix_status_t rc = PMIx_Get(&who, key, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL) {
        fprintf(stderr, "pmix_probe: PMIx_Get(%s) failed: %s\n", key, PMIx_Error_string(rc));
        return -1;
    }
    switch (val->type) {
    case PMIX_UINT16: *out = val->data.uint16; break;
    case PMIX_UINT32: *out = val->data.uint32; break;
    case PMIX_PROC_RANK: *out = val->data.rank; break;
    case PMIX_INT: *out = (unsigned)val->data.integer; break;
    default:
        fprintf(stderr, "pmix_probe: %s has unexpected type %d\n", key, (int)val->type);
        PMIX_VALUE_RELEASE(val);
        return -1;
    }
    PMIX_VALUE_RELEASE(val);
    return 0;
}

int main(void)
{
    pmix_proc_t me;
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "pmix_probe: PMIx_Init failed: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    unsigned nodeid = 0, local_rank = 0, local_size = 0;
    int bad = get_uint(&me, PMIX_NODEID, 0, &nodeid) ||
              get_uint(&me, PMIX_LOCAL_RANK, 0, &local_rank) ||
              get_uint(&me, PMIX_LOCAL_SIZE, 1, &local_size);
    if (!bad)
        printf("rank=%u nodeid=%u local_rank=%u local_size=%u\n", (unsigned)me.rank, nodeid,
               local_rank, local_size);
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return bad ? 1 : 0;
}
