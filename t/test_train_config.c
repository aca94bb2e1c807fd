/* test_train_config.c: the settings of hpctrain.conf(5) (hpct_settings_*, read by `hpctrain
 * train` and hpct_insitu_open): defaults, file, environment, errors, hash. */
#include "hpctrain.h"
#include "lib/tap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[] = "/tmp/hpct-train-config-XXXXXX";

/* The calls below as 0 / -1 with the message in err (hpct_last_error(NULL)). */
static int result(hpct_status_t s, char *err, size_t n)
{
    snprintf(err, n, "%s", s ? hpct_last_error(NULL) : "");
    return s ? -1 : 0;
}
#define set_(c, k, v, src, err, n) result(hpct_settings_set(c, k, v, src), err, n)
#define load_file_(c, p, err, n)   result(hpct_settings_read_file(c, p), err, n)
#define load_env_(c, err, n)       result(hpct_settings_read_env(c), err, n)
#define validate_(c, err, n)       result(hpct_settings_check(c, HPCT_SETTINGS_TRAIN), err, n)

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    tap_plan(23);
    int fd = mkstemp(path);
    if (fd < 0) tap_bail("mkstemp failed");
    close(fd);
    hpct_settings_t c;
    char err[512];
    hpct_settings_defaults(&c);
    tap_ok(c.global_batch == 256 && c.lr == 0.05 && c.num_hidden == 2 && c.hidden[1] == 512 &&
               c.checkpoint_keep == 3 && strcmp(c.optimizer, "sgd") == 0,
           "documented defaults");
    uint64_t h0 = hpct_settings_hash(&c);
    /* the values of the parser before it moved into the library (tools/train_config.c at
     * a75a3e7): checkpoints written since must still resume */
    tap_ok(h0 == 0x0ea579d243664734ULL, "the defaults' hash is the one checkpoints hold");
    hpct_settings_t m = c;
    set_(&m, "lr", "0.1", "test", err, sizeof err);
    set_(&m, "hidden", "64,32", "test", err, sizeof err);
    set_(&m, "inputs", "7", "test", err, sizeof err);
    tap_ok(hpct_settings_hash(&m) == 0xdfcb819163161fdfULL,
           "so is the hash of lr 0.1, hidden 64,32 (inputs is not hashed)");

    write_file("# comment line\ntrain_manifest = data/train.manifest\n  lr=0.1   # trailing\n"
               "hidden = 64, 32,16\noptimizer = adamw\n\n");
    tap_is_int(load_file_(&c, path, err, sizeof err), 0, "a valid file loads");
    tap_ok(c.lr == 0.1 && c.num_hidden == 3 && c.hidden[2] == 16 &&
               strcmp(c.optimizer, "adamw") == 0 &&
               strcmp(c.train_manifest, "data/train.manifest") == 0,
           "values from the file, comments and spaces ignored");
    tap_ok(hpct_settings_hash(&c) != h0, "changing lr and the model changes the config hash");
    uint64_t h1 = hpct_settings_hash(&c);
    set_(&c, "checkpoint_dir", "/elsewhere", "test", err, sizeof err);
    tap_ok(hpct_settings_hash(&c) == h1, "paths and cadence do not change the config hash");

    setenv("HPCT_GLOBAL_BATCH", "512", 1);
    tap_is_int(load_env_(&c, err, sizeof err), 0, "environment loads");
    tap_is_int(c.global_batch, 512, "HPCT_GLOBAL_BATCH overrides");
    setenv("HPCT_GLOBAL_BATCH", "12x", 1);
    tap_ok(load_env_(&c, err, sizeof err) < 0 && strstr(err, "HPCT_GLOBAL_BATCH"),
           "a bad environment value names the variable: %s", err);
    unsetenv("HPCT_GLOBAL_BATCH");

    write_file("lr = 0.1\nbogus_key = 3\n");
    tap_ok(load_file_(&c, path, err, sizeof err) < 0 && strstr(err, ":2:") &&
               strstr(err, "bogus_key"),
           "unknown key: file:line and key in the message: %s", err);
    write_file("activation = swish\n");
    tap_ok(load_file_(&c, path, err, sizeof err) < 0 && strstr(err, "relu|tanh"),
           "bad choice lists the allowed values: %s", err);
    write_file("momentum = 1.5\n");
    tap_ok(load_file_(&c, path, err, sizeof err) < 0 && strstr(err, "momentum"),
           "out-of-range number is refused: %s", err);
    write_file("epochs = 2.5\n");
    tap_ok(load_file_(&c, path, err, sizeof err) < 0, "a fraction for an integer is refused");
    write_file("just some words\n");
    tap_ok(load_file_(&c, path, err, sizeof err) < 0 && strstr(err, "key = value"),
           "a line without '=' is refused: %s", err);
    tap_ok(load_file_(&c, "/nonexistent/x.conf", err, sizeof err) < 0 &&
               strstr(err, "/nonexistent/x.conf"),
           "a missing file is named: %s", err);

    hpct_settings_defaults(&c);
    tap_ok(validate_(&c, err, sizeof err) < 0 && strstr(err, "train_manifest"),
           "validation: a training manifest is required");
    set_(&c, "train_manifest", "x", "test", err, sizeof err);
    set_(&c, "micro_batches", "3", "test", err, sizeof err);
    tap_ok(validate_(&c, err, sizeof err) < 0 && strstr(err, "micro_batches"),
           "validation: global_batch must divide into micro-batches: %s", err);

    /* red team rerun (issue 37, F2, F5): integers exact beyond 2^53, no hexadecimal, no
     * silent rounding; an over-long value shown with its choices */
    hpct_settings_defaults(&c);
    tap_ok(set_(&c, "seed", "9007199254740993", "test", err, sizeof err) == 0 &&
               c.seed == 9007199254740993L,
           "seed 2^53 + 1 is kept exactly (it was rounded to 2^53)");
    tap_ok(set_(&c, "seed", "0x10", "test", err, sizeof err) < 0 && strstr(err, "'0x10'"),
           "a hexadecimal integer is refused: %s", err);
    tap_ok(set_(&c, "seed", "1e17", "test", err, sizeof err) < 0 && strstr(err, "decimal digits"),
           "an integer past 2^53 written as a real number is refused: %s", err);
    tap_ok(set_(&c, "epochs", "1e3", "test", err, sizeof err) == 0 && c.epochs == 1000,
           "1e3 still reads as 1000");
    tap_ok(set_(&c, "data_store", "verylongvalue", "test", err, sizeof err) < 0 &&
               strstr(err, "verylongvalue") && strstr(err, "auto|off|job|node"),
           "an over-long value is shown with the choices: %s", err);
    unlink(path);
    return tap_done();
}
