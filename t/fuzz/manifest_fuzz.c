/* manifest_fuzz.c: libFuzzer harness for the shard manifest parser (lib/data/manifest.c).
 * Any input must be either refused with a message or accepted with a consistent result;
 * ASan/UBSan catch out-of-bounds reads and leaks. Built and run by t/test_fuzz_manifest.sh. */
#include "data.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hpcti_manifest_t m;
    char err[256];
    err[0] = '\0';
    if (hpcti_manifest_parse((const char *)data, size, &m, err, sizeof err)) {
        if (strncmp(err, "line ", 5)) __builtin_trap(); /* every refusal names its line */
        return 0;
    }
    if (m.num_shards < 1 || !m.shards) __builtin_trap();
    if (hpcti_layout_count(&m.inputs) == 0 || hpcti_layout_count(&m.targets) == 0) __builtin_trap();
    for (int i = 0; i < m.num_shards; i++)
        if (!hpcti_manifest_path_is_safe(m.shards[i].path) || m.shards[i].samples == 0)
            __builtin_trap();
    hpcti_manifest_free(&m);
    return 0;
}
