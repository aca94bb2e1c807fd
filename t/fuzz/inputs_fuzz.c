/* inputs_fuzz.c: libFuzzer harness for the IDX, .npy and CSV readers of `hpctrain shard`
 * (tools/inputs.c). Built once per format with -DFUZZ_FORMAT=1 (IDX), 2 (.npy) or 3 (CSV)
 * by t/test_fuzz_shard.sh. Every input must be refused with an exit code or accepted as an
 * array whose dims match its data; ASan/UBSan catch out-of-bounds access, leaks and UB. */
#include "fuzz_file.h"
#include "tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Elements promised by a's dims (the reader checked they fit the file). */
static uint64_t elements(const tool_array_t *a)
{
    uint64_t n = 1;
    for (int i = 0; i < a->rank; i++) n *= a->dims[i];
    return n;
}

/* Touch every byte of an accepted array: ASan flags a buffer shorter than its dims. */
static void check_array(const tool_array_t *a)
{
    if (a->rank < 1 || a->rank > HPCT_SHARD_MAX_RANK || !a->data) __builtin_trap();
    uint64_t bytes = elements(a) * tool_type_size(a->type);
    volatile unsigned char sum = 0;
    for (uint64_t i = 0; i < bytes; i++) sum ^= ((const unsigned char *)a->data)[i];
    (void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tool_array_t a = {0}, b = {0};
    int rc;
#if FUZZ_FORMAT == 1
    rc = tool_read_idx(fuzz_file_write(data, size, ".idx"), &a);
#elif FUZZ_FORMAT == 2
    rc = tool_read_npy(fuzz_file_write(data, size, ".npy"), &a);
#else
    /* first byte: label column (-1 = last) and whether to skip a header line */
    int label_column = size ? (int)(data[0] % 5) - 1 : -1, skip = size && (data[0] & 0x80);
    if (size) data++, size--;
    rc = tool_read_csv(fuzz_file_write(data, size, ".csv"), label_column, skip, &a, &b);
#endif
    if (rc != TOOL_OK && rc != TOOL_DATA && rc != TOOL_USAGE) __builtin_trap();
    if (rc == TOOL_OK) {
        check_array(&a);
#if FUZZ_FORMAT == 3
        check_array(&b);
        if (b.dims[0] != a.dims[0]) __builtin_trap(); /* one label per row */
#endif
    }
    free(a.data);
    free(b.data);
    return 0;
}
