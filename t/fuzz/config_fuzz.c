/* config_fuzz.c: libFuzzer harness for the settings parser of hpctrain.conf(5)
 * (lib/train/settings.c, built alone: its one library call, hpcti_set_init_error, is
 * defined here): each input is a settings file. Every input must be refused with a message
 * naming the file (and line) or accepted; an accepted file must print and re-load to the
 * same settings (hash). ASan/UBSan catch overflows and UB. Run by t/test_fuzz_config.sh. */
#include "fuzz_file.h"
#include "hpctrain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void hpcti_set_init_error(const char *detail);

static char message[1024]; /* the parser's last message */

void hpcti_set_init_error(const char *detail)
{
    snprintf(message, sizeof message, "%s", detail ? detail : "");
}

/* Every key with its value, in file syntax. */
static void print_settings(const hpct_settings_t *c, FILE *f)
{
    char v[HPCT_SETTINGS_PATH_MAX + 8];
    for (int i = 0; hpct_settings_key(i); i++)
        if (!hpct_settings_format(c, hpct_settings_key(i), v, sizeof v))
            fprintf(f, "%s = %s\n", hpct_settings_key(i), v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static hpct_settings_t c, again; /* 5 KiB of paths each: off the stack */
    if (hpct_settings_defaults(&c)) __builtin_trap();
    const char *path = fuzz_file_write(data, size, ".conf");
    if (hpct_settings_read_file(&c, path)) {
        if (strncmp(message, path, strlen(path))) __builtin_trap(); /* refusals name the file */
        return 0;
    }
    (void)hpct_settings_check(&c, HPCT_SETTINGS_TRAIN);
    (void)hpct_settings_check(&c, HPCT_SETTINGS_INSITU);
    /* print in file syntax, load that into fresh defaults: the same settings come back */
    FILE *f = fopen(path, "w");
    if (!f) abort();
    print_settings(&c, f);
    if (fclose(f)) abort();
    if (hpct_settings_defaults(&again) || hpct_settings_read_file(&again, path)) __builtin_trap();
    if (hpct_settings_hash(&again) != hpct_settings_hash(&c)) __builtin_trap();
    return 0;
}
