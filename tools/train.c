/* train.c: `hpctrain train`: the built-in MLP trained data-parallel from a settings file,
 * HPCT_* variables and flags, with checkpoints, preemption and automatic resume. */
#include "config.h"
#include "hpctrain.h"
#include "tools.h"

#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Exit codes of `hpctrain train` beyond tools.h's (documented in hpctrain(1)). */
#define TRAIN_PREEMPTED 75 /* EX_TEMPFAIL: checkpoint written, requeue the job */
#define TRAIN_ERROR     1  /* anything else that stopped training */
#define TRAIN_DIVERGED  4  /* the divergence guard stopped it; the last good checkpoint stays */

static const char usage_text[] =
    "usage: hpctrain train [--config FILE] [--KEY=VALUE | --KEY VALUE]... [--print-config]\n"
    "                      [--allow-config-change]\n"
    "Trains the built-in MLP data-parallel (run it under srun --mpi=pmix or mpirun, or alone).\n"
    "Settings (see hpctrain.conf(5)) come from defaults, FILE, HPCT_<KEY> variables, then flags.\n"
    "It resumes from the newest valid checkpoint in checkpoint_dir unless resume = never.\n"
    "When done, rank 0 prints 'hpctrain: params hash 0x...' (the final parameters' hash).\n"
    "exit status: 0 done, 1 training failed (also: a file could not be written, e.g. a full\n"
    "disk), 2 usage or settings error, 3 bad input data, 4 training diverged (the last good\n"
    "checkpoint is kept), 75 preempted (checkpoint written: requeue), 124 a rank hung\n"
    "(emergency checkpoint).\n";

struct run {
    hpct_settings_t c;
    int allow_config_change, print_config;
    int agreed_failure; /* the failure was every rank's (hpct_last_error_shared): no abort */
    hpct_ctx_t ctx;
    hpct_topology_t topo;
    hpct_dataset_t train, eval;
    hpct_model_t model;
    hpct_optimizer_t opt;
    hpct_ckpt_t ck;
    hpct_signals_t signals;
    /* test hooks (t/test_train_*.sh), read from the environment; step 0 = off */
    long raise_step, stop_step, delay_ms;
    int raise_rank, stop_rank;
    /* the latest evaluation (hpct_train runs it on eval_manifest's data) */
    double eval_loss, eval_acc;
    long eval_n;
    char metrics[HPCT_SETTINGS_PATH_MAX + 32], timeline[HPCT_SETTINGS_PATH_MAX + 32];
};

/* Print "hpctrain train: error: ..." on stderr (tool_error); returns code. Settings errors
 * are the same on every rank (same files, variables and arguments): only rank 0 prints. */
static int conf_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int conf_error(int code, const char *fmt, ...)
{
    if (tool_launcher_rank() > 0) {
        tool_let_rank0_print(); /* the same error stops rank 0, which prints it */
        return code;
    }
    va_list ap;
    va_start(ap, fmt);
    tool_verror(code, fmt, ap);
    va_end(ap);
    return code;
}

/* --key=value, --key value; dashes in keys become underscores. */
static int parse_args(struct run *r, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            exit(TOOL_OK);
        }
        if (!strcmp(a, "--print-config")) {
            r->print_config = 1;
            continue;
        }
        if (!strcmp(a, "--allow-config-change")) {
            r->allow_config_change = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) return conf_error(TOOL_USAGE, "unexpected argument '%s'", a);
        char key[128];
        const char *eq = strchr(a + 2, '='), *value;
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len == 0 || len >= sizeof key) return conf_error(TOOL_USAGE, "bad option '%s'", a);
        memcpy(key, a + 2, len);
        key[len] = '\0';
        for (char *p = key; *p; p++) *p = *p == '-' ? '_' : *p;
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc && !tool_is_option_word(argv[i + 1]))
            value = argv[++i];
        else if (i + 1 < argc)
            return conf_error(TOOL_USAGE,
                              "option '%s' needs a value (the next word, '%s', is an option; "
                              "write %s=VALUE for a value that starts with --)",
                              a, argv[i + 1], a);
        else
            return conf_error(TOOL_USAGE, "option '%s' needs a value", a);
        if (!strcmp(key, "config")) continue; /* loaded first, in load_settings */
        char where[160];
        snprintf(where, sizeof where, "option --%s", key);
        if (hpct_settings_set(&r->c, key, value, where))
            return conf_error(TOOL_USAGE, "%s", hpct_last_error(NULL));
    }
    return TOOL_OK;
}

/* Every setting with its value, in file syntax (--print-config). */
static void print_settings(const hpct_settings_t *c)
{
    char v[HPCT_SETTINGS_PATH_MAX + 8];
    for (int i = 0; hpct_settings_key(i); i++)
        if (!hpct_settings_format(c, hpct_settings_key(i), v, sizeof v))
            printf("%s = %s\n", hpct_settings_key(i), v);
}

/* Defaults, then --config FILE, then the environment, then the other flags. */
static int load_settings(struct run *r, int argc, char **argv)
{
    hpct_settings_defaults(&r->c);
    for (int i = 1; i < argc; i++) {
        const char *file = NULL;
        if (!strncmp(argv[i], "--config=", 9))
            file = argv[i] + 9;
        else if (!strcmp(argv[i], "--config") && i + 1 < argc &&
                 !tool_is_option_word(argv[i + 1])) /* else parse_args says it is missing */
            file = argv[++i];
        if (file && hpct_settings_read_file(&r->c, file))
            return conf_error(TOOL_USAGE, "%s", hpct_last_error(NULL));
    }
    if (hpct_settings_read_env(&r->c)) return conf_error(TOOL_USAGE, "%s", hpct_last_error(NULL));
    int code = parse_args(r, argc, argv);
    if (code) return code;
    if (r->print_config) {
        print_settings(&r->c);
        exit(TOOL_OK);
    }
    if (hpct_settings_check(&r->c, HPCT_SETTINGS_TRAIN))
        return conf_error(TOOL_USAGE, "%s", hpct_last_error(NULL));
    return TOOL_OK;
}

/* The exit code of status s. HPCT_ERR_IO is the file system failing (a full disk, a quota, a
 * read-only or broken mount): exit 1 like other failures, unless input is set (opening the
 * input data, where a file that cannot be read is bad input: 3). */
static int exit_code(hpct_status_t s, int input)
{
    if (s == HPCT_ERR_IO) return input ? TOOL_DATA : TOOL_FAILED;
    return s == HPCT_ERR_FORMAT || s == HPCT_ERR_CHECKSUM || s == HPCT_ERR_NOT_FOUND ||
                   s == HPCT_ERR_NONFINITE
               ? TOOL_DATA
           : s == HPCT_ERR_INVALID_ARG   ? TOOL_USAGE /* the settings do not fit */
           : s == HPCT_ERR_LOSS_DIVERGED ? TRAIN_DIVERGED
                                         : TRAIN_ERROR;
}

/* A hint after the message, or "" (line is what is printed so far, n its length). */
static void add_hint(char *line, int n, size_t size, hpct_status_t s, int code, const char *detail)
{
    const char *hint = "";
    if (s == HPCT_ERR_INVALID_ARG && strstr(detail, "training configuration hash"))
        hint = "hpctrain train: the settings differ from the checkpoint's; "
               "--allow-config-change resumes from it anyway\n";
    else if (s == HPCT_ERR_IO && code == TOOL_FAILED)
        hint = "hpctrain train: an I/O failure (a full disk, a quota, a read-only or failing file "
               "system), not bad input; checkpoints written before it are intact\n";
    if (n > 0 && (size_t)n < size) snprintf(line + n, size - (size_t)n, "%s", hint);
}

/* Report a failed library call: which call, the status and the detail; input: the call opened
 * the input data (exit_code). */
static int fail_as(struct run *r, const char *what, hpct_status_t s, int input)
{
    int code = exit_code(s, input);
    const char *detail = hpct_last_error(r->ctx);
    /* An error every rank agreed on (it names the failing rank) is printed once, by rank 0;
     * a rank's own error with its rank. Each message is one write, so lines never mix. */
    r->agreed_failure = hpct_last_error_shared(r->ctx);
    if (r->agreed_failure && r->topo.rank != 0) return code;
    char line[1600];
    int n = snprintf(line, sizeof line, "hpctrain train: rank %d: %s failed: %s: %s\n",
                     r->topo.rank, what, hpct_strerror(s), detail);
    add_hint(line, n, sizeof line, s, code, detail);
    fputs(line, stderr);
    return code;
}

static int fail(struct run *r, const char *what, hpct_status_t s)
{
    return fail_as(r, what, s, 0);
}

static int open_data(struct run *r)
{
    hpct_data_config_t dc = HPCT_DATA_CONFIG_INITIALIZER;
    dc.seed = (uint64_t)r->c.seed;
    dc.memory_budget_bytes = (size_t)r->c.data_memory_mib << 20;
    const char *st = r->c.data_store;
    dc.store = !strcmp(st, "off")    ? HPCT_STORE_OFF
               : !strcmp(st, "job")  ? HPCT_STORE_JOB
               : !strcmp(st, "node") ? HPCT_STORE_NODE
                                     : HPCT_STORE_AUTO;
    hpct_status_t s = hpct_dataset_open(r->ctx, r->c.train_manifest, &dc, &r->train);
    if (s) return fail_as(r, "opening the training data", s, 1);
    if (!r->c.eval_manifest[0]) return TOOL_OK;
    dc.shuffle = 0;
    s = hpct_dataset_open(r->ctx, r->c.eval_manifest, &dc, &r->eval);
    return s ? fail_as(r, "opening the evaluation data", s, 1) : TOOL_OK;
}

/* The layers key's layers on features inputs; the last must give outputs values. */
static int add_layers(struct run *r, int features, int outputs, int ce)
{
    int last = 0;
    hpct_status_t s =
        hpct_model_add_layers(r->model, r->c.layers, tool_activation(r->c.activation));
    if (s) return fail(r, "building the model from layers", s);
    hpct_model_shape(r->model, NULL, &last);
    if (last == outputs) return TOOL_OK;
    return conf_error(TOOL_USAGE,
                      "layers: the last layer gives %d values per sample, but %s %d (the data "
                      "has %d input features)",
                      last, ce ? "outputs (classes) is" : "the targets are", outputs, features);
}

/* Input width and classes (or target width) from the data; hidden layers (or the layers key's
 * model) from settings. */
static int build_model(struct run *r)
{
    int features, width;
    hpct_dtype_t dtype;
    hpct_status_t s = hpct_dataset_info(r->train, NULL, &features, &width, &dtype);
    int ce = !strcmp(r->c.loss, "softmax_ce");
    int outputs = ce ? (int)r->c.outputs : width;
    if (!s && ce && dtype != HPCT_DTYPE_INT32)
        return conf_error(TOOL_USAGE,
                          "loss = softmax_ce needs integer class labels, but %s has "
                          "float targets (use loss = mse)",
                          r->c.train_manifest);
    if (!s && ce && outputs <= 0)
        return conf_error(TOOL_USAGE, "loss = softmax_ce needs outputs = the number of classes");
    if (!s) s = hpct_model_create(r->ctx, features, &r->model);
    int rc = !s && r->c.layers[0] ? add_layers(r, features, outputs, ce) : TOOL_OK;
    if (rc != TOOL_OK) return rc;
    for (int i = 0; !s && !r->c.layers[0] && i < r->c.num_hidden; i++)
        s = hpct_model_add_dense(r->model, r->c.hidden[i], tool_activation(r->c.activation),
                                 HPCT_INIT_AUTO);
    if (!s && !r->c.layers[0])
        s = hpct_model_add_dense(r->model, outputs, HPCT_ACT_IDENTITY, HPCT_INIT_AUTO);
    if (!s) s = hpct_model_set_loss(r->model, ce ? HPCT_LOSS_SOFTMAX_CE : HPCT_LOSS_MSE);
    int local = (int)(r->c.global_batch / (r->topo.size > 0 ? r->topo.size : 1));
    if (!s) s = hpct_model_build(r->model, local > 0 ? local : 1);
    return s ? fail(r, "building the model", s) : TOOL_OK;
}

static int make_optimizer(struct run *r, long steps_per_epoch)
{
    const hpct_settings_t *c = &r->c;
    hpct_optim_config_t oc = HPCT_OPTIM_CONFIG_INITIALIZER;
    oc.kind = !strcmp(c->optimizer, "adamw") ? HPCT_OPT_ADAMW : HPCT_OPT_SGD;
    oc.lr = (float)c->lr, oc.momentum = (float)c->momentum, oc.nesterov = c->nesterov;
    oc.weight_decay = (float)c->weight_decay, oc.beta1 = (float)c->beta1,
    oc.beta2 = (float)c->beta2;
    oc.eps = (float)c->eps, oc.clip_norm = (float)c->clip_norm;
    oc.schedule = !strcmp(c->schedule, "step")     ? HPCT_SCHED_STEP
                  : !strcmp(c->schedule, "cosine") ? HPCT_SCHED_COSINE
                                                   : HPCT_SCHED_CONSTANT;
    oc.warmup_steps = c->warmup_steps, oc.step_size = c->step_size, oc.gamma = (float)c->gamma;
    long after_warmup = c->epochs * steps_per_epoch - c->warmup_steps;
    oc.total_steps = c->total_steps > 0 ? c->total_steps : (after_warmup > 0 ? after_warmup : 1);
    oc.min_lr = (float)c->min_lr;
    hpct_params_t params;
    hpct_status_t s = hpct_model_params(r->model, &params);
    if (!s) s = hpct_optimizer_create(params, &oc, &r->opt);
    return s ? fail(r, "creating the optimizer", s) : TOOL_OK;
}

static int open_checkpoints(struct run *r)
{
    hpct_ckpt_config_t kc = HPCT_CKPT_CONFIG_INITIALIZER;
    kc.directory = r->c.checkpoint_dir;
    kc.keep_last = (int)r->c.checkpoint_keep;
    kc.keep_every = (int)r->c.checkpoint_keep_every;
    kc.every_steps = r->c.checkpoint_every_steps;
    kc.every_seconds = r->c.checkpoint_every_seconds;
    kc.async = r->c.checkpoint_async;
    kc.defer_copy = kc.async; /* the writer copies during the next forward/backward */
    kc.allow_config_change = r->allow_config_change;
    kc.config_hash = hpct_settings_hash(&r->c);
    kc.walltime_margin = r->topo.rank == 0 ? r->c.walltime_margin : 0.0; /* one Slurm query */
    hpct_status_t s = hpct_ckpt_open(r->ctx, &kc, &r->ck);
    return s ? fail(r, "opening the checkpoint directory", s) : TOOL_OK;
}

/* A test hook's value, or NULL unless HPCT_TEST_HOOKS=1 is set as well (the library's rule,
 * lib/core/testhook.c): a stray variable in a user's environment does nothing. */
static const char *test_hook(const char *name)
{
    const char *gate = getenv("HPCT_TEST_HOOKS");
    return gate && strcmp(gate, "1") == 0 ? getenv(name) : NULL;
}

/* Test hooks, for the end-to-end tests only, with HPCT_TEST_HOOKS=1 (doc/reliability.md):
 * HPCT_TEST_RAISE_AT_STEP=k[,rank]  that rank (default: the last) raises SIGTERM at step k;
 * HPCT_TEST_STOP_AT_STEP=k[,rank]   that rank (default: the last) stops itself with SIGSTOP;
 * HPCT_TEST_STEP_DELAY_MS=ms        every rank sleeps ms after each reported step. */
static void read_test_hooks(struct run *r)
{
    const char *v;
    int last = r->topo.size > 1 ? r->topo.size - 1 : 0;
    r->raise_rank = r->stop_rank = last;
    if ((v = test_hook("HPCT_TEST_RAISE_AT_STEP")))
        sscanf(v, "%ld,%d", &r->raise_step, &r->raise_rank);
    if ((v = test_hook("HPCT_TEST_STOP_AT_STEP")))
        sscanf(v, "%ld,%d", &r->stop_step, &r->stop_rank);
    if ((v = test_hook("HPCT_TEST_STEP_DELAY_MS"))) r->delay_ms = atol(v);
}

static void run_test_hooks(const struct run *r, long step)
{
    if (r->raise_step > 0 && step == r->raise_step && r->topo.rank == r->raise_rank) raise(SIGTERM);
    if (r->stop_step > 0 && step == r->stop_step && r->topo.rank == r->stop_rank) raise(SIGSTOP);
    struct timespec delay = {r->delay_ms / 1000, r->delay_ms % 1000 * 1000000L};
    if (r->delay_ms > 0) nanosleep(&delay, NULL);
}

static void print_progress(const hpct_progress_t *p, void *arg)
{
    const struct run *r = arg;
    run_test_hooks(r, p->step);
    if (r->topo.rank != 0) return;
    long eta = (long)p->eta_s;
    printf("epoch %ld step %ld/%ld loss %.6f lr %.4g samples/s %.0f data %.1f%% comm %.1f%% "
           "eta %ldm%02lds read %.1f MiB/epoch held %.1f MiB (node %.1f MiB) sent %.1f MiB\n",
           p->epoch + 1, p->step, p->total_steps, p->loss, p->lr, p->samples_per_s,
           100.0 * p->data_wait_share, 100.0 * p->comm_share, eta / 60, eta % 60,
           p->data_epoch_bytes_read / 1048576.0, p->data_resident_bytes / 1048576.0,
           p->data_node_resident_bytes / 1048576.0, p->data_exchange_bytes / 1048576.0);
    fflush(stdout);
}

/* Every evaluation during training (cadence and end): rank 0 prints it; the last is kept. */
static void print_eval(long step, double loss, double acc, long n, void *arg)
{
    struct run *r = arg;
    r->eval_loss = loss, r->eval_acc = acc, r->eval_n = n;
    if (r->topo.rank == 0)
        printf("hpctrain: evaluation after step %ld: test loss %.4f accuracy %.4f\n", step, loss,
               acc);
    fflush(stdout);
}

/* metrics_file: auto = checkpoint_dir/metrics.jsonl, none = off (""), else the path. */
static const char *metrics_path(struct run *r)
{
    if (!strcmp(r->c.metrics_file, "none")) return "";
    if (strcmp(r->c.metrics_file, "auto")) return r->c.metrics_file;
    snprintf(r->metrics, sizeof r->metrics, "%s/metrics.jsonl", r->c.checkpoint_dir);
    return r->metrics;
}

/* timeline_file: none = off (""), auto = checkpoint_dir/timeline, else the prefix. */
static const char *timeline_prefix(struct run *r)
{
    if (!strcmp(r->c.timeline_file, "none")) return "";
    if (strcmp(r->c.timeline_file, "auto")) return r->c.timeline_file;
    snprintf(r->timeline, sizeof r->timeline, "%s/timeline", r->c.checkpoint_dir);
    return r->timeline;
}

/* Final parameters as one hash (the same on every rank), to compare runs bit for bit. */
static void print_params_hash(const struct run *r)
{
    hpct_params_t params;
    uint64_t h = 0;
    if (hpct_model_params(r->model, &params) || hpct_params_hash(params, &h)) return;
    printf("hpctrain: params hash 0x%016llx\n", (unsigned long long)h);
}

/* Rank 0: the job's layout and model, once before training. */
static void print_layout(const struct run *r, long steps_per_epoch)
{
    if (r->topo.rank != 0) return;
    char desc[256];
    hpct_model_describe(r->model, desc, sizeof desc);
    printf(
        "hpctrain: %d rank(s) on %d node(s) (topology from %s); node comm %d, cross-node "
        "comm %d, hierarchical %s; model %s; %ld steps per epoch\n",
        r->topo.size, r->topo.num_nodes,
        (const char *[]){"single", "pmix", "openmpi-env", "slurm-env", "override"}[r->topo.source],
        r->topo.node_comm_size, r->topo.cross_comm_size, r->topo.hierarchical ? "on" : "off", desc,
        steps_per_epoch);
}

/* hpct_train's settings from the run's configuration. */
static hpct_train_config_t train_config(struct run *r, long steps_per_epoch)
{
    hpct_train_config_t tc = HPCT_TRAIN_CONFIG_INITIALIZER;
    tc.global_batch = (int)r->c.global_batch, tc.micro_batches = (int)r->c.micro_batches;
    tc.epochs = r->c.epochs, tc.log_interval = r->c.log_interval;
    tc.resume = !strcmp(r->c.resume, "auto");
    tc.progress = print_progress, tc.progress_arg = r;
    tc.metrics_path = metrics_path(r);
    tc.eval_data = r->eval, tc.evaluated = print_eval;
    tc.eval_interval =
        r->c.eval_every_steps ? r->c.eval_every_steps : r->c.eval_every_epochs * steps_per_epoch;
    tc.straggler_threshold = r->c.straggler_threshold;
    tc.divergence_factor = r->c.divergence_factor;
    tc.divergence_reports = r->c.divergence_reports;
    tc.timeline_path = timeline_prefix(r);
    tc.timeline_steps = r->c.timeline_steps, tc.timeline_first = r->c.timeline_first;
    return tc;
}

/* Rank 0: what a run that ended well did (or that the checkpoint already held it all). */
static void print_done(const struct run *r, const hpct_train_result_t *res)
{
    if (r->topo.rank != 0) return;
    const char *path = "";
    hpct_ckpt_last_path(r->ck, &path);
    if (res->resumed_from >= 0 && res->resumed_from == res->steps)
        printf("hpctrain: nothing to train: the checkpoint of step %ld already completes the run\n",
               res->steps);
    else
        printf("hpctrain: done: %ld steps, final training loss %.4f, %.1f s, data wait %.1f%%, "
               "comm wait %.1f%%, checkpoint wait %.2f%%, checkpoint %s\n",
               res->steps, res->final_loss, res->wall_s, 100.0 * res->data_wait_s / res->wall_s,
               100.0 * res->comm_wait_s / res->wall_s, 100.0 * res->ckpt_wait_s / res->wall_s,
               path && *path ? path : "(none)");
    if (r->eval)
        printf("hpctrain: test loss %.4f accuracy %.4f (%ld samples)\n", r->eval_loss, r->eval_acc,
               r->eval_n);
    print_params_hash(r);
}

/* Output the run could not write (a full disk under metrics_file or timeline_file), said once
 * per rank: training went on without it. With HPCT_LOG_LEVEL=1..4 the library's log has said
 * it already. */
static void print_losses(const struct run *r)
{
    long metrics = 0, timeline = 0;
    const char *first = "", *level = getenv("HPCT_LOG_LEVEL");
    if ((level && strcmp(level, "0")) || hpct_output_losses(r->ctx, &metrics, &timeline, &first) ||
        metrics + timeline == 0)
        return;
    fprintf(stderr,
            "hpctrain train: rank %d: warning: %ld metrics record(s) and %ld timeline "
            "rewrite(s) could not be written; the first: %s\n",
            r->topo.rank, metrics, timeline, first);
}

/* The exit code of hpct_train's status s, after its messages. */
static int report(struct run *r, hpct_status_t s, const hpct_train_result_t *res)
{
    const char *why = "";
    if (r->topo.rank == 0 && res->rejected_checkpoints > 0) {
        if (r->ck) hpct_ckpt_rejected(r->ck, &why);
        printf("hpctrain: skipped %d corrupt or torn checkpoint(s): %s\n",
               res->rejected_checkpoints, why);
    }
    if (r->topo.rank == 0 && res->resumed_from >= 0)
        printf("hpctrain: resumed from the checkpoint of step %ld\n", res->resumed_from);
    if (s == HPCT_PREEMPTED) {
        long from = res->resumed_from >= 0 ? res->resumed_from : 0;
        if (r->topo.rank == 0 && res->stop_signal && res->steps == from)
            printf("hpctrain: stopped by signal %d before step %ld: nothing trained, nothing to "
                   "save (%s); exit %d (requeue)\n",
                   res->stop_signal, from + 1,
                   res->resumed_from >= 0 ? "the checkpoint it resumed from stays"
                                          : "the run starts afresh",
                   TRAIN_PREEMPTED);
        else if (r->topo.rank == 0 && res->stop_signal)
            printf("hpctrain: stopped by signal %d after step %ld; checkpoint written; exit %d "
                   "(requeue)\n",
                   res->stop_signal, res->steps, TRAIN_PREEMPTED);
        else if (r->topo.rank == 0)
            printf("hpctrain: stopped after step %ld: the job's time limit is within "
                   "walltime_margin; checkpoint written; exit %d (requeue)\n",
                   res->steps, TRAIN_PREEMPTED);
        return TRAIN_PREEMPTED;
    }
    if (s == HPCT_ERR_TIMEOUT) {
        fail(r, "training (a rank hung)", s);
        /* the writer has saved the emergency checkpoint, or the others have waited for it
         * (hpct_train returns after that) */
        hpct_abort_job(r->ctx, HPCT_EXIT_HANG);
        return HPCT_EXIT_HANG;
    }
    if (s) return fail(r, "training", s);
    print_done(r, res);
    return TOOL_OK;
}

static int train_and_report(struct run *r)
{
    /* floor(N / global batch), the data contract's steps per epoch; hpct_train partitions
     * the data itself (and refuses a global batch larger than N). */
    size_t samples;
    hpct_status_t s = hpct_dataset_info(r->train, &samples, NULL, NULL, NULL);
    if (s) return fail(r, "sizing the epochs", s);
    long steps_per_epoch = (long)(samples / (size_t)r->c.global_batch);
    int code = make_optimizer(r, steps_per_epoch);
    if (code || (code = open_checkpoints(r))) return code;
    print_layout(r, steps_per_epoch);
    hpct_train_config_t tc = train_config(r, steps_per_epoch);
    hpct_train_result_t res = {.resumed_from = -1}; /* hpct_train may fail before filling it */
    s = hpct_train(r->model, r->opt, r->train, r->ck, &tc, &res);
    print_losses(r);
    return report(r, s, &res);
}

static void cleanup(struct run *r)
{
    hpct_ckpt_close(r->ck);
    hpct_optimizer_destroy(r->opt);
    hpct_model_destroy(r->model);
    hpct_dataset_close(r->eval);
    hpct_dataset_close(r->train);
    hpct_signals_uninstall(r->signals);
    if (r->ctx) hpct_finalize(r->ctx);
}

/* SIGTERM and SIGUSR1 are caught from here on, before anything else (MPI_Init inside
 * hpct_init included): a preemption during start-up stops the run at its first step
 * boundary, with exit 75, instead of killing the rank (exit 143, not requeued). */
static int catch_signals(struct run *r)
{
    hpct_status_t s = hpct_signals_install(NULL, NULL, 0, &r->signals);
    if (!s) return TOOL_OK;
    fprintf(stderr, "hpctrain train: installing the SIGTERM and SIGUSR1 handlers failed: %s\n",
            hpct_strerror(s));
    return TRAIN_ERROR;
}

/* 1 when name [len] is a setting of the library's registry (hpct_tunable_get). */
static int library_var(const char *name, size_t len)
{
    for (int i = 0; i < hpct_tunables_count(); i++) {
        hpct_tunable_info_t t = HPCT_TUNABLE_INFO_INITIALIZER;
        if (hpct_tunable_get(i, &t) == HPCT_SUCCESS && strlen(t.name) == len &&
            !strncmp(t.name, name, len))
            return 1;
    }
    return 0;
}

/* HPCT_* variables that are neither settings nor the library's (library_var): read by the
 * tool, the sbatch templates or the tests (doc/hpctrain.1 ENVIRONMENT). A name ending in '*'
 * is a prefix. */
static const char *const other_vars[] = {
    "HPCT_CONFIG",    "HPCT_TRAIN",   "HPCT_MAX_RESTARTS", "HPCT_SLURM_DIR", "HPCT_LOG_LEVEL",
    "HPCT_PREFLIGHT", "HPCT_TEST_*",  "HPCT_CKPT_TEST_*",  "HPCT_SLURM_*",   "HPCT_FORTRAN",
    "HPCT_FUZZ_*",    "HPCT_BENCH_*", "HPCT_METRICS*",     "HPCT_TRACE*",
};

/* 1 when name [len] is HPCT_<KEY> of a setting (hpct_settings_key). */
static int setting_var(const char *name, size_t len)
{
    for (int i = 0; hpct_settings_key(i); i++) {
        const char *key = hpct_settings_key(i);
        size_t m = strlen(key), j = 0;
        if (len != m + 5) continue;
        while (j < m && name[5 + j] == toupper((unsigned char)key[j])) j++;
        if (j == m) return 1;
    }
    return 0;
}

static int other_var(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof other_vars / sizeof other_vars[0]; i++) {
        size_t m = strlen(other_vars[i]);
        if (other_vars[i][m - 1] == '*' ? len >= m - 1 && !strncmp(name, other_vars[i], m - 1)
                                        : len == m && !strncmp(name, other_vars[i], m))
            return 1;
    }
    return 0;
}

/* The HPCT_* environment variables that are neither a setting, nor one the tool or its
 * scripts read, nor the library's (a typo such as HPCT_HIDEN), blank-separated into out [n];
 * their count. */
static int unknown_env(char *out, size_t n)
{
    extern char **environ;
    int count = 0;
    out[0] = '\0';
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : 0;
        if (strncmp(*e, "HPCT_", 5) || !eq || other_var(*e, len) || setting_var(*e, len) ||
            library_var(*e, len))
            continue;
        size_t used = strlen(out);
        if (used + len + 2 < n)
            snprintf(out + used, n - used, "%s%.*s", count ? " " : "", (int)len, *e);
        count++;
    }
    return count;
}

int tool_train_main(int argc, char **argv)
{
    static struct run r; /* zeroed; large settings struct kept off the stack */
    int code = catch_signals(&r);
    if (!code) code = load_settings(&r, argc, argv);
    if (code) return code;
    hpct_config_t cfg = HPCT_CONFIG_INITIALIZER;
    cfg.seed = (uint64_t)r.c.seed;
    cfg.num_threads = (int)r.c.threads;
    cfg.backend = strcmp(r.c.backend, "cuda") ? HPCT_BACKEND_CPU : HPCT_BACKEND_CUDA;
    cfg.consistency_interval = r.c.consistency_interval;
    cfg.collective_timeout_s = r.c.collective_timeout;
    /* The tool reports failures itself; HPCT_LOG_LEVEL=1..4 adds the library's own log. */
    const char *level = getenv("HPCT_LOG_LEVEL");
    if (level && (strlen(level) != 1 || level[0] < '0' || level[0] > '4'))
        return conf_error(TOOL_USAGE, "HPCT_LOG_LEVEL='%s' must be 0 (none) to 4 (debug)", level);
    cfg.log_level = level ? level[0] - '0' : HPCT_LOG_NONE;
    char detail[1024];
    if (hpct_tunables_check(detail, sizeof detail) != HPCT_SUCCESS)
        return conf_error(TOOL_USAGE, "%s", detail); /* once: the environment is every rank's */
    hpct_status_t s = hpct_init(&cfg, &r.ctx);
    if (s) {
        fprintf(stderr, "hpctrain train: starting the distributed runtime failed: %s: %s\n",
                hpct_strerror(s), hpct_last_error(NULL));
        return TRAIN_ERROR;
    }
    r.topo = (hpct_topology_t)HPCT_TOPOLOGY_INITIALIZER;
    hpct_topology(r.ctx, &r.topo);
    read_test_hooks(&r);
    char unknown[512];
    if (r.topo.rank == 0 && unknown_env(unknown, sizeof unknown))
        fprintf(stderr, "hpctrain train: warning: not hpctrain variables (a typo?): %s\n", unknown);
    code = open_data(&r);
    if (!code) code = build_model(&r);
    if (!code) code = train_and_report(&r);
    if (code == HPCT_EXIT_HANG) return code; /* the job was aborted; peers may be stuck */
    /* Peers may wait in a collective for this rank, unless every rank agreed on the failure:
     * then each ends normally, and no MPI_Abort can cut rank 0's message short. */
    if (code != TOOL_OK && code != TRAIN_PREEMPTED && r.topo.size > 1 && !r.agreed_failure)
        hpct_abort_job(r.ctx, code);
    cleanup(&r);
    return code;
}
