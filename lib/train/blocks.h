/* blocks.h: simulation arrays decomposed in blocks over the ranks, saved as one global array
 * and loaded at any number of ranks (blocks.c; the in-situ session's hpct_insitu_add_block). */
#ifndef HPCTI_BLOCKS_H
#define HPCTI_BLOCKS_H

#include "../core/core.h"
#include "../ckpt/ckpt.h"

struct hpcti_block;

/* The block arrays of a session. */
struct hpcti_blocks {
    struct hpcti_block **b;
    int n, cap;
};

/* Collective: check this rank's block, agree on every rank's, verify that they tile the
 * global shape, and register the global array and its shape on ck. */
HPCTI_CHECK hpct_status_t hpcti_blocks_add(struct hpcti_blocks *B, hpct_ctx_t ctx, hpct_ckpt_t ck,
                                           int rank, int ranks, const char *name,
                                           hpct_ckpt_dtype_t dtype, void *data, int ndims,
                                           const size_t *gshape, const size_t *off,
                                           const size_t *cnt);
/* This rank refuses a registration before checking it (a Fortran wrapper's check, detail in
 * the context's last error): the first agreement of hpcti_blocks_add, with status. */
HPCTI_CHECK hpct_status_t hpcti_blocks_refuse(hpct_ctx_t ctx, hpct_status_t status);
/* Collective, before every save: the writer gathers every block into its global array. */
HPCTI_CHECK hpct_status_t hpcti_blocks_gather(struct hpcti_blocks *B, hpct_ctx_t ctx,
                                              hpct_ckpt_t ck, int rank);
/* Before a load: a global buffer on every rank for the loaded arrays and their shapes. */
HPCTI_CHECK hpct_status_t hpcti_blocks_before_load(struct hpcti_blocks *B, hpct_ctx_t ctx,
                                                   hpct_ckpt_t ck);
/* After a load (found: a checkpoint was loaded, from path): check the shapes, copy this
 * rank's blocks out, and free the buffers that only the load needed. */
HPCTI_CHECK hpct_status_t hpcti_blocks_after_load(struct hpcti_blocks *B, hpct_ctx_t ctx,
                                                  hpct_ckpt_t ck, int rank, int found,
                                                  const char *path);
void hpcti_blocks_free(struct hpcti_blocks *B);

#endif
