/* data_util.c: helpers that write real shard files and manifests for the tests. */
#include "data_util.h"
#include "../../lib/data/data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];

tdu_shard_t tdu_shard(uint64_t rows, uint64_t first, int features, int chunk_rows)
{
    tdu_shard_t s = {rows, first, features, 0, chunk_rows, 0, NULL, NULL, -1, -1};
    return s;
}

static int write_dataset(hid_t file, const char *name, hid_t type, int rank, const hsize_t *dims,
                         const tdu_shard_t *s, const void *data)
{
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (s->chunk_rows) {
        hsize_t cdims[2] = {(hsize_t)s->chunk_rows, rank > 1 ? dims[1] : 1};
        if (cdims[0] > dims[0]) cdims[0] = dims[0] ? dims[0] : 1;
        H5Pset_chunk(dcpl, rank, cdims);
        if (s->deflate) H5Pset_shuffle(dcpl), H5Pset_deflate(dcpl, 4);
    }
    hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int rc = d < 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0;
    if (d >= 0) H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
    return rc ? -1 : 0;
}

int tdu_write_shard(const char *path, const tdu_shard_t *s)
{
    hid_t in_type = s->input_type ? s->input_type : H5T_NATIVE_FLOAT;
    size_t esize = H5Tget_size(in_type), n = (size_t)s->rows * (size_t)s->features;
    long trows = s->target_rows < 0 ? (long)s->rows : s->target_rows;
    unsigned char *x = calloc(n ? n : 1, esize);
    int32_t *y = calloc(trows ? (size_t)trows : 1, sizeof *y);
    for (size_t i = 0; i < s->rows; i++)
        for (int k = 0; k < s->features; k++) {
            double v = (double)(s->first + i + (uint64_t)k);
            size_t at = i * (size_t)s->features + (size_t)k;
            if (esize == 1)
                x[at] = (unsigned char)((uint64_t)v & 0xff);
            else
                ((float *)x)[at] = (long)i == s->nan_row && k == 0 ? NAN : (float)v;
        }
    for (long i = 0; i < trows; i++) y[i] = (int32_t)(s->first + (uint64_t)i);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const char *iname = s->inputs_name ? s->inputs_name : "inputs";
    const char *tname = s->targets_name ? s->targets_name : "targets";
    hsize_t xd[2] = {s->rows, (hsize_t)s->features}, yd[1] = {(hsize_t)trows};
    int rc = file < 0;
    if (!rc && *iname) rc = write_dataset(file, iname, in_type, 2, xd, s, x);
    if (!rc && *tname) rc = write_dataset(file, tname, H5T_NATIVE_INT32, 1, yd, s, y);
    if (file >= 0) H5Fclose(file);
    free(x);
    free(y);
    return rc;
}

int tdu_write_manifest(const char *dir, const char *name, int count, const char *const *files,
                       const char *in_type, int features)
{
    hpcti_manifest_t m = {0};
    m.inputs.type = !strcmp(in_type, "uint8") ? HPCTI_U8 : HPCTI_F32;
    m.inputs.rank = 1;
    m.inputs.dims[0] = (uint64_t)features;
    m.targets.type = HPCTI_I32;
    m.num_shards = count;
    m.shards = calloc((size_t)count, sizeof *m.shards);
    int rc = 0;
    for (int i = 0; i < count && !rc; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        m.shards[i].path = (char *)files[i];
        rc = hpcti_checksum_file(path, &m.shards[i].checksum, &m.shards[i].bytes);
        hid_t f = rc ? -1 : H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        const char *dname =
            f >= 0 && H5Lexists(f, "inputs", H5P_DEFAULT) > 0 ? "inputs" : "targets";
        hid_t d = f < 0 ? -1 : H5Dopen2(f, dname, H5P_DEFAULT);
        hsize_t dims[2] = {0, 0};
        if (d >= 0) {
            hid_t sp = H5Dget_space(d);
            H5Sget_simple_extent_dims(sp, dims, NULL);
            H5Sclose(sp);
            H5Dclose(d);
        }
        if (f >= 0) H5Fclose(f);
        m.shards[i].samples = dims[0] ? dims[0] : 1;
    }
    char mpath[512];
    snprintf(mpath, sizeof mpath, "%s/%s", dir, name);
    if (!rc) rc = hpcti_manifest_write(&m, mpath);
    free(m.shards);
    return rc;
}

const char *tdu_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/hpct-data-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(tmpdir);
}

void tdu_cleanup(void)
{
    if (!tmpdir[0]) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd)) fprintf(stderr, "# could not remove %s\n", tmpdir);
}
