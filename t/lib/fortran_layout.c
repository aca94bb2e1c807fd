/* fortran_layout.c: the C side of the layout test of the Fortran module (t/lib/fortran_api.F90):
 * sizeof and offsetof of every field of each public config struct, in declaration order, and
 * each struct's ..._INITIALIZER value, so that a drift between include/hpctrain.h and the
 * BIND(C) types of lib/fortran/hpctrain.F90 fails make check. */
#include <hpctrain.h>

#include <stddef.h>
#include <string.h>

long hpct_test_layout(int s, int f);
void hpct_test_defaults(int s, void *out);

#define OFF(type, field) (long)offsetof(type, field)
#define COUNT(a)         ((int)(sizeof(a) / sizeof(a[0])))

/* Struct ids shared with t/lib/fortran_api.F90. */
enum {
    S_CONFIG,
    S_OPTIM,
    S_DATA,
    S_TOPOLOGY,
    S_CKPT_CONFIG,
    S_CKPT_META,
    S_PROGRESS,
    S_TRAIN_CONFIG,
    S_TRAIN_RESULT,
    S_INSITU_CONFIG,
    S_SHARD_CONFIG,
    S_DATA_STATS,
    S_SETTINGS,
    S_NUM
};

static const long config_off[] = {OFF(hpct_config_t, version),
                                  OFF(hpct_config_t, backend),
                                  OFF(hpct_config_t, device),
                                  OFF(hpct_config_t, log_level),
                                  OFF(hpct_config_t, seed),
                                  OFF(hpct_config_t, num_threads),
                                  OFF(hpct_config_t, collective_timeout_s),
                                  OFF(hpct_config_t, fusion_bytes),
                                  OFF(hpct_config_t, consistency_interval),
                                  OFF(hpct_config_t, grad_transport)};
static const long optim_off[] = {
    OFF(hpct_optim_config_t, version),     OFF(hpct_optim_config_t, kind),
    OFF(hpct_optim_config_t, lr),          OFF(hpct_optim_config_t, momentum),
    OFF(hpct_optim_config_t, nesterov),    OFF(hpct_optim_config_t, weight_decay),
    OFF(hpct_optim_config_t, beta1),       OFF(hpct_optim_config_t, beta2),
    OFF(hpct_optim_config_t, eps),         OFF(hpct_optim_config_t, clip_norm),
    OFF(hpct_optim_config_t, schedule),    OFF(hpct_optim_config_t, warmup_steps),
    OFF(hpct_optim_config_t, step_size),   OFF(hpct_optim_config_t, gamma),
    OFF(hpct_optim_config_t, total_steps), OFF(hpct_optim_config_t, min_lr)};
static const long data_off[] = {OFF(hpct_data_config_t, version),
                                OFF(hpct_data_config_t, inputs_name),
                                OFF(hpct_data_config_t, targets_name),
                                OFF(hpct_data_config_t, checksum),
                                OFF(hpct_data_config_t, nonfinite),
                                OFF(hpct_data_config_t, shuffle),
                                OFF(hpct_data_config_t, seed),
                                OFF(hpct_data_config_t, prefetch_depth),
                                OFF(hpct_data_config_t, memory_budget_bytes),
                                OFF(hpct_data_config_t, store)};
static const long topology_off[] = {OFF(hpct_topology_t, version),
                                    OFF(hpct_topology_t, rank),
                                    OFF(hpct_topology_t, size),
                                    OFF(hpct_topology_t, local_rank),
                                    OFF(hpct_topology_t, local_size),
                                    OFF(hpct_topology_t, node_id),
                                    OFF(hpct_topology_t, num_nodes),
                                    OFF(hpct_topology_t, node_comm_size),
                                    OFF(hpct_topology_t, cross_comm_size),
                                    OFF(hpct_topology_t, hierarchical),
                                    OFF(hpct_topology_t, source),
                                    OFF(hpct_topology_t, hostname),
                                    OFF(hpct_topology_t, job_id)};
static const long ckpt_config_off[] = {OFF(hpct_ckpt_config_t, version),
                                       OFF(hpct_ckpt_config_t, directory),
                                       OFF(hpct_ckpt_config_t, keep_last),
                                       OFF(hpct_ckpt_config_t, keep_every),
                                       OFF(hpct_ckpt_config_t, every_steps),
                                       OFF(hpct_ckpt_config_t, every_seconds),
                                       OFF(hpct_ckpt_config_t, async),
                                       OFF(hpct_ckpt_config_t, writer_rank),
                                       OFF(hpct_ckpt_config_t, allow_config_change),
                                       OFF(hpct_ckpt_config_t, config_hash),
                                       OFF(hpct_ckpt_config_t, walltime_margin),
                                       OFF(hpct_ckpt_config_t, defer_copy)};
static const long ckpt_meta_off[] = {
    OFF(hpct_ckpt_meta_t, version),      OFF(hpct_ckpt_meta_t, step),
    OFF(hpct_ckpt_meta_t, epoch),        OFF(hpct_ckpt_meta_t, cursor_epoch),
    OFF(hpct_ckpt_meta_t, cursor_step),  OFF(hpct_ckpt_meta_t, world_size),
    OFF(hpct_ckpt_meta_t, global_batch), OFF(hpct_ckpt_meta_t, model),
    OFF(hpct_ckpt_meta_t, config_hash),  OFF(hpct_ckpt_meta_t, saved_at),
    OFF(hpct_ckpt_meta_t, rejected),     OFF(hpct_ckpt_meta_t, path)};
static const long progress_off[] = {OFF(hpct_progress_t, epoch),
                                    OFF(hpct_progress_t, step),
                                    OFF(hpct_progress_t, steps_per_epoch),
                                    OFF(hpct_progress_t, total_steps),
                                    OFF(hpct_progress_t, loss),
                                    OFF(hpct_progress_t, lr),
                                    OFF(hpct_progress_t, samples_per_s),
                                    OFF(hpct_progress_t, data_wait_share),
                                    OFF(hpct_progress_t, comm_share),
                                    OFF(hpct_progress_t, eta_s),
                                    OFF(hpct_progress_t, data_epoch_bytes_read),
                                    OFF(hpct_progress_t, data_resident_bytes),
                                    OFF(hpct_progress_t, data_node_resident_bytes),
                                    OFF(hpct_progress_t, data_exchange_bytes)};
static const long train_config_off[] = {OFF(hpct_train_config_t, version),
                                        OFF(hpct_train_config_t, global_batch),
                                        OFF(hpct_train_config_t, micro_batches),
                                        OFF(hpct_train_config_t, epochs),
                                        OFF(hpct_train_config_t, max_steps),
                                        OFF(hpct_train_config_t, log_interval),
                                        OFF(hpct_train_config_t, resume),
                                        OFF(hpct_train_config_t, progress),
                                        OFF(hpct_train_config_t, progress_arg),
                                        OFF(hpct_train_config_t, metrics_path),
                                        OFF(hpct_train_config_t, eval_data),
                                        OFF(hpct_train_config_t, eval_interval),
                                        OFF(hpct_train_config_t, straggler_threshold),
                                        OFF(hpct_train_config_t, evaluated),
                                        OFF(hpct_train_config_t, timeline_path),
                                        OFF(hpct_train_config_t, timeline_steps),
                                        OFF(hpct_train_config_t, timeline_first),
                                        OFF(hpct_train_config_t, divergence_factor),
                                        OFF(hpct_train_config_t, divergence_reports)};
static const long train_result_off[] = {OFF(hpct_train_result_t, steps),
                                        OFF(hpct_train_result_t, resumed_from),
                                        OFF(hpct_train_result_t, checkpoints),
                                        OFF(hpct_train_result_t, final_loss),
                                        OFF(hpct_train_result_t, wall_s),
                                        OFF(hpct_train_result_t, data_wait_s),
                                        OFF(hpct_train_result_t, comm_wait_s),
                                        OFF(hpct_train_result_t, ckpt_wait_s),
                                        OFF(hpct_train_result_t, skipped_batches),
                                        OFF(hpct_train_result_t, stop_signal),
                                        OFF(hpct_train_result_t, rejected_checkpoints)};
#ifdef HPCT_INSITU_CONFIG_VERSION
static const long insitu_config_off[] = {
    OFF(hpct_insitu_config_t, version),       OFF(hpct_insitu_config_t, resume),
    OFF(hpct_insitu_config_t, catch_signals), OFF(hpct_insitu_config_t, log_interval),
    OFF(hpct_insitu_config_t, progress),      OFF(hpct_insitu_config_t, progress_arg),
    OFF(hpct_insitu_config_t, metrics_path),  OFF(hpct_insitu_config_t, straggler_threshold),
    OFF(hpct_insitu_config_t, timeline_path), OFF(hpct_insitu_config_t, timeline_steps),
    OFF(hpct_insitu_config_t, timeline_first)};
#endif
static const long shard_config_off[] = {OFF(hpct_shard_config_t, version),
                                        OFF(hpct_shard_config_t, chunk_rows),
                                        OFF(hpct_shard_config_t, deflate)};
static const long data_stats_off[] = {OFF(hpct_data_stats_t, version),
                                      OFF(hpct_data_stats_t, store),
                                      OFF(hpct_data_stats_t, bytes_read),
                                      OFF(hpct_data_stats_t, epoch_bytes_read),
                                      OFF(hpct_data_stats_t, hashed_bytes),
                                      OFF(hpct_data_stats_t, resident_bytes),
                                      OFF(hpct_data_stats_t, node_resident_bytes),
                                      OFF(hpct_data_stats_t, exchange_bytes)};

static const long settings_off[] = {OFF(hpct_settings_t, version),
                                    OFF(hpct_settings_t, train_manifest),
                                    OFF(hpct_settings_t, eval_manifest),
                                    OFF(hpct_settings_t, hidden),
                                    OFF(hpct_settings_t, num_hidden),
                                    OFF(hpct_settings_t, activation),
                                    OFF(hpct_settings_t, outputs),
                                    OFF(hpct_settings_t, lr),
                                    OFF(hpct_settings_t, min_lr),
                                    OFF(hpct_settings_t, nesterov),
                                    OFF(hpct_settings_t, schedule),
                                    OFF(hpct_settings_t, total_steps),
                                    OFF(hpct_settings_t, log_interval),
                                    OFF(hpct_settings_t, collective_timeout),
                                    OFF(hpct_settings_t, checkpoint_dir),
                                    OFF(hpct_settings_t, walltime_margin),
                                    OFF(hpct_settings_t, checkpoint_async),
                                    OFF(hpct_settings_t, backend),
                                    OFF(hpct_settings_t, consistency_interval),
                                    OFF(hpct_settings_t, metrics_file),
                                    OFF(hpct_settings_t, straggler_threshold),
                                    OFF(hpct_settings_t, timeline_file),
                                    OFF(hpct_settings_t, timeline_first),
                                    OFF(hpct_settings_t, divergence_factor),
                                    OFF(hpct_settings_t, data_store),
                                    OFF(hpct_settings_t, data_memory_mib),
                                    OFF(hpct_settings_t, inputs),
                                    OFF(hpct_settings_t, layers)};

struct layout {
    long size;
    const long *off;
    int num;
};

static struct layout layout_of(int s)
{
    switch (s) {
    case S_CONFIG: return (struct layout){sizeof(hpct_config_t), config_off, COUNT(config_off)};
    case S_OPTIM: return (struct layout){sizeof(hpct_optim_config_t), optim_off, COUNT(optim_off)};
    case S_DATA: return (struct layout){sizeof(hpct_data_config_t), data_off, COUNT(data_off)};
    case S_TOPOLOGY:
        return (struct layout){sizeof(hpct_topology_t), topology_off, COUNT(topology_off)};
    case S_CKPT_CONFIG:
        return (struct layout){sizeof(hpct_ckpt_config_t), ckpt_config_off, COUNT(ckpt_config_off)};
    case S_CKPT_META:
        return (struct layout){sizeof(hpct_ckpt_meta_t), ckpt_meta_off, COUNT(ckpt_meta_off)};
    case S_PROGRESS:
        return (struct layout){sizeof(hpct_progress_t), progress_off, COUNT(progress_off)};
    case S_TRAIN_CONFIG:
        return (struct layout){sizeof(hpct_train_config_t), train_config_off,
                               COUNT(train_config_off)};
    case S_TRAIN_RESULT:
        return (struct layout){sizeof(hpct_train_result_t), train_result_off,
                               COUNT(train_result_off)};
#ifdef HPCT_INSITU_CONFIG_VERSION
    case S_INSITU_CONFIG:
        return (struct layout){sizeof(hpct_insitu_config_t), insitu_config_off,
                               COUNT(insitu_config_off)};
#endif
    case S_SHARD_CONFIG:
        return (struct layout){sizeof(hpct_shard_config_t), shard_config_off,
                               COUNT(shard_config_off)};
    case S_DATA_STATS:
        return (struct layout){sizeof(hpct_data_stats_t), data_stats_off, COUNT(data_stats_off)};
    case S_SETTINGS:
        return (struct layout){sizeof(hpct_settings_t), settings_off, COUNT(settings_off)};
    default: return (struct layout){-1, NULL, 0};
    }
}

/* sizeof struct s for f = -1, offsetof its field f (0-based) otherwise; -2 past the last
 * field, -1 for an unknown struct. */
long hpct_test_layout(int s, int f)
{
    struct layout l = layout_of(s);
    if (l.size < 0 || f == -1) return l.size;
    return f >= 0 && f < l.num ? l.off[f] : -2;
}

/* Copy struct s's ..._INITIALIZER value to out (zero padding; progress/result: all zero). */
void hpct_test_defaults(int s, void *out)
{
    static const hpct_config_t config = HPCT_CONFIG_INITIALIZER;
    static const hpct_optim_config_t optim = HPCT_OPTIM_CONFIG_INITIALIZER;
    static const hpct_data_config_t data = HPCT_DATA_CONFIG_INITIALIZER;
    static const hpct_topology_t topology = HPCT_TOPOLOGY_INITIALIZER;
    static const hpct_ckpt_config_t ckpt_config = HPCT_CKPT_CONFIG_INITIALIZER;
    static const hpct_ckpt_meta_t ckpt_meta = HPCT_CKPT_META_INITIALIZER;
    static const hpct_train_config_t train_config = HPCT_TRAIN_CONFIG_INITIALIZER;
    static const hpct_shard_config_t shard_config = HPCT_SHARD_CONFIG_INITIALIZER;
    const void *src = NULL;
    struct layout l = layout_of(s);
    switch (s) {
    case S_CONFIG: src = &config; break;
    case S_OPTIM: src = &optim; break;
    case S_DATA: src = &data; break;
    case S_TOPOLOGY: src = &topology; break;
    case S_CKPT_CONFIG: src = &ckpt_config; break;
    case S_CKPT_META: src = &ckpt_meta; break;
    case S_TRAIN_CONFIG: src = &train_config; break;
    case S_SHARD_CONFIG: src = &shard_config; break;
#ifdef HPCT_INSITU_CONFIG_VERSION
    case S_INSITU_CONFIG: {
        static const hpct_insitu_config_t insitu_config = HPCT_INSITU_CONFIG_INITIALIZER;
        src = &insitu_config;
        break;
    }
#endif
    default: break;
    }
    if (l.size <= 0) return;
    if (src)
        memcpy(out, src, (size_t)l.size);
    else
        memset(out, 0, (size_t)l.size);
}
