/* report.c: `hpctrain report RUN_DIR`: what a run did, from its metrics file alone
 * (doc/metrics.md): a summary table on stdout and SVG plots beside the file. */
#include "config.h"
#include "hpctrain.h"
#include "report.h"
#include "tools.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
    "usage: hpctrain report [-o DIR] [--no-plots] RUN_DIR|METRICS_FILE\n"
    "Summarises a run from its metrics file (RUN_DIR/metrics.jsonl; doc/metrics.md): segments\n"
    "across requeues with their stop reasons and restart latency, time split, throughput,\n"
    "checkpoints, evaluations and stragglers. Writes loss.svg, throughput.svg and\n"
    "time_split.svg into DIR (default: beside the metrics file). Lines that do not parse\n"
    "(a torn last line after a crash) are skipped and counted.\n";

struct segment {
    int id, world;
    double t_start, t_end;
    long first_step, last_step; /* step records; -1 when none */
    double sps_sum, data_sum, comm_sum, ckpt_sum;
    int reports;
    char stop[32], job[64];
    double restart_total, queue, startup, comm_setup, setup, load, first_step_s;
    int has_restart;
};

struct run {
    struct segment *seg;
    int nseg;
    double *step_x, *loss_y, *sps_y, *eval_x, *eval_y, *eval_acc;
    int nstep, neval, cap_step, cap_eval;
    long ckpts, ckpt_bytes, ckpt_min, ckpt_max;
    double ckpt_block;
    int stragglers, bad_lines, lines;
    int cut_line;    /* line number of a last line without its newline (0: none) ... */
    long cut_offset; /* ... and the byte offset where it starts */
    char last_straggler[160];
    long overlap_steps; /* steps recorded again after a resume from an older checkpoint */
    long gap_steps;     /* steps missing between segments */
};

static int grow(double **a, int n, int *cap, int more)
{
    if (n + more <= *cap) return 0;
    int c = *cap ? *cap * 2 : 256;
    while (c < n + more) c *= 2;
    for (int k = 0; k < more; k++) {
        double *p = realloc(a[k], (size_t)c * sizeof *p);
        if (!p) return -1;
        a[k] = p;
    }
    *cap = c;
    return 0;
}

static struct segment *current(struct run *R)
{
    return R->nseg ? &R->seg[R->nseg - 1] : NULL;
}

/* A record before any run_start (a file whose start was lost) opens segment 0. */
static struct segment *open_segment(struct run *R, int id, double t)
{
    struct segment *s = realloc(R->seg, (size_t)(R->nseg + 1) * sizeof *s);
    if (!s) return NULL;
    R->seg = s;
    s = &R->seg[R->nseg++];
    memset(s, 0, sizeof *s);
    s->id = id, s->t_start = s->t_end = t, s->first_step = s->last_step = -1;
    snprintf(s->stop, sizeof s->stop, "(none)");
    return s;
}

static void on_step(struct run *R, struct segment *s, const struct report_record *r)
{
    long step = (long)report_num(r, "step", -1);
    if (s->first_step < 0) {
        s->first_step = step;
        struct segment *prev = R->nseg > 1 ? &R->seg[R->nseg - 2] : NULL;
        if (prev && prev->last_step >= 0 && step <= prev->last_step)
            R->overlap_steps += prev->last_step - step + 1;
    }
    s->last_step = step;
    s->sps_sum += report_num(r, "samples_per_s", 0);
    s->data_sum += report_num(r, "data_share", 0);
    s->comm_sum += report_num(r, "comm_share", 0);
    s->ckpt_sum += report_num(r, "ckpt_share", 0);
    s->reports++;
    double *arr[3] = {R->step_x, R->loss_y, R->sps_y};
    if (grow(arr, R->nstep, &R->cap_step, 3)) return;
    R->step_x = arr[0], R->loss_y = arr[1], R->sps_y = arr[2];
    R->step_x[R->nstep] = (double)step;
    R->loss_y[R->nstep] = report_num(r, "loss", NAN);
    R->sps_y[R->nstep++] = report_num(r, "samples_per_s", NAN);
}

static void on_eval(struct run *R, const struct report_record *r)
{
    double *arr[3] = {R->eval_x, R->eval_y, R->eval_acc};
    if (grow(arr, R->neval, &R->cap_eval, 3)) return;
    R->eval_x = arr[0], R->eval_y = arr[1], R->eval_acc = arr[2];
    R->eval_x[R->neval] = report_num(r, "step", 0);
    R->eval_y[R->neval] = report_num(r, "loss", NAN);
    R->eval_acc[R->neval++] = report_num(r, "accuracy", -1);
}

static void on_restart(struct segment *s, const struct report_record *r)
{
    s->has_restart = report_get(r, "total_s") != NULL;
    s->restart_total = report_num(r, "total_s", -1);
    s->queue = report_num(r, "queue_wait_s", -1);
    s->startup = report_num(r, "startup_s", -1);
    s->comm_setup = report_num(r, "comm_setup_s", -1);
    s->setup = report_num(r, "setup_s", -1);
    s->load = report_num(r, "ckpt_load_s", -1);
    s->first_step_s = report_num(r, "first_step_s", -1);
}

static void on_checkpoint(struct run *R, const struct report_record *r)
{
    long bytes = (long)report_num(r, "bytes", -1);
    R->ckpts++;
    R->ckpt_block += report_num(r, "blocking_s", 0);
    if (bytes < 0) return;
    R->ckpt_bytes += bytes;
    if (R->ckpt_min < 0 || bytes < R->ckpt_min) R->ckpt_min = bytes;
    if (bytes > R->ckpt_max) R->ckpt_max = bytes;
}

static void record(struct run *R, const struct report_record *r)
{
    const char *type = report_str(r, "type");
    double t = report_num(r, "time", 0);
    struct segment *s = current(R);
    if (!strcmp(type, "run_start"))
        s = open_segment(R, (int)report_num(r, "segment", R->nseg + 1), t);
    else if (!s)
        s = open_segment(R, 0, t);
    if (!s) return;
    if (t > s->t_end) s->t_end = t;
    if (!strcmp(type, "run_start")) {
        s->world = (int)report_num(r, "world_size", 0);
        snprintf(s->job, sizeof s->job, "%s", report_str(r, "slurm_job_id"));
    } else if (!strcmp(type, "step"))
        on_step(R, s, r);
    else if (!strcmp(type, "eval"))
        on_eval(R, r);
    else if (!strcmp(type, "restart"))
        on_restart(s, r);
    else if (!strcmp(type, "checkpoint"))
        on_checkpoint(R, r);
    else if (!strcmp(type, "stop")) {
        const char *why = report_str(r, "reason");
        if (!strcmp(why, "signal"))
            snprintf(s->stop, sizeof s->stop, "signal %d", (int)report_num(r, "signal", 0));
        else
            snprintf(s->stop, sizeof s->stop, "%s", why);
    } else if (!strcmp(type, "straggler")) {
        R->stragglers++;
        snprintf(R->last_straggler, sizeof R->last_straggler,
                 "rank %d on %s, %.0f%% above the median at step %.0f",
                 (int)report_num(r, "rank", -1), report_str(r, "host"),
                 100.0 * report_num(r, "slower_by", 0), report_num(r, "step", 0));
    }
}

/* Read path line by line; lines longer than the reader's buffer count as bad. */
static int read_file(const char *path, struct run *R)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tool_error(TOOL_DATA, "%s: cannot open the metrics file: %s", path, strerror(errno));
    static char line[65536];
    static struct report_record rec;
    long at = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        long start = at;
        at += (long)len;
        if (len && line[len - 1] != '\n' && !feof(f)) { /* too long: skip the rest */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n') at++;
            at += c == '\n';
            R->bad_lines++, R->lines++;
            continue;
        }
        R->lines++;
        if (len && line[len - 1] != '\n') /* the file ends inside this line */
            R->cut_line = R->lines, R->cut_offset = start;
        if (len <= 1) continue;
        if (report_parse(line, &rec) || !report_get(&rec, "type")) {
            R->bad_lines++;
            continue;
        }
        record(R, &rec);
    }
    fclose(f);
    return TOOL_OK;
}

static void print_segments(const struct run *R)
{
    printf("segments (one per start of the run; requeues append to the file):\n");
    printf("  %-4s %-6s %-13s %-9s %-12s %-10s %-10s %-10s %-10s %s\n", "seg", "ranks", "steps",
           "wall s", "samples/s", "data %", "comm %", "ckpt %", "stop", "job");
    for (int i = 0; i < R->nseg; i++) {
        const struct segment *s = &R->seg[i];
        char steps[32];
        snprintf(steps, sizeof steps, "%ld-%ld", s->first_step, s->last_step);
        double n = s->reports ? s->reports : 1;
        printf("  %-4d %-6d %-13s %-9.1f %-12.0f %-10.1f %-10.1f %-10.1f %-10s %s\n", s->id,
               s->world, s->first_step < 0 ? "-" : steps, s->t_end - s->t_start, s->sps_sum / n,
               100 * s->data_sum / n, 100 * s->comm_sum / n, 100 * s->ckpt_sum / n, s->stop,
               s->job[0] ? s->job : "-");
    }
    int any = 0;
    for (int i = 0; i < R->nseg; i++) any |= R->seg[i].has_restart;
    if (!any) return;
    printf("restart latency (previous stop to first completed step, seconds):\n");
    printf("  %-4s %-9s %-9s %-9s %-9s %-9s %-9s %-9s\n", "seg", "total", "queue", "startup",
           "comm", "setup", "ckpt load", "1st step");
    for (int i = 0; i < R->nseg; i++) {
        const struct segment *s = &R->seg[i];
        if (s->has_restart)
            printf("  %-4d %-9.2f %-9.2f %-9.3f %-9.3f %-9.3f %-9.3f %-9.3f\n", s->id,
                   s->restart_total, s->queue, s->startup, s->comm_setup, s->setup, s->load,
                   s->first_step_s);
    }
}

static void print_summary(const char *path, const struct run *R)
{
    printf("metrics: %s (%d lines, %d skipped as unreadable)\n", path, R->lines, R->bad_lines);
    if (R->cut_line)
        printf("warning: the metrics file is truncated: its last line (line %d, from byte %ld) "
               "ends inside a record; anything the run recorded after it is missing (a full "
               "disk, or a crash)\n",
               R->cut_line, R->cut_offset);
    print_segments(R);
    long last = R->nstep ? (long)R->step_x[R->nstep - 1] : -1;
    printf("steps: %ld reported up to step %ld", (long)R->nstep, last);
    if (R->overlap_steps)
        printf(", %ld step(s) redone after resuming from an older checkpoint", R->overlap_steps);
    printf("\n");
    if (R->nstep)
        printf("training loss: first %.6g, last %.6g\n", R->loss_y[0], R->loss_y[R->nstep - 1]);
    printf("checkpoints: %ld committed", R->ckpts);
    if (R->ckpt_max > 0)
        printf(", %.1f MiB in all, %ld to %ld bytes each, %.2f s of training blocked",
               R->ckpt_bytes / 1048576.0, R->ckpt_min, R->ckpt_max, R->ckpt_block);
    printf("\n");
    if (R->neval) {
        int best = 0;
        for (int i = 1; i < R->neval; i++) {
            int by_acc = R->eval_acc[i] >= 0;
            if (by_acc ? R->eval_acc[i] > R->eval_acc[best] : R->eval_y[i] < R->eval_y[best])
                best = i;
        }
        int k = R->neval - 1;
        printf(
            "evaluation: final at step %.0f loss %.6g accuracy %.4f; best at step %.0f loss %.6g "
            "accuracy %.4f (%d evaluations)\n",
            R->eval_x[k], R->eval_y[k], R->eval_acc[k], R->eval_x[best], R->eval_y[best],
            R->eval_acc[best], R->neval);
    } else
        printf("evaluation: none recorded\n");
    if (R->stragglers)
        printf("stragglers: %d warning(s); last: %s\n", R->stragglers, R->last_straggler);
    else
        printf("stragglers: none\n");
}

static void range(const double *v, int n, double *lo, double *hi)
{
    *lo = INFINITY, *hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            if (v[i] < *lo) *lo = v[i];
            if (v[i] > *hi) *hi = v[i];
        }
}

static void segment_marks(struct svg_plot *p, const struct run *R)
{
    for (int i = 1; i < R->nseg; i++)
        if (R->seg[i].first_step >= 0) {
            char label[96];
            snprintf(label, sizeof label, "segment %d (%s before)", R->seg[i].id,
                     R->seg[i - 1].stop);
            svg_vline(p, (double)R->seg[i].first_step, label);
        }
}

static int plot_loss(const char *dir, const struct run *R)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/loss.svg", dir);
    double x0 = 0, x1, ylo, yhi, elo, ehi, dummy;
    range(R->step_x, R->nstep, &dummy, &x1);
    if (R->neval) {
        range(R->eval_x, R->neval, &dummy, &elo);
        if (elo > x1 || !isfinite(x1)) x1 = elo;
    }
    range(R->loss_y, R->nstep, &ylo, &yhi);
    range(R->eval_y, R->neval, &elo, &ehi);
    if (elo < ylo) ylo = elo;
    if (ehi > yhi) yhi = ehi;
    struct svg_plot p;
    if (svg_begin(&p, 1, path, 900, 450, "loss vs step", "step", "loss", x0, x1, ylo < 0 ? ylo : 0,
                  yhi))
        return -1;
    segment_marks(&p, R);
    svg_series(&p, "training loss", "#1f77b4", R->step_x, R->loss_y, R->nstep, 1);
    svg_series(&p, "evaluation loss", "#d62728", R->eval_x, R->eval_y, R->neval, 0);
    svg_legend(&p, 0, "#1f77b4", "training loss");
    svg_legend(&p, 1, "#d62728", "evaluation loss");
    return svg_end(&p);
}

static int plot_throughput(const char *dir, const struct run *R)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/throughput.svg", dir);
    double x1, ylo, yhi, dummy;
    range(R->step_x, R->nstep, &dummy, &x1);
    range(R->sps_y, R->nstep, &ylo, &yhi);
    struct svg_plot p;
    if (svg_begin(&p, 1, path, 900, 450,
                  "throughput vs step (dashed: a new segment after a requeue)", "step", "samples/s",
                  0, x1, 0, yhi * 1.05))
        return -1;
    segment_marks(&p, R);
    svg_series(&p, "samples/s", "#2ca02c", R->step_x, R->sps_y, R->nstep, 1);
    svg_legend(&p, 0, "#2ca02c", "samples/s");
    return svg_end(&p);
}

static int plot_time_split(const char *dir, const struct run *R)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/time_split.svg", dir);
    static const char *names[4] = {"data wait", "communication", "checkpoint", "compute and other"};
    static const char *colors[4] = {"#ff7f0e", "#9467bd", "#8c564b", "#7f7f7f"};
    struct svg_plot p;
    if (svg_begin(&p, 1, path, 900, 450, "time split per segment (rank 0, share of wall time)",
                  "segment", "share of wall time", 0.5, R->nseg + 0.5, 0, 1))
        return -1;
    for (int i = 0; i < R->nseg; i++) {
        const struct segment *s = &R->seg[i];
        double n = s->reports ? s->reports : 1, share[4], at = 0;
        share[0] = s->data_sum / n, share[1] = s->comm_sum / n, share[2] = s->ckpt_sum / n;
        share[3] = 1 - share[0] - share[1] - share[2];
        for (int k = 0; k < 4; k++) {
            double v = share[k] < 0 ? 0 : share[k];
            char title[96];
            snprintf(title, sizeof title, "segment %d: %s %.1f%%", s->id, names[k], 100 * v);
            svg_bar(&p, i + 1, 0.6, at, at + v > 1 ? 1 : at + v, colors[k], title);
            at += v;
        }
    }
    for (int k = 0; k < 4; k++) svg_legend(&p, k, colors[k], names[k]);
    return svg_end(&p);
}

static void free_run(struct run *R)
{
    free(R->seg), free(R->step_x), free(R->loss_y), free(R->sps_y);
    free(R->eval_x), free(R->eval_y), free(R->eval_acc);
}

/* RUN_DIR/metrics.jsonl, or the file itself; dir receives where the plots go by default. */
static int locate(const char *arg, char *file, size_t flen, char *dir, size_t dlen)
{
    struct stat st;
    if (stat(arg, &st)) return tool_error(TOOL_DATA, "%s: %s", arg, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        snprintf(file, flen, "%s/metrics.jsonl", arg);
        snprintf(dir, dlen, "%s", arg);
        return TOOL_OK;
    }
    snprintf(file, flen, "%s", arg);
    const char *slash = strrchr(arg, '/');
    snprintf(dir, dlen, "%.*s", slash ? (int)(slash - arg) : 1, slash ? arg : ".");
    return TOOL_OK;
}

int tool_report_main(int argc, char **argv)
{
    const char *out = NULL, *arg = NULL;
    int plots = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return TOOL_OK;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc && tool_is_option_word(argv[i + 1]))
            return tool_error(TOOL_USAGE,
                              "-o needs a value (the next word, '%s', is an option; write "
                              "-o ./%s for a file of that name)",
                              argv[i + 1], argv[i + 1]);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--no-plots"))
            plots = 0;
        else if (argv[i][0] == '-' || arg) {
            fputs(usage_text, stderr);
            return TOOL_USAGE;
        } else
            arg = argv[i];
    }
    if (!arg) {
        fputs(usage_text, stderr);
        return TOOL_USAGE;
    }
    char file[4096], dir[4096];
    int code = locate(arg, file, sizeof file, dir, sizeof dir);
    struct run R;
    memset(&R, 0, sizeof R);
    R.ckpt_min = -1;
    if (!code) code = read_file(file, &R);
    if (!code && !R.nseg)
        code = tool_error(TOOL_DATA, "%s: no records (is it a metrics file?)", file);
    if (!code) print_summary(file, &R);
    if (!code && plots) {
        const char *d = out ? out : dir;
        if (plot_loss(d, &R) || plot_throughput(d, &R) || plot_time_split(d, &R))
            code = tool_error(TOOL_FAILED, "%s: cannot write the plots: %s", d, strerror(errno));
        else
            printf("plots: %s/loss.svg %s/throughput.svg %s/time_split.svg\n", d, d, d);
    }
    free_run(&R);
    return code;
}
