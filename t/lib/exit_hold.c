/* exit_hold.c: the suite's fork agent for mpirun (OMPI_MCA_orte_fork_agent, set by t/t.mk).
 * It runs one rank's program as its child, in a process group of its own, and exits with the
 * child's status. A rank that failed (a non-zero exit or a signal) then does what Open MPI
 * 4.1's mpirun does by default, but ends as soon as every rank has: it waits for the other
 * ranks, sends those still running SIGCONT and SIGTERM after half of $T_EXIT_HOLD_S (2 s:
 * mpirun's two sigkill timeouts of 1 s) and leaves at its end, when mpirun (run with
 * odls_base_sigkill_timeout=0) kills the rest. The rank that failed first leaves first, so
 * mpirun reports the first failure. Files in DIR/hpct-exit-hold.JOB: RANK once a rank's
 * program has ended, pid.RANK while it runs, "first" for the first failure. DIR is
 * $T_EXIT_HOLD_DIR, else mpirun's session folder of the job family (which mpirun removes at
 * its end), else $TMPDIR, else /tmp; JOB is the PMIx namespace and the job's random transport
 * key. Outside mpirun it only runs the program. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_NS 2000000 /* 2 ms between looks at the folder */

static const int passed[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT};
static volatile sig_atomic_t child, ending; /* the program's pid; a signal that ends the job */

/* A signal for the rank: to the program's group while it runs; while the rank waits, an
 * ending one ends the wait. */
static void pass_on(int sig)
{
    int saved = errno;
    if (child > 0) {
        if (kill(-child, sig) != 0) kill(child, sig);
    } else if (sig != SIGCONT && sig != SIGUSR1 && sig != SIGUSR2 && sig != SIGALRM) {
        ending = 1;
    }
    errno = saved;
}

static void mask_passed(int how)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++) sigaddset(&set, passed[i]);
    sigprocmask(how, &set, NULL);
}

/* path = the folder, "/" and the name fmt gives (path is a char [PATH_MAX + 32]). */
#define AT(path, fmt, ...) snprintf(path, sizeof path, "%s/" fmt, __VA_ARGS__)

static void write_pid(const char *dir, int rank, pid_t pid)
{
    char path[PATH_MAX + 32];
    AT(path, "pid.%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%ld\n", (long)pid);
        fclose(f);
    }
}

/* Create dir/name (empty); 0 on success. exclusive: fail when it exists. */
static int touch(const char *dir, const char *name, int exclusive)
{
    char path[PATH_MAX + 32];
    AT(path, "%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : 0), 0600);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

/* The program as a child in a group of its own, dying with this process. When it has ended:
 * *first = whether it failed first, this rank's mark, its pid file gone, then the status as
 * waitpid gives it. */
static int run_child(char **argv, const char *dir, int rank, int *first)
{
    pid_t me = getpid();
    mask_passed(SIG_BLOCK);
    pid_t pid = fork();
    if (pid < 0) {
        perror("exit_hold: fork");
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != me) _exit(127);
        mask_passed(SIG_UNBLOCK);
        execvp(argv[0], argv);
        fprintf(stderr, "exit_hold: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* as the child does: whichever runs first */
    if (dir) write_pid(dir, rank, pid);
    child = pid;
    struct sigaction sa = {.sa_handler = pass_on};
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++) sigaction(passed[i], &sa, NULL);
    mask_passed(SIG_UNBLOCK);
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0) /* ended, not yet reaped */
        if (errno != EINTR) return -1;
    child = 0;
    if (dir) {
        char name[16], path[PATH_MAX + 32];
        int failed = info.si_code != CLD_EXITED || info.si_status != 0;
        *first = failed && touch(dir, "first", 1) == 0;
        snprintf(name, sizeof name, "%d", rank);
        touch(dir, name, 0);
        AT(path, "pid.%d", dir, rank);
        unlink(path);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

/* How many of ranks 0..size-1 have a mark in dir; size when the folder is gone (a rank
 * removed it after seeing every mark). */
static int ranks_done(const char *dir, int size)
{
    char path[PATH_MAX + 32];
    int n = 0;
    for (int r = 0; r < size; r++) {
        AT(path, "%d", dir, r);
        n += access(path, F_OK) == 0;
    }
    return n == 0 && access(dir, F_OK) != 0 ? size : n;
}

/* sig to the program of every rank without a mark (its process group), as mpirun would. */
static void signal_running(const char *dir, int size, int sig)
{
    char path[PATH_MAX + 32];
    for (int r = 0; r < size; r++) {
        AT(path, "%d", dir, r);
        if (access(path, F_OK) == 0) continue;
        AT(path, "pid.%d", dir, r);
        FILE *f = fopen(path, "r");
        long pid = 0;
        if (!f) continue;
        if (fscanf(f, "%ld", &pid) != 1) pid = 0;
        fclose(f);
        if (pid > 1 && kill((pid_t)-pid, sig) != 0) kill((pid_t)pid, sig);
    }
}

static void remove_folder(const char *dir, int size)
{
    char path[PATH_MAX + 32];
    for (int r = 0; r < size; r++) {
        AT(path, "%d", dir, r);
        unlink(path);
        AT(path, "pid.%d", dir, r);
        unlink(path);
    }
    AT(path, "first", dir);
    unlink(path);
    rmdir(dir);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void pause_poll(void)
{
    struct timespec poll = {0, POLL_NS};
    nanosleep(&poll, NULL);
}

/* A failed rank: wait for every rank to end (limit_s at most; SIGCONT and SIGTERM to those
 * still running at half of it); the first failure leaves first, the others wait for it to
 * remove the folder (mpirun kills them once it has left). */
static void hold(const char *dir, int rank, int size, double limit_s, int first)
{
    double t0 = now_s();
    int n, termed = 0;
    while ((n = ranks_done(dir, size)) < size && !ending && now_s() - t0 < limit_s) {
        if (!termed && now_s() - t0 >= limit_s / 2) {
            signal_running(dir, size, SIGCONT);
            signal_running(dir, size, SIGTERM);
            termed = 1;
        }
        pause_poll();
    }
    if (n < size) {
        if (!ending)
            fprintf(stderr,
                    "exit_hold: rank %d: %d of %d ranks still run after %g s; ending this one\n",
                    rank, size - n, size, limit_s);
        return;
    }
    if (first) {
        remove_folder(dir, size);
        return;
    }
    for (double t1 = now_s(); access(dir, F_OK) == 0 && !ending && now_s() - t1 < 1.0;)
        pause_poll();
    struct timespec after = {0, 100000000}; /* 0.1 s for mpirun to see the first one leave */
    nanosleep(&after, NULL);
}

/* Leave as the program did: its exit code, or its signal (without a core of this process). */
static int leave_as(int status)
{
    if (status < 0) return 127;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    int sig = WTERMSIG(status);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    return 128 + sig;
}

/* The folder of this job's marks: dir[len]; 0 when there is no mpirun job to hold for. */
static int hold_folder(char *dir, size_t len)
{
    const char *job = getenv("PMIX_NAMESPACE"),
               *key = getenv("OMPI_MCA_orte_precondition_transports");
    const char *base = getenv("T_EXIT_HOLD_DIR");
    if (!base || !*base) base = getenv("OMPI_MCA_orte_jobfam_session_dir");
    if (!base || !*base) base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    if (!job || !key || !getenv("OMPI_COMM_WORLD_RANK") || !getenv("OMPI_COMM_WORLD_SIZE"))
        return 0;
    int n = snprintf(dir, len, "%s/hpct-exit-hold.%s.%s", base, job, key);
    return n > 0 && (size_t)n < len;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: exit_hold PROGRAM [ARG...] (mpirun's fork agent)\n", stderr);
        return 127;
    }
    char dir[PATH_MAX];
    int size = atoi(getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE") : "0");
    if (!hold_folder(dir, sizeof dir) || size < 1) {
        execvp(argv[1], argv + 1);
        fprintf(stderr, "exit_hold: %s: %s\n", argv[1], strerror(errno));
        return 127;
    }
    int rank = atoi(getenv("OMPI_COMM_WORLD_RANK"));
    const char *limit = getenv("T_EXIT_HOLD_S");
    double limit_s = limit && *limit ? strtod(limit, NULL) : 2.0;
    int held = mkdir(dir, 0700) == 0 || errno == EEXIST;
    if (!held) fprintf(stderr, "exit_hold: %s: %s (its exit is not held)\n", dir, strerror(errno));
    int first = 0, status = run_child(argv + 1, held ? dir : NULL, rank, &first);
    int failed = status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (held && failed) {
        hold(dir, rank, size, limit_s, first);
    } else if (held && ranks_done(dir, size) == size) {
        remove_folder(dir, size);
    }
    return leave_as(status);
}
