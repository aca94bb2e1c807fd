/* config_fuzz.c: libFuzzer harness for the settings parser of `hpctrain train`
 * (tools/train_config.c): each input is a settings file. Every input must be refused with a
 * message naming the file (and line) or accepted; an accepted file must print and re-load
 * to the same settings (hash). ASan/UBSan catch overflows and UB. Run by
 * t/test_fuzz_config.sh. */
#include "fuzz_file.h"
#include "train_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct train_config c, again;
    char err[512] = "";
    train_config_defaults(&c);
    const char *path = fuzz_file_write(data, size, ".conf");
    if (train_config_load_file(&c, path, err, sizeof err)) {
        if (strncmp(err, path, strlen(path))) __builtin_trap(); /* refusals name the file */
        return 0;
    }
    train_config_validate(&c, err, sizeof err);
    /* print in file syntax, load that into fresh defaults: the same settings come back */
    FILE *f = fopen(path, "w");
    if (!f) abort();
    train_config_print(&c, f);
    if (fclose(f)) abort();
    train_config_defaults(&again);
    if (train_config_load_file(&again, path, err, sizeof err)) __builtin_trap();
    if (train_config_hash(&again) != train_config_hash(&c)) __builtin_trap();
    return 0;
}
