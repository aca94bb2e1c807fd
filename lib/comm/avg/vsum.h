/* vsum.h: the element-wise float kernels of the averages (a peer's block added to a sum, the
 * 1/W scale), compiled for the baseline instruction set, AVX2 and AVX-512F and picked once
 * by what the CPU has (HPCT_VECTOR_ISA pins a set). Each element is one IEEE add, then at most
 * one multiply: no reassociation and no fused multiply-add, so every set gives the same bits
 * and ranks on different CPUs still agree; the one exception is the payload of the NaN that
 * adding two NaNs gives (x86 returns the first operand's, and compilers order an add's
 * operands as they like): a NaN in every set. */
#ifndef HPCTI_VSUM_H
#define HPCTI_VSUM_H

#include <stddef.h>

/* acc [m] += x [m] (acc and x do not overlap) */
void hpcti_vadd(float *acc, const float *x, size_t m);
/* acc [m] = (acc [m] + x [m]) * s (acc and x do not overlap) */
void hpcti_vadd_scale(float *acc, const float *x, size_t m, float s);
/* x [m] *= s */
void hpcti_vscale(float *x, size_t m, float s);

/* Use the kernels of set name, in any case ("auto": the widest this CPU runs; "avx512f",
 * "avx2", "baseline"), in the whole process; NULL when done, else why not (an unknown name,
 * a set this CPU lacks). */
const char *hpcti_vec_use(const char *name);
/* The set in use, as hpcti_vec_use names it. */
const char *hpcti_vec_name(void);

#endif
