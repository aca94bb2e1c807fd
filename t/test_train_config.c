/* test_train_config.c: the `hpctrain train` settings: defaults, file, environment, errors, hash. */
#include "../tools/train_config.h"
#include "lib/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[] = "/tmp/hpct-train-config-XXXXXX";

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    tap_plan(21);
    int fd = mkstemp(path);
    if (fd < 0) tap_bail("mkstemp failed");
    close(fd);
    struct train_config c;
    char err[512];
    train_config_defaults(&c);
    tap_ok(c.global_batch == 256 && c.lr == 0.05 && c.num_hidden == 2 && c.hidden[1] == 512 &&
               c.checkpoint_keep == 3 && strcmp(c.optimizer, "sgd") == 0,
           "documented defaults");
    unsigned long long h0 = train_config_hash(&c);

    write_file("# comment line\ntrain_manifest = data/train.manifest\n  lr=0.1   # trailing\n"
               "hidden = 64, 32,16\noptimizer = adamw\n\n");
    tap_is_int(train_config_load_file(&c, path, err, sizeof err), 0, "a valid file loads");
    tap_ok(c.lr == 0.1 && c.num_hidden == 3 && c.hidden[2] == 16 &&
               strcmp(c.optimizer, "adamw") == 0 &&
               strcmp(c.train_manifest, "data/train.manifest") == 0,
           "values from the file, comments and spaces ignored");
    tap_ok(train_config_hash(&c) != h0, "changing lr and the model changes the config hash");
    unsigned long long h1 = train_config_hash(&c);
    train_config_set(&c, "checkpoint_dir", "/elsewhere", "test", err, sizeof err);
    tap_ok(train_config_hash(&c) == h1, "paths and cadence do not change the config hash");

    setenv("HPCT_GLOBAL_BATCH", "512", 1);
    tap_is_int(train_config_load_env(&c, err, sizeof err), 0, "environment loads");
    tap_is_int(c.global_batch, 512, "HPCT_GLOBAL_BATCH overrides");
    setenv("HPCT_GLOBAL_BATCH", "12x", 1);
    tap_ok(train_config_load_env(&c, err, sizeof err) < 0 && strstr(err, "HPCT_GLOBAL_BATCH"),
           "a bad environment value names the variable: %s", err);
    unsetenv("HPCT_GLOBAL_BATCH");

    write_file("lr = 0.1\nbogus_key = 3\n");
    tap_ok(train_config_load_file(&c, path, err, sizeof err) < 0 && strstr(err, ":2:") &&
               strstr(err, "bogus_key"),
           "unknown key: file:line and key in the message: %s", err);
    write_file("activation = swish\n");
    tap_ok(train_config_load_file(&c, path, err, sizeof err) < 0 && strstr(err, "relu|tanh"),
           "bad choice lists the allowed values: %s", err);
    write_file("momentum = 1.5\n");
    tap_ok(train_config_load_file(&c, path, err, sizeof err) < 0 && strstr(err, "momentum"),
           "out-of-range number is refused: %s", err);
    write_file("epochs = 2.5\n");
    tap_ok(train_config_load_file(&c, path, err, sizeof err) < 0,
           "a fraction for an integer is refused");
    write_file("just some words\n");
    tap_ok(train_config_load_file(&c, path, err, sizeof err) < 0 && strstr(err, "key = value"),
           "a line without '=' is refused: %s", err);
    tap_ok(train_config_load_file(&c, "/nonexistent/x.conf", err, sizeof err) < 0 &&
               strstr(err, "/nonexistent/x.conf"),
           "a missing file is named: %s", err);

    train_config_defaults(&c);
    tap_ok(train_config_validate(&c, err, sizeof err) < 0 && strstr(err, "train_manifest"),
           "validation: a training manifest is required");
    train_config_set(&c, "train_manifest", "x", "test", err, sizeof err);
    train_config_set(&c, "micro_batches", "3", "test", err, sizeof err);
    tap_ok(train_config_validate(&c, err, sizeof err) < 0 && strstr(err, "micro_batches"),
           "validation: global_batch must divide into micro-batches: %s", err);

    /* red team rerun (issue 37, F2, F5): integers exact beyond 2^53, no hexadecimal, no
     * silent rounding; an over-long value shown with its choices */
    train_config_defaults(&c);
    tap_ok(train_config_set(&c, "seed", "9007199254740993", "test", err, sizeof err) == 0 &&
               c.seed == 9007199254740993L,
           "seed 2^53 + 1 is kept exactly (it was rounded to 2^53)");
    tap_ok(train_config_set(&c, "seed", "0x10", "test", err, sizeof err) < 0 &&
               strstr(err, "'0x10'"),
           "a hexadecimal integer is refused: %s", err);
    tap_ok(train_config_set(&c, "seed", "1e17", "test", err, sizeof err) < 0 &&
               strstr(err, "decimal digits"),
           "an integer past 2^53 written as a real number is refused: %s", err);
    tap_ok(train_config_set(&c, "epochs", "1e3", "test", err, sizeof err) == 0 && c.epochs == 1000,
           "1e3 still reads as 1000");
    tap_ok(train_config_set(&c, "data_store", "verylongvalue", "test", err, sizeof err) < 0 &&
               strstr(err, "verylongvalue") && strstr(err, "auto|off|job|node"),
           "an over-long value is shown with the choices: %s", err);
    unlink(path);
    return tap_done();
}
