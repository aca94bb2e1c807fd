/* exit_hold.c: the suite's fork agent for mpirun (OMPI_MCA_orte_fork_agent, set by t/t.mk).
 * It runs one rank's program as its child and exits with the child's status, but a rank that
 * failed (a non-zero exit or a signal) waits until every rank of the job has ended, or
 * $T_EXIT_HOLD_S seconds (2, mpirun's own grace before its SIGKILL). So a failing job ends
 * when its last rank does, and mpirun can run without its grace (odls_base_sigkill_timeout=0)
 * and still kill no rank that is printing. Each rank, when its program ends, creates
 * DIR/hpct-exit-hold.JOB/RANK: DIR is $T_EXIT_HOLD_DIR, else mpirun's session folder of the
 * job family (which mpirun removes at its end), else $TMPDIR, else /tmp; JOB is the PMIx
 * namespace and the job's random transport key. Outside mpirun it only runs the program. */
#define _GNU_SOURCE
#include <errno.h>
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

/* A signal for the rank: to the program while it runs; while the rank waits, an ending one
 * ends the wait. */
static void pass_on(int sig)
{
    if (child > 0)
        kill(child, sig);
    else if (sig != SIGCONT && sig != SIGUSR1 && sig != SIGUSR2 && sig != SIGALRM)
        ending = 1;
}

static void mask_passed(int how)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++) sigaddset(&set, passed[i]);
    sigprocmask(how, &set, NULL);
}

/* The program as a child that dies with this process; its status as waitpid gives it. */
static int run_child(char **argv)
{
    pid_t me = getpid();
    mask_passed(SIG_BLOCK);
    pid_t pid = fork();
    if (pid < 0) {
        perror("exit_hold: fork");
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != me) _exit(127);
        mask_passed(SIG_UNBLOCK);
        execvp(argv[0], argv);
        fprintf(stderr, "exit_hold: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    child = pid;
    struct sigaction sa = {.sa_handler = pass_on};
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++) sigaction(passed[i], &sa, NULL);
    mask_passed(SIG_UNBLOCK);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    child = 0;
    return status;
}

/* How many of ranks 0..size-1 have a file in dir; size when the folder is gone (the last rank
 * removed it after seeing every file). */
static int ranks_done(const char *dir, int size)
{
    char path[PATH_MAX + 16]; /* the folder and a rank */
    int n = 0;
    for (int r = 0; r < size; r++) {
        snprintf(path, sizeof path, "%s/%d", dir, r);
        n += access(path, F_OK) == 0;
    }
    return n == 0 && access(dir, F_OK) != 0 ? size : n;
}

static void remove_folder(const char *dir, int size)
{
    char path[PATH_MAX + 16]; /* the folder and a rank */
    for (int r = 0; r < size; r++) {
        snprintf(path, sizeof path, "%s/%d", dir, r);
        unlink(path);
    }
    rmdir(dir);
}

/* Mark this rank ended; a failed rank waits for the others (limit_s at most). */
static void mark_and_wait(const char *dir, int rank, int size, int failed, int limit_s)
{
    char path[PATH_MAX + 16]; /* the folder and a rank */
    snprintf(path, sizeof path, "%s/%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    struct timespec poll = {0, POLL_NS};
    long polls = 0, limit = limit_s * (1000000000L / POLL_NS);
    int n;
    while ((n = ranks_done(dir, size)) < size && failed && !ending && polls++ < limit)
        nanosleep(&poll, NULL);
    if (n == size)
        remove_folder(dir, size);
    else if (failed && !ending)
        fprintf(stderr,
                "exit_hold: rank %d: %d of %d ranks still run after %d s; ending this one\n", rank,
                size - n, size, limit_s);
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
    const char *limit = getenv("T_EXIT_HOLD_S");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        fprintf(stderr, "exit_hold: %s: %s (its exit is not held)\n", dir, strerror(errno));
    int status = run_child(argv + 1);
    int failed = status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    mark_and_wait(dir, atoi(getenv("OMPI_COMM_WORLD_RANK")), size, failed,
                  limit && *limit ? atoi(limit) : 2);
    return leave_as(status);
}
