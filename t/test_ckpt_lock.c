/* test_ckpt_lock.c: one run per checkpoint directory. While a handle is open on the writer
 * rank, another process (or another handle) gets HPCT_ERR_BUSY naming the holder's host and
 * pid; closing, or the holder being SIGKILLed, frees the directory (no stale lock); a
 * handle that does not write (writer_rank is another rank) takes no lock; HPCT_CKPT_LOCK=off
 * skips the lock. */
#include "config.h"
#include "lib/ckpt_util.h"

#include <signal.h>
#include <sys/wait.h>

static const size_t counts[] = {16};

/* Open dir with writer_rank wr: the status, and the detail into msg [n]. */
static hpct_status_t open_status(const char *dir, int wr, char *msg, size_t n)
{
    state_t st;
    st_create(&st, 1, counts, HPCT_OPT_SGD);
    hpct_ckpt_config_t c = HPCT_CKPT_CONFIG_INITIALIZER;
    c.directory = dir;
    c.writer_rank = wr;
    hpct_ckpt_t ck;
    hpct_status_t s = hpct_ckpt_open(st.ctx, &c, &ck);
    snprintf(msg, n, "%s", s ? hpct_last_error(st.ctx) : "");
    hpct_ckpt_close(ck);
    st_destroy(&st);
    return s;
}

/* The same in a child process: status in *s, detail in msg. */
static void open_in_child(const char *dir, int wr, hpct_status_t *s, char *msg, size_t n)
{
    int fds[2];
    if (pipe(fds)) tap_bail("pipe failed");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) tap_bail("fork failed");
    if (pid == 0) {
        close(fds[0]);
        char m[1024];
        int st = open_status(dir, wr, m, sizeof m);
        dprintf(fds[1], "%d %s", st, m);
        _exit(0);
    }
    close(fds[1]);
    char buf[1100] = "";
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    buf[got > 0 ? got : 0] = '\0';
    close(fds[0]);
    waitpid(pid, NULL, 0);
    int consumed = 0;
    if (sscanf(buf, "%d %n", s, &consumed) != 1) *s = 999;
    snprintf(msg, n, "%s", buf + consumed);
}

int main(void)
{
    tap_plan(9);
    alarm(60);
    char dir[256], msg[1024], want[128], host[256] = "";
    make_tmpdir(dir, sizeof dir, "cklock");
    gethostname(host, sizeof host - 1);
    unsetenv("HPCT_CKPT_LOCK");

    state_t a;
    st_create(&a, 1, counts, HPCT_OPT_SGD);
    hpct_ckpt_t ck = st_open_ck(&a, dir, 0);
    hpct_status_t s;
    open_in_child(dir, 0, &s, msg, sizeof msg);
    snprintf(want, sizeof want, "pid %ld ", (long)getpid());
    tap_ok(
        s == HPCT_ERR_BUSY && strstr(msg, "is in use by another run") && strstr(msg, want) &&
            strstr(msg, host) && strstr(msg, dir),
        "a second process on a held directory: HPCT_ERR_BUSY naming the directory, host and pid");
    tap_diag("%s", msg);
    tap_is_int(open_status(dir, 0, msg, sizeof msg), HPCT_ERR_BUSY,
               "a second handle in the same process: HPCT_ERR_BUSY too");
    open_in_child(dir, 1, &s, msg, sizeof msg);
    tap_is_int(s, HPCT_SUCCESS, "a handle that does not write (writer_rank 1 of 1) takes no lock");
    setenv("HPCT_CKPT_LOCK", "off", 1);
    open_in_child(dir, 0, &s, msg, sizeof msg);
    tap_is_int(s, HPCT_SUCCESS, "HPCT_CKPT_LOCK=off: no lock, the open succeeds");
    unsetenv("HPCT_CKPT_LOCK");
    hpct_ckpt_close(ck);
    open_in_child(dir, 0, &s, msg, sizeof msg);
    tap_is_int(s, HPCT_SUCCESS, "after the holder closes its handle, another process opens it");

    /* A holder killed with SIGKILL leaves no stale lock. */
    int ready[2];
    if (pipe(ready)) tap_bail("pipe failed");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) tap_bail("fork failed");
    if (pid == 0) {
        state_t b;
        st_create(&b, 1, counts, HPCT_OPT_SGD);
        hpct_ckpt_t held = st_open_ck(&b, dir, 0);
        if (write(ready[1], held ? "y" : "n", 1) != 1) _exit(2);
        pause();
        _exit(0);
    }
    char c = 'n';
    if (read(ready[0], &c, 1) != 1) c = 'n';
    tap_ok(c == 'y', "a child holds the directory");
    tap_is_int(open_status(dir, 0, msg, sizeof msg), HPCT_ERR_BUSY, "while it runs: busy");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    tap_is_int(open_status(dir, 0, msg, sizeof msg), HPCT_SUCCESS,
               "once it is SIGKILLed the directory is free (no stale lock)");
    if (msg[0]) tap_diag("%s", msg);

    /* The lock file names the holder. */
    ck = st_open_ck(&a, dir, 0);
    char path[512], text[512] = "";
    snprintf(path, sizeof path, "%s/.hpctrain.lock", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(text, sizeof text, f)) text[0] = '\0';
        fclose(f);
    }
    tap_ok(strncmp(text, "host ", 5) == 0 && strstr(text, want) && strstr(text, " job ") &&
               strstr(text, " since "),
           "the lock file says 'host H pid P job J since T': %s", text);
    hpct_ckpt_close(ck);
    st_destroy(&a);
    remove_tree(dir);
    return tap_done();
}
