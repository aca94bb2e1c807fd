/* convert.c: element-type conversion of shard rows for the streaming reader. */
#include "data.h"

#include <string.h>

#define CONVERT_LOOP(SRC_T, DST_T)                                                                 \
    do {                                                                                           \
        const SRC_T *s = src;                                                                      \
        for (size_t i = 0; i < count; i++) dst[i] = (DST_T)s[i];                                   \
    } while (0)

void hpcti_convert_f32(hpcti_type_t t, const void *src, float *dst, size_t count)
{
    switch (t) {
    case HPCTI_U8: CONVERT_LOOP(uint8_t, float); break;
    case HPCTI_I8: CONVERT_LOOP(int8_t, float); break;
    case HPCTI_U16: CONVERT_LOOP(uint16_t, float); break;
    case HPCTI_I16: CONVERT_LOOP(int16_t, float); break;
    case HPCTI_U32: CONVERT_LOOP(uint32_t, float); break;
    case HPCTI_I32: CONVERT_LOOP(int32_t, float); break;
    case HPCTI_U64: CONVERT_LOOP(uint64_t, float); break;
    case HPCTI_I64: CONVERT_LOOP(int64_t, float); break;
    case HPCTI_F32: memmove(dst, src, count * sizeof *dst); break;
    case HPCTI_F64: CONVERT_LOOP(double, float); break;
    default: memset(dst, 0, count * sizeof *dst); break;
    }
}

void hpcti_convert_i32(hpcti_type_t t, const void *src, int32_t *dst, size_t count)
{
    switch (t) {
    case HPCTI_U8: CONVERT_LOOP(uint8_t, int32_t); break;
    case HPCTI_I8: CONVERT_LOOP(int8_t, int32_t); break;
    case HPCTI_U16: CONVERT_LOOP(uint16_t, int32_t); break;
    case HPCTI_I16: CONVERT_LOOP(int16_t, int32_t); break;
    case HPCTI_U32: CONVERT_LOOP(uint32_t, int32_t); break;
    case HPCTI_I32: memmove(dst, src, count * sizeof *dst); break;
    case HPCTI_U64: CONVERT_LOOP(uint64_t, int32_t); break;
    case HPCTI_I64: CONVERT_LOOP(int64_t, int32_t); break;
    default: memset(dst, 0, count * sizeof *dst); break;
    }
}
