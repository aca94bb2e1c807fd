/* array.c: element types of the converter's input arrays: sizes and conversion to the two
 * types a shard stores (float32 inputs, int32 or float32 targets). */
#include "tools.h"

#include <string.h>

static const size_t type_sizes[TOOL_NUM_TYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

size_t tool_type_size(tool_type_t t)
{
    return (t >= 0 && t < TOOL_NUM_TYPES) ? type_sizes[t] : 0;
}

int tool_type_is_float(tool_type_t t)
{
    return t == TOOL_F32 || t == TOOL_F64;
}

/* dst [count] of DST_T = the count values of SRC_T at src. */
#define CAST_ALL(SRC_T, DST_T)                                                                     \
    do {                                                                                           \
        const SRC_T *s = src;                                                                      \
        for (size_t i = 0; i < count; i++) dst[i] = (DST_T)s[i];                                   \
    } while (0)

void tool_to_f32(tool_type_t t, const void *src, float *dst, size_t count)
{
    switch (t) {
    case TOOL_U8: CAST_ALL(uint8_t, float); break;
    case TOOL_I8: CAST_ALL(int8_t, float); break;
    case TOOL_U16: CAST_ALL(uint16_t, float); break;
    case TOOL_I16: CAST_ALL(int16_t, float); break;
    case TOOL_U32: CAST_ALL(uint32_t, float); break;
    case TOOL_I32: CAST_ALL(int32_t, float); break;
    case TOOL_U64: CAST_ALL(uint64_t, float); break;
    case TOOL_I64: CAST_ALL(int64_t, float); break;
    case TOOL_F32: memmove(dst, src, count * sizeof *dst); break;
    case TOOL_F64: CAST_ALL(double, float); break;
    default: memset(dst, 0, count * sizeof *dst); break;
    }
}

/* As CAST_ALL into int32, stopping at the first value outside [lo, INT32_MAX] (its index in
 * *bad); lo is 0 for unsigned sources. */
#define NARROW_ALL(SRC_T, lo)                                                                      \
    do {                                                                                           \
        const SRC_T *s = src;                                                                      \
        for (size_t i = 0; i < count; i++) {                                                       \
            if (s[i] > (SRC_T)INT32_MAX || (lo < 0 && (int64_t)s[i] < (int64_t)lo)) {              \
                *bad = i;                                                                          \
                return -1;                                                                         \
            }                                                                                      \
            dst[i] = (int32_t)s[i];                                                                \
        }                                                                                          \
    } while (0)

int tool_to_i32(tool_type_t t, const void *src, int32_t *dst, size_t count, size_t *bad)
{
    switch (t) {
    case TOOL_U8: CAST_ALL(uint8_t, int32_t); break;
    case TOOL_I8: CAST_ALL(int8_t, int32_t); break;
    case TOOL_U16: CAST_ALL(uint16_t, int32_t); break;
    case TOOL_I16: CAST_ALL(int16_t, int32_t); break;
    case TOOL_U32: NARROW_ALL(uint32_t, 0); break;
    case TOOL_I32: memmove(dst, src, count * sizeof *dst); break;
    case TOOL_U64: NARROW_ALL(uint64_t, 0); break;
    case TOOL_I64: NARROW_ALL(int64_t, INT32_MIN); break;
    default: memset(dst, 0, count * sizeof *dst); break;
    }
    return 0;
}
