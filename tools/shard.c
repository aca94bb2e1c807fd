/* shard.c: `hpctrain shard`: IDX/.npy/CSV -> N HDF5 shards + manifest, or a manifest for
 * existing HDF5 shards (--index). Formats: doc/data-formats.md. */
#include "config.h"
#include "tools.h"
#include "../lib/data/h5shard.h"

#include <errno.h>
#include <getopt.h>
#include <hdf5.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct shard_opts {
    const char *output, *format, *prefix, *manifest, *inputs_name, *targets_name;
    long shards, chunk;
    int deflate, index, label_column, skip_header;
    double scale;
} shard_opts_t;

static void shard_usage(FILE *out)
{
    fputs(
        "usage: hpctrain shard [OPTIONS] -o DIR INPUTS [TARGETS]\n"
        "       hpctrain shard --index -o MANIFEST SHARD.h5...\n\n"
        "Convert samples to HDF5 shards (/inputs float32 [N, ...], /targets [N, ...]) plus a\n"
        "manifest. INPUTS and TARGETS are IDX (MNIST format) or .npy files, gzip or plain;\n"
        "a CSV file holds both (one sample per row, the label in --label-column).\n"
        "Integer inputs become float32 (times --scale); integer labels stay int32.\n\n"
        "  -o, --output DIR       output directory (created if missing)\n"
        "  -n, --shards N         number of shards (default 1)\n"
        "      --scale X          multiply inputs by X, e.g. 0.00392156862745098 (1/255)\n"
        "      --format F         idx, npy or csv (default: from the file name)\n"
        "      --chunk ROWS       samples per HDF5 chunk (default: about 1 MiB of inputs)\n"
        "      --deflate LEVEL    1-9: shuffle+deflate filters (default 0: none; the reader\n"
        "                         must then hold the data in memory)\n"
        "      --prefix NAME      shard file names NAME-00000.h5 ... (default shard)\n"
        "      --manifest NAME    manifest file in DIR (default manifest.txt)\n"
        "      --inputs-name D    input dataset name (default inputs)\n"
        "      --targets-name D   target dataset name (default targets)\n"
        "      --label-column K   CSV: 0-based label column (default: the last)\n"
        "      --skip-header      CSV: ignore the first line\n"
        "      --index            write MANIFEST (-o) for existing shards inside its directory\n\n"
        "exit status: 0 success, 1 output not written, 2 usage error, 3 bad input data\n",
        out);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Fill o from argv; returns 0, or TOOL_USAGE after a message (-1 for --help). */
static int parse_options(int argc, char **argv, shard_opts_t *o, int *first_arg)
{
    enum {
        O_SCALE = 256,
        O_FORMAT,
        O_CHUNK,
        O_DEFLATE,
        O_PREFIX,
        O_MANIFEST,
        O_INAME,
        O_TNAME,
        O_LABEL,
        O_SKIP,
        O_INDEX
    };
    static const struct option longs[] = {{"output", 1, 0, 'o'},
                                          {"shards", 1, 0, 'n'},
                                          {"help", 0, 0, 'h'},
                                          {"scale", 1, 0, O_SCALE},
                                          {"format", 1, 0, O_FORMAT},
                                          {"chunk", 1, 0, O_CHUNK},
                                          {"deflate", 1, 0, O_DEFLATE},
                                          {"prefix", 1, 0, O_PREFIX},
                                          {"manifest", 1, 0, O_MANIFEST},
                                          {"inputs-name", 1, 0, O_INAME},
                                          {"targets-name", 1, 0, O_TNAME},
                                          {"label-column", 1, 0, O_LABEL},
                                          {"skip-header", 0, 0, O_SKIP},
                                          {"index", 0, 0, O_INDEX},
                                          {0, 0, 0, 0}};
    *o = (shard_opts_t){NULL, NULL, "shard", "manifest.txt", "inputs", "targets", 1, 0, 0, 0,
                        -1,   0,    1.0};
    long v = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:n:h", longs, NULL)) != -1) {
        int bad = 0;
        char *end;
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'n': bad = parse_long(optarg, 1, 1000000, &o->shards); break;
        case 'h': shard_usage(stdout); return -1;
        case O_SCALE: o->scale = strtod(optarg, &end), bad = end == optarg || *end; break;
        case O_FORMAT:
            o->format = optarg,
            bad = strcmp(optarg, "idx") && strcmp(optarg, "npy") && strcmp(optarg, "csv");
            break;
        case O_CHUNK: bad = parse_long(optarg, 1, 1L << 30, &o->chunk); break;
        case O_DEFLATE: bad = parse_long(optarg, 0, 9, &v), o->deflate = (int)v; break;
        case O_PREFIX: o->prefix = optarg, bad = !hpcti_manifest_path_is_safe(optarg); break;
        case O_MANIFEST: o->manifest = optarg, bad = !hpcti_manifest_path_is_safe(optarg); break;
        case O_INAME: o->inputs_name = optarg; break;
        case O_TNAME: o->targets_name = optarg; break;
        case O_LABEL: bad = parse_long(optarg, 0, INT_MAX, &v), o->label_column = (int)v; break;
        case O_SKIP: o->skip_header = 1; break;
        case O_INDEX: o->index = 1; break;
        default: shard_usage(stderr); return TOOL_USAGE;
        }
        if (bad)
            return tool_error(TOOL_USAGE, "bad value '%s' for option %s", optarg, argv[optind - 1]);
    }
    *first_arg = optind;
    if (!o->output) return tool_error(TOOL_USAGE, "missing -o/--output (try --help)");
    return TOOL_OK;
}

/* idx, npy or csv from --format or the name (a .gz suffix is ignored). */
static const char *format_of(const char *path, const char *forced)
{
    if (forced) return forced;
    if (strstr(path, ".npy")) return "npy";
    if (strstr(path, ".csv")) return "csv";
    if (strstr(path, "idx") || strstr(path, "ubyte")) return "idx";
    return NULL;
}

static int read_array(const char *path, const char *format, tool_array_t *a)
{
    if (!format) return tool_error(TOOL_USAGE, "%s: cannot tell the format; pass --format", path);
    return !strcmp(format, "npy") ? tool_read_npy(path, a) : tool_read_idx(path, a);
}

/* Inputs to float32 times scale; labels to int32 (integers) or float32. */
static int normalise(const shard_opts_t *o, tool_array_t *in, tool_array_t *tg)
{
    uint64_t n = 1, m = 1;
    for (int i = 0; i < in->rank; i++) n *= in->dims[i];
    for (int i = 0; i < tg->rank; i++) m *= tg->dims[i];
    float *x = malloc(n * sizeof *x);
    void *y = malloc(m * 4);
    if (!x || !y) return free(x), free(y), tool_error(TOOL_FAILED, "out of memory");
    hpcti_convert_f32(in->type, in->data, x, n);
    for (uint64_t i = 0; o->scale != 1.0 && i < n; i++) x[i] = (float)(x[i] * o->scale);
    int tg_int = !hpcti_type_is_float(tg->type);
    if (tg_int)
        hpcti_convert_i32(tg->type, tg->data, y, m);
    else
        hpcti_convert_f32(tg->type, tg->data, y, m);
    free(in->data), free(tg->data);
    in->data = x, in->type = HPCTI_F32;
    tg->data = y, tg->type = tg_int ? HPCTI_I32 : HPCTI_F32;
    return TOOL_OK;
}

/* Write rows [first, first + rows) of a into dataset name, chunked along N. */
static int write_rows(hid_t file, const char *name, const tool_array_t *a, uint64_t first,
                      uint64_t rows, const shard_opts_t *o)
{
    hsize_t dims[HPCTI_MAX_DIMS + 1], chunk[HPCTI_MAX_DIMS + 1];
    uint64_t per = 1;
    for (int i = 1; i < a->rank; i++) dims[i] = chunk[i] = a->dims[i], per *= a->dims[i];
    dims[0] = rows;
    uint64_t c = o->chunk ? (uint64_t)o->chunk : (1u << 20) / (per * 4) + 1;
    chunk[0] = c < rows ? c : rows;
    hid_t type = a->type == HPCTI_I32 ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT;
    hid_t space = H5Screate_simple(a->rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, a->rank, chunk);
    H5Pset_obj_track_times(dcpl, 0); /* no timestamps: the same input gives the same bytes */
    if (o->deflate) H5Pset_shuffle(dcpl), H5Pset_deflate(dcpl, (unsigned)o->deflate);
    hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    const char *data = (const char *)a->data + first * per * 4;
    int bad = d < 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0;
    if (d >= 0) H5Dclose(d);
    H5Pclose(dcpl), H5Sclose(space);
    return bad ? -1 : 0;
}

static void layout_of(const tool_array_t *a, hpcti_layout_t *l)
{
    l->type = a->type;
    l->rank = a->rank - 1;
    for (int i = 1; i < a->rank; i++) l->dims[i - 1] = a->dims[i];
}

/* Write the shards and the manifest under o->output. */
static int write_shards(const shard_opts_t *o, const tool_array_t *in, const tool_array_t *tg)
{
    uint64_t n = in->dims[0];
    if ((uint64_t)o->shards > n)
        return tool_error(TOOL_USAGE, "%ld shards for %llu samples: every shard needs one",
                          o->shards, (unsigned long long)n);
    if (mkdir(o->output, 0777) && errno != EEXIST)
        return tool_error(TOOL_FAILED, "%s: %s", o->output, strerror(errno));
    hpcti_manifest_t m = {0};
    layout_of(in, &m.inputs), layout_of(tg, &m.targets);
    m.shards = calloc((size_t)o->shards, sizeof *m.shards);
    int rc = m.shards ? TOOL_OK : tool_error(TOOL_FAILED, "out of memory");
    for (long k = 0; !rc && k < o->shards; k++, m.num_shards++) {
        uint64_t first = n * (uint64_t)k / (uint64_t)o->shards;
        uint64_t rows = n * (uint64_t)(k + 1) / (uint64_t)o->shards - first;
        char name[300], path[4096];
        snprintf(name, sizeof name, "%s-%05ld.h5", o->prefix, k);
        snprintf(path, sizeof path, "%s/%s", o->output, name);
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        int bad = f < 0 || write_rows(f, o->inputs_name, in, first, rows, o) ||
                  write_rows(f, o->targets_name, tg, first, rows, o);
        if (f >= 0 && H5Fclose(f) < 0) bad = 1;
        hpcti_shard_entry_t *e = &m.shards[k];
        e->samples = rows, e->path = strdup(name);
        if (bad || !e->path || hpcti_checksum_file(path, &e->checksum, &e->bytes))
            rc = tool_error(TOOL_FAILED, "cannot write shard %s", path);
    }
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s/%s", o->output, o->manifest);
    if (!rc && hpcti_manifest_write(&m, mpath))
        rc = tool_error(TOOL_FAILED, "cannot write %s: %s", mpath, strerror(errno));
    if (!rc)
        printf("wrote %d shards, %llu samples, manifest %s\n", m.num_shards, (unsigned long long)n,
               mpath);
    hpcti_manifest_free(&m);
    return rc;
}

static int convert(const shard_opts_t *o, int argc, char **argv)
{
    tool_array_t in = {0}, tg = {0};
    const char *fmt = format_of(argv[0], o->format);
    int rc;
    if (fmt && !strcmp(fmt, "csv")) {
        if (argc != 1) return tool_error(TOOL_USAGE, "CSV input is one file (inputs and labels)");
        rc = tool_read_csv(argv[0], o->label_column, o->skip_header, &in, &tg);
    } else {
        if (argc != 2) return tool_error(TOOL_USAGE, "need INPUTS and TARGETS files (try --help)");
        rc = read_array(argv[0], fmt, &in);
        if (!rc) rc = read_array(argv[1], format_of(argv[1], o->format), &tg);
        if (!rc && in.dims[0] != tg.dims[0])
            rc =
                tool_error(TOOL_DATA, "%s holds %llu samples but %s holds %llu", argv[0],
                           (unsigned long long)in.dims[0], argv[1], (unsigned long long)tg.dims[0]);
        if (!rc && in.rank < 2)
            rc = tool_error(TOOL_DATA, "%s: inputs need a per-sample shape ([N, ...])", argv[0]);
        if (!rc && in.dims[0] == 0) rc = tool_error(TOOL_DATA, "%s: no samples", argv[0]);
        if (!rc) rc = normalise(o, &in, &tg);
    }
    if (!rc && o->scale != 1.0 && fmt && !strcmp(fmt, "csv"))
        for (uint64_t i = 0; i < in.dims[0] * in.dims[1]; i++)
            ((float *)in.data)[i] = (float)(((float *)in.data)[i] * o->scale);
    if (!rc) rc = write_shards(o, &in, &tg);
    free(in.data), free(tg.data);
    return rc;
}

/* --index: one existing shard's layout of dataset name. */
static int index_layout(hid_t file, const char *path, const char *name, hpcti_layout_t *l,
                        uint64_t *rows)
{
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return tool_error(TOOL_DATA, "%s has no dataset /%s", path, name);
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    hid_t type = H5Dget_type(d), space = H5Dget_space(d);
    int le, t = hpcti_h5_shard_type(type, &le), rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[HPCTI_MAX_DIMS + 1];
    if (rank >= 1 && rank <= HPCTI_MAX_DIMS + 1) H5Sget_simple_extent_dims(space, dims, NULL);
    H5Tclose(type), H5Sclose(space), H5Dclose(d);
    if (t < 0) return tool_error(TOOL_DATA, "%s dataset /%s: unsupported dtype", path, name);
    if (rank < 1 || rank > HPCTI_MAX_DIMS + 1)
        return tool_error(TOOL_DATA, "%s dataset /%s: rank %d not supported", path, name, rank);
    if (dims[0] == 0) return tool_error(TOOL_DATA, "%s dataset /%s: empty shard", path, name);
    l->type = (hpcti_type_t)t, l->rank = rank - 1, *rows = dims[0];
    for (int i = 1; i < rank; i++) l->dims[i - 1] = dims[i];
    return TOOL_OK;
}

static int same_layout(const hpcti_layout_t *a, const hpcti_layout_t *b)
{
    if (a->type != b->type || a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* Path of file relative to dir (both resolved), or NULL when it lies outside dir. */
static char *relative_to(const char *dir, const char *file)
{
    char *d = realpath(dir, NULL), *f = realpath(file, NULL), *rel = NULL;
    size_t n = d ? strlen(d) : 0;
    if (d && f && !strncmp(d, f, n) && f[n] == '/') rel = strdup(f + n + 1);
    free(d), free(f);
    return rel;
}

/* One shard of --index: layouts must match the first shard's; entry gets size and hash. */
static int index_one(const shard_opts_t *o, const char *dir, const char *path, hpcti_manifest_t *m,
                     hpcti_shard_entry_t *e)
{
    hpcti_layout_t in, tg;
    uint64_t n_in = 0, n_tg = 0;
    int rc = TOOL_OK;
    H5E_BEGIN_TRY
    {
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (f < 0) rc = tool_error(TOOL_DATA, "%s: not a readable HDF5 file", path);
        if (!rc) rc = index_layout(f, path, o->inputs_name, &in, &n_in);
        if (!rc) rc = index_layout(f, path, o->targets_name, &tg, &n_tg);
        if (f >= 0) H5Fclose(f);
    }
    H5E_END_TRY;
    if (rc) return rc;
    if (n_in != n_tg)
        return tool_error(TOOL_DATA, "%s: /%s has %llu samples but /%s has %llu", path,
                          o->inputs_name, (unsigned long long)n_in, o->targets_name,
                          (unsigned long long)n_tg);
    if (m->num_shards == 0) m->inputs = in, m->targets = tg;
    if (!same_layout(&in, &m->inputs) || !same_layout(&tg, &m->targets))
        return tool_error(TOOL_DATA,
                          "%s: dtype or per-sample shape of /%s or /%s differs from "
                          "the first shard's",
                          path, o->inputs_name, o->targets_name);
    e->samples = n_in;
    e->path = relative_to(dir, path);
    if (!e->path)
        return tool_error(TOOL_DATA, "%s lies outside the manifest's directory %s", path, dir);
    if (hpcti_checksum_file(path, &e->checksum, &e->bytes))
        return tool_error(TOOL_DATA, "%s: %s", path, strerror(errno));
    return TOOL_OK;
}

static int index_shards(const shard_opts_t *o, int argc, char **argv)
{
    if (argc < 1) return tool_error(TOOL_USAGE, "--index needs at least one shard file");
    char *dir = strdup(o->output), *slash = dir ? strrchr(dir, '/') : NULL;
    if (!dir) return tool_error(TOOL_FAILED, "out of memory");
    if (slash) *slash = '\0';
    hpcti_manifest_t m = {0};
    m.shards = calloc((size_t)argc, sizeof *m.shards);
    int rc = m.shards ? TOOL_OK : tool_error(TOOL_FAILED, "out of memory");
    for (int i = 0; !rc && i < argc; i++) {
        rc = index_one(o, slash ? (*dir ? dir : "/") : ".", argv[i], &m, &m.shards[i]);
        m.num_shards++;
        for (int j = 0; !rc && j < i; j++)
            if (!strcmp(m.shards[j].path, m.shards[i].path))
                rc = tool_error(TOOL_USAGE, "%s is listed twice", argv[i]);
    }
    if (!rc && hpcti_manifest_write(&m, o->output))
        rc = tool_error(TOOL_FAILED, "cannot write %s: %s", o->output, strerror(errno));
    if (!rc) printf("wrote manifest %s for %d shards\n", o->output, m.num_shards);
    hpcti_manifest_free(&m);
    free(dir);
    return rc;
}

int tool_shard_main(int argc, char **argv)
{
    shard_opts_t o;
    int first = 0, rc = parse_options(argc, argv, &o, &first);
    if (rc) return rc < 0 ? TOOL_OK : rc;
    if (first >= argc) return tool_error(TOOL_USAGE, "no input files (try --help)");
    return o.index ? index_shards(&o, argc - first, argv + first)
                   : convert(&o, argc - first, argv + first);
}
