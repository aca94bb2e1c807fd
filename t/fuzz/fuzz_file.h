/* fuzz_file.h: for libFuzzer harnesses of readers that take a path: each input is written to
 * one private file (under $TMPDIR, removed at exit), whose path the reader is given. */
#ifndef HPCT_FUZZ_FILE_H
#define HPCT_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir[256], fuzz_path[300];

static void fuzz_file_cleanup(void)
{
    if (fuzz_path[0]) unlink(fuzz_path);
    if (fuzz_dir[0]) rmdir(fuzz_dir);
}

/* Path of a file holding exactly data[size]; aborts (a harness bug, not a finding) on I/O. */
static const char *fuzz_file_write(const uint8_t *data, size_t size, const char *suffix)
{
    if (!fuzz_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/hpct-fuzzf.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(fuzz_dir)) abort();
        atexit(fuzz_file_cleanup);
    }
    snprintf(fuzz_path, sizeof fuzz_path, "%s/input%s", fuzz_dir, suffix);
    FILE *f = fopen(fuzz_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) abort();
    return fuzz_path;
}

#endif
