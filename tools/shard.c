/* shard.c: `hpctrain shard`: IDX/.npy/CSV -> N HDF5 shards + manifest, or a manifest for
 * existing HDF5 shards (--index). Formats: doc/data-formats.md. Shards and manifests are
 * written through the public writers (hpct_shard_*, hpct_manifest_*). */
#include "config.h"
#include "tools.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
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
/* "--name" of option c in longs (the value, not the option, is argv[optind - 1] when they
 * are separate words). */
static const char *name_of(const struct option *longs, int c)
{
    static char name[64];
    for (int i = 0; longs[i].name; i++)
        if (longs[i].val == c) {
            snprintf(name, sizeof name, "--%s", longs[i].name);
            return name;
        }
    return "?";
}

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
        if (optarg && optarg == argv[optind - 1] && tool_is_option_word(optarg))
            return tool_error(TOOL_USAGE,
                              "%s needs a value (the next word, '%s', is an option; write "
                              "%s=VALUE for a value that starts with --)",
                              name_of(longs, c), optarg, name_of(longs, c));
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'n': bad = parse_long(optarg, 1, 1000000, &o->shards); break;
        case 'h': shard_usage(stdout); return -1;
        case O_SCALE:
            o->scale = strtod(optarg, &end);
            bad = end == optarg || *end || !isfinite(o->scale) || o->scale == 0;
            break;
        case O_FORMAT:
            o->format = optarg,
            bad = strcmp(optarg, "idx") && strcmp(optarg, "npy") && strcmp(optarg, "csv");
            break;
        case O_CHUNK: bad = parse_long(optarg, 1, 1L << 30, &o->chunk); break;
        case O_DEFLATE: bad = parse_long(optarg, 0, 9, &v), o->deflate = (int)v; break;
        case O_PREFIX: o->prefix = optarg, bad = hpct_manifest_check_path(optarg) != 0; break;
        case O_MANIFEST: o->manifest = optarg, bad = hpct_manifest_check_path(optarg) != 0; break;
        case O_INAME: o->inputs_name = optarg; break;
        case O_TNAME: o->targets_name = optarg; break;
        case O_LABEL: bad = parse_long(optarg, 0, INT_MAX, &v), o->label_column = (int)v; break;
        case O_SKIP: o->skip_header = 1; break;
        case O_INDEX: o->index = 1; break;
        default: shard_usage(stderr); return TOOL_USAGE;
        }
        if (bad)
            return tool_error(TOOL_USAGE, "bad value '%s' for option %s", optarg,
                              name_of(longs, c));
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

/* Inputs to float32 times scale; labels to int32 (integers) or float32. names [2]: the
 * input files, for messages. */
static int normalise(const shard_opts_t *o, tool_array_t *in, tool_array_t *tg, char *const *names)
{
    uint64_t n = 1, m = 1;
    for (int i = 0; i < in->rank; i++) n *= in->dims[i];
    for (int i = 0; i < tg->rank; i++) m *= tg->dims[i];
    float *x = malloc(n * sizeof *x);
    void *y = malloc(m * 4);
    if (!x || !y) return free(x), free(y), tool_error(TOOL_FAILED, "out of memory");
    tool_to_f32(in->type, in->data, x, n);
    for (uint64_t i = 0; o->scale != 1.0 && i < n; i++) x[i] = (float)(x[i] * o->scale);
    int tg_int = !tool_type_is_float(tg->type);
    size_t bad = 0;
    if (tg_int && tool_to_i32(tg->type, tg->data, y, m, &bad)) {
        free(x), free(y);
        return tool_error(TOOL_DATA,
                          "%s: label %zu (sample %llu) does not fit int32: integer labels are "
                          "stored as int32",
                          names[1], bad, (unsigned long long)(bad / (m / tg->dims[0])));
    }
    if (!tg_int) tool_to_f32(tg->type, tg->data, y, m);
    free(in->data), free(tg->data);
    in->data = x, in->type = TOOL_F32;
    tg->data = y, tg->type = tg_int ? TOOL_I32 : TOOL_F32;
    return TOOL_OK;
}

/* Write rows [first, first + rows) of a (float32 or int32) into dataset name of shard. */
static hpct_status_t write_rows(hpct_shard_writer_t shard, const char *name, const tool_array_t *a,
                                uint64_t first, uint64_t rows)
{
    uint64_t dims[HPCT_SHARD_MAX_RANK], per = 1;
    for (int i = 1; i < a->rank; i++) dims[i] = a->dims[i], per *= a->dims[i];
    dims[0] = rows;
    const char *data = (const char *)a->data + first * per * 4;
    return hpct_shard_write(shard, name,
                            a->type == TOOL_I32 ? HPCT_DTYPE_INT32 : HPCT_DTYPE_FLOAT32, a->rank,
                            dims, data);
}

/* Shard file path of rows [first, first + rows) of in and tg, added to manifest m. */
static int write_shard(hpct_ctx_t ctx, const shard_opts_t *o, const char *path,
                       const tool_array_t *in, const tool_array_t *tg, uint64_t first,
                       uint64_t rows, hpct_manifest_t m)
{
    const hpct_shard_config_t cfg = {HPCT_SHARD_CONFIG_VERSION, o->chunk, o->deflate};
    hpct_shard_writer_t shard;
    char why[1024] = ""; /* the first failure's detail (closing clears it) */
    int bad = hpct_shard_create(ctx, path, &cfg, &shard) != HPCT_SUCCESS;
    if (!bad) {
        bad = write_rows(shard, o->inputs_name, in, first, rows) ||
              write_rows(shard, o->targets_name, tg, first, rows);
        if (bad) snprintf(why, sizeof why, "%s", hpct_last_error(ctx));
        if (hpct_shard_close(shard)) bad = 1;
    }
    if (bad && !why[0]) snprintf(why, sizeof why, "%s", hpct_last_error(ctx));
    if (bad) return tool_error(TOOL_FAILED, "%s", why);
    if (hpct_manifest_add_shard(m, path))
        return tool_error(TOOL_FAILED, "%s", hpct_last_error(ctx));
    return TOOL_OK;
}

/* 0 when no output (the manifest, shard k < shards) is one of the inputs [n]; else says which
 * (TOOL_USAGE): writing it would replace the source data before or while it is read. */
static int outputs_spare_inputs(const shard_opts_t *o, long shards, char *const *inputs, int n)
{
    char path[4096];
    for (long k = -1; k < shards; k++) {
        if (k < 0)
            snprintf(path, sizeof path, "%s/%s", o->output, o->manifest);
        else
            snprintf(path, sizeof path, "%s/%s-%05ld.h5", o->output, o->prefix, k);
        for (int i = 0; i < n; i++)
            if (tool_same_file(path, inputs[i]))
                return tool_error(TOOL_USAGE,
                                  "the output %s is the input %s: it would be overwritten; "
                                  "choose another -o, --manifest or --prefix",
                                  path, inputs[i]);
    }
    return TOOL_OK;
}

/* Write the shards and the manifest under o->output. */
static int write_shards(hpct_ctx_t ctx, const shard_opts_t *o, const tool_array_t *in,
                        const tool_array_t *tg)
{
    uint64_t n = in->dims[0];
    if ((uint64_t)o->shards > n)
        return tool_error(TOOL_USAGE, "%ld shards for %llu samples: every shard needs one",
                          o->shards, (unsigned long long)n);
    if (mkdir(o->output, 0777) && errno != EEXIST)
        return tool_error(TOOL_FAILED, "%s: %s", o->output, strerror(errno));
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s/%s", o->output, o->manifest);
    hpct_manifest_t m;
    hpct_status_t s = hpct_manifest_create(ctx, mpath, o->inputs_name, o->targets_name, &m);
    if (s) /* a bad --inputs-name or --targets-name, before any file is written */
        return tool_error(s == HPCT_ERR_INVALID_ARG ? TOOL_USAGE : TOOL_FAILED, "%s",
                          hpct_last_error(ctx));
    int rc = TOOL_OK;
    for (long k = 0; !rc && k < o->shards; k++) {
        uint64_t first = n * (uint64_t)k / (uint64_t)o->shards;
        uint64_t rows = n * (uint64_t)(k + 1) / (uint64_t)o->shards - first;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s-%05ld.h5", o->output, o->prefix, k);
        rc = write_shard(ctx, o, path, in, tg, first, rows, m);
    }
    if (!rc && hpct_manifest_write(m)) rc = tool_error(TOOL_FAILED, "%s", hpct_last_error(ctx));
    if (!rc)
        printf("wrote %ld shards, %llu samples, manifest %s\n", o->shards, (unsigned long long)n,
               mpath);
    hpct_manifest_destroy(m);
    return rc;
}

/* Shards hold finite inputs only (the reader would refuse or skip them later): a NaN or
 * Inf (CSV "1e400", a huge --scale) is an error naming the sample and feature. */
static int check_finite(const tool_array_t *in, const char *name, double scale)
{
    uint64_t per = 1;
    for (int i = 1; i < in->rank; i++) per *= in->dims[i];
    const float *x = in->data;
    for (uint64_t i = 0; i < in->dims[0] * per; i++)
        if (!isfinite(x[i]))
            return tool_error(TOOL_DATA,
                              "%s: sample %llu, input %llu is %g as float32 (after --scale %g): "
                              "shards hold finite values only",
                              name, (unsigned long long)(i / per), (unsigned long long)(i % per),
                              (double)x[i], scale);
    return TOOL_OK;
}

/* Targets as the reader and the loss need them: float targets finite (a NaN label would stop
 * training as "diverged" at that sample, not as bad data); integer labels read from text
 * within float32's exact integers (|label| <= 2^24: the CSV reader parses float32). */
static int check_targets(const tool_array_t *tg, const char *name)
{
    uint64_t m = 1;
    for (int i = 0; i < tg->rank; i++) m *= tg->dims[i];
    uint64_t per = tg->dims[0] ? m / tg->dims[0] : 1;
    for (uint64_t i = 0; tg->type == TOOL_F32 && i < m; i++)
        if (!isfinite(((const float *)tg->data)[i]))
            return tool_error(TOOL_DATA,
                              "%s: sample %llu, target %llu is %g: targets must be finite "
                              "(a class label or a regression value)",
                              name, (unsigned long long)(i / per), (unsigned long long)(i % per),
                              (double)((const float *)tg->data)[i]);
    return TOOL_OK;
}

static int convert(hpct_ctx_t ctx, const shard_opts_t *o, int argc, char **argv)
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
        if (!rc) rc = normalise(o, &in, &tg, argv);
    }
    if (!rc && o->scale != 1.0 && fmt && !strcmp(fmt, "csv"))
        for (uint64_t i = 0; i < in.dims[0] * in.dims[1]; i++)
            ((float *)in.data)[i] = (float)(((float *)in.data)[i] * o->scale);
    if (!rc) rc = check_finite(&in, argv[0], o->scale);
    if (!rc) rc = check_targets(&tg, argv[argc - 1]);
    if (!rc) rc = outputs_spare_inputs(o, o->shards, argv, argc);
    if (!rc) rc = write_shards(ctx, o, &in, &tg);
    free(in.data), free(tg.data);
    return rc;
}

/* --index: 1 when resolved (a resolved path) is one of seen [n]. */
static int listed_before(char **seen, int n, const char *resolved)
{
    for (int j = 0; resolved && j < n; j++)
        if (seen[j] && !strcmp(seen[j], resolved)) return 1;
    return 0;
}

static int index_shards(hpct_ctx_t ctx, const shard_opts_t *o, int argc, char **argv)
{
    if (argc < 1) return tool_error(TOOL_USAGE, "--index needs at least one shard file");
    for (int i = 0; i < argc; i++)
        if (tool_same_file(o->output, argv[i]))
            return tool_error(TOOL_USAGE,
                              "the manifest %s is the shard %s: it would be "
                              "overwritten; write the manifest under another name",
                              o->output, argv[i]);
    hpct_manifest_t m;
    hpct_status_t made = hpct_manifest_create(ctx, o->output, o->inputs_name, o->targets_name, &m);
    if (made)
        return tool_error(made == HPCT_ERR_INVALID_ARG ? TOOL_USAGE : TOOL_FAILED, "%s",
                          hpct_last_error(ctx));
    char **seen = calloc((size_t)argc, sizeof *seen);
    int rc = seen ? TOOL_OK : tool_error(TOOL_FAILED, "out of memory");
    for (int i = 0; !rc && i < argc; i++) {
        hpct_status_t s;
        seen[i] = realpath(argv[i], NULL);
        if (listed_before(seen, i, seen[i]))
            rc = tool_error(TOOL_USAGE, "%s is listed twice", argv[i]);
        else if ((s = hpct_manifest_add_shard(m, argv[i])))
            rc = tool_error(s == HPCT_ERR_NO_MEMORY ? TOOL_FAILED : TOOL_DATA, "%s",
                            hpct_last_error(ctx));
    }
    if (!rc && hpct_manifest_write(m)) rc = tool_error(TOOL_FAILED, "%s", hpct_last_error(ctx));
    if (!rc) printf("wrote manifest %s for %d shards\n", o->output, argc);
    for (int i = 0; seen && i < argc; i++) free(seen[i]);
    free(seen);
    hpct_manifest_destroy(m);
    return rc;
}

int tool_shard_main(int argc, char **argv)
{
    shard_opts_t o;
    int first = 0, rc = parse_options(argc, argv, &o, &first);
    if (rc) return rc < 0 ? TOOL_OK : rc;
    if (first >= argc) return tool_error(TOOL_USAGE, "no input files (try --help)");
    hpct_ctx_t ctx;
    if (hpct_ctx_create(NULL, &ctx)) return tool_error(TOOL_FAILED, "cannot create a context");
    rc = o.index ? index_shards(ctx, &o, argc - first, argv + first)
                 : convert(ctx, &o, argc - first, argv + first);
    hpct_ctx_destroy(ctx);
    return rc;
}
