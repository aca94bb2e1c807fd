/* versions.h: the versions of the libraries each rank runs with, and how they compare across
 * the ranks of a context. hpct_init agrees on the cheap three (library, MPI, HDF5) with one
 * integer reduction of their hashes (hpcti_versions_agree); hpct_doctor compares them all. */
#ifndef HPCTI_VERSIONS_H
#define HPCTI_VERSIONS_H

#include "../../core/core.h"

/* The components, in the order the doctor reports them. */
enum {
    HPCTI_V_LIBRARY,      /* "libhpctrain 0.1.0" */
    HPCTI_V_MPI,          /* MPI_Get_library_version, its first line */
    HPCTI_V_HDF5,         /* H5get_libversion: "HDF5 1.10.8" */
    HPCTI_V_PMIX,         /* PMIx_Get_version */
    HPCTI_V_BLAS,         /* the host BLAS (openblas_get_config) */
    HPCTI_V_CUDA_DRIVER,  /* cuda backend only (else "") */
    HPCTI_V_CUDA_RUNTIME, /* cuda backend only */
    HPCTI_V_CUBLAS,       /* cuda backend only */
    HPCTI_V_NCCL,         /* cuda backend of a --with-nccl build only */
    HPCTI_V_SETTINGS,     /* the caller's text (hpct_doctor_config_t.settings_hash) */
    HPCTI_V_COUNT
};
#define HPCTI_V_CHEAP 3   /* hpct_init agrees on the first three: library, MPI, HDF5 */
#define HPCTI_V_TEXT  160 /* bytes of one version as shown */

struct hpcti_versions {
    char text[HPCTI_V_COUNT][HPCTI_V_TEXT]; /* "" where a component does not apply */
    long hash[HPCTI_V_COUNT]; /* of the whole version (MPI's may be longer than text), >= 0 */
};

/* This rank's versions: the cheap three only, or (all) every component, with settings (NULL:
 * "") as the settings text. The test hook HPCT_TEST_FAKE_VERSION=RANK:TEXT makes rank RANK
 * report TEXT as its library version. */
void hpcti_versions_mine(hpct_ctx_t ctx, const char *settings, int all, struct hpcti_versions *v);
/* The component's name as reported ("libhpctrain", "MPI library", ...). */
const char *hpcti_version_name(int component);

/* How one component compares across the ranks, against rank 0's. */
struct hpcti_version_diff {
    int differ;                    /* ranks whose version differs from rank 0's */
    int first;                     /* the lowest of them, -1 when none */
    char ref_text[HPCTI_V_TEXT];   /* rank 0's version */
    char first_text[HPCTI_V_TEXT]; /* the first differing rank's (differ > 0) */
    char ranks[120];               /* the differing ranks: "1,3,5" (cut: "1,3,...") */
};

/* Compare components [0, n) of v (this rank's) across the ranks into diff [n], the same on
 * every rank: an allgather of the hashes, then the versions of rank 0 and of each first
 * differing rank broadcast; deadline-bounded. Collective. */
HPCTI_CHECK hpct_status_t hpcti_versions_compare(hpct_ctx_t ctx, const struct hpcti_versions *v,
                                                 int n, struct hpcti_version_diff *diff);
/* "NAME: rank R (host H) has 'X' where rank 0 (host H0) has 'Y'; N ranks differ: LIST" into
 * out [len]; hosts [ranks][host_width] (hpcti_agree_hosts). */
void hpcti_version_diff_text(const struct hpcti_version_diff *diff, int component,
                             const char *hosts, int host_width, char *out, size_t len);

/* hpct_init: the cheap three agree on every rank (one MAX reduction of integers), logged at
 * info level; otherwise every rank fails with HPCT_ERR_INVALID_ARG naming the ranks, hosts and
 * both versions, unless every rank sets HPCT_ALLOW_VERSION_MISMATCH=1 (then rank 0 warns).
 * Collective. */
HPCTI_CHECK hpct_status_t hpcti_versions_agree(hpct_ctx_t ctx);

#endif
