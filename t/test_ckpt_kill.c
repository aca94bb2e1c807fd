/* test_ckpt_kill.c: a process killed with SIGKILL at each stage of a checkpoint write
 * (stopped there by the HPCT_CKPT_TEST_STOP_AT hook), synchronous and asynchronous: the
 * previous checkpoint loads, the torn one is never loaded, and the next writer cleans up;
 * and the hook does nothing without HPCT_TEST_HOOKS=1. */
#include "config.h"
#include "lib/ckpt_util.h"

#include <signal.h>
#include <sys/wait.h>

static const size_t counts[] = {3000, 17, 2048, 64, 999, 8};
static const char *stages[] = {"created", "half", "synced", "renamed", "pointer"};

static int save(hpct_ckpt_t ck, state_t *st, long step)
{
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    m.step = step;
    m.model = "kill test";
    hpct_optimizer_set_step(st->opt, step); /* a load refuses optimizer/step != meta/step */
    return hpct_ckpt_save(ck, st->params, st->opt, &m) || hpct_ckpt_wait(ck);
}

/* Child: save state B as step 2 with the stop hook; it stops itself mid-write. */
static void child_writes(const char *dir, int async, const char *stage)
{
    setenv("HPCT_CKPT_TEST_STOP_AT", stage, 1);
    state_t b;
    st_create(&b, 6, counts, HPCT_OPT_ADAMW);
    st_fill(&b, 2, 3);
    hpct_ckpt_t ck = st_open_ck(&b, dir, async);
    int rc = save(ck, &b, 2);
    hpct_ckpt_close(ck);
    _exit(rc ? 2 : 0); /* reached only if the hook did not stop us */
}

/* Fork the writer, wait until it stops itself, SIGKILL it. 1 if it was killed while stopped. */
static int kill_mid_write(const char *dir, int async, const char *stage)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) tap_bail("fork failed");
    if (pid == 0) child_writes(dir, async, stage);
    int status;
    if (waitpid(pid, &status, WUNTRACED) != pid) tap_bail("waitpid failed");
    int stopped = WIFSTOPPED(status);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return stopped && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static void one_case(const char *base, int async, int si)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s-%d", base, stages[si], async);
    state_t a, b, got;
    st_create(&a, 6, counts, HPCT_OPT_ADAMW);
    st_create(&b, 6, counts, HPCT_OPT_ADAMW);
    st_create(&got, 6, counts, HPCT_OPT_ADAMW);
    st_fill(&a, 1, 2);
    st_fill(&b, 2, 3);
    hpct_optimizer_set_step(b.opt, 2); /* as the child saves it */
    hpct_ckpt_t ck = st_open_ck(&a, dir, 0);
    if (save(ck, &a, 1)) tap_bail("first save: %s", hpct_last_error(a.ctx));
    hpct_ckpt_close(ck);

    int killed = kill_mid_write(dir, async, stages[si]);
    ck = st_open_ck(&got, dir, async);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t s = hpct_ckpt_load_latest(ck, got.params, got.opt, &m);
    /* Before the rename the new file does not exist under its name; after it, it is complete. */
    int committed = si >= 3;
    state_t *want = committed ? &b : &a;
    tap_ok(killed && s == HPCT_SUCCESS && m.step == (committed ? 2 : 1) && m.rejected == 0 &&
               st_equal(&got, want),
           "%s, killed at '%s': step %ld loads bit-identically, nothing rejected",
           async ? "async" : "sync", stages[si], m.step);
    if (!killed || s) tap_diag("killed %d, status %d: %s", killed, s, hpct_last_error(got.ctx));
    /* The next writer removes the dead writer's temporary files. */
    save(ck, &got, 3);
    hpct_ckpt_close(ck);
    tap_is_int(count_entries(dir, ".tmp-"), 0, "%s '%s': the next save cleans the torn temporary",
               async ? "async" : "sync", stages[si]);
    st_destroy(&a);
    st_destroy(&b);
    st_destroy(&got);
}

/* Without HPCT_TEST_HOOKS=1 the stop variable is ignored: the writer saves and exits 0. */
static void hook_needs_gate(const char *base)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ungated", base);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) tap_bail("fork failed");
    if (pid == 0) {
        unsetenv("HPCT_TEST_HOOKS");
        child_writes(dir, 0, "created");
    }
    int status;
    if (waitpid(pid, &status, WUNTRACED) != pid) tap_bail("waitpid failed");
    int stopped = WIFSTOPPED(status);
    if (stopped) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    tap_ok(!stopped && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "HPCT_CKPT_TEST_STOP_AT=created without HPCT_TEST_HOOKS=1: no stop, the save completes");
}

int main(void)
{
    int n = (int)(sizeof stages / sizeof *stages);
    tap_plan(4 * n + 1);
    setenv("HPCT_TEST_HOOKS", "1", 1); /* make check sets it; a manual run needs it too */
    alarm(120); /* a hook that never stops the child must not hang make check */
    char base[256];
    make_tmpdir(base, sizeof base, "ckkill");
    for (int async = 0; async <= 1; async++)
        for (int i = 0; i < n; i++) one_case(base, async, i);
    hook_needs_gate(base);
    remove_tree(base);
    return tap_done();
}
