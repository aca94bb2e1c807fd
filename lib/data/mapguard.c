/* mapguard.c: SIGBUS inside a copy from a mapped shard becomes an error (see mapguard.h).
 * The handler is installed while at least one dataset streams from mappings. A SIGBUS that is
 * not ours (no guarded region on the faulting thread) puts the previous action back and is
 * delivered to it: returning re-runs a faulting instruction, and a sent signal is raised
 * again. */
#include "config.h"
#include "mapguard.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

static __thread sigjmp_buf *guard_jb; /* this thread's guarded region, or NULL */
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous; /* the action before ours */
static int users;

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    sigjmp_buf *jb = guard_jb;
    if (jb) {
        guard_jb = NULL;
        siglongjmp(*jb, 1);
    }
    sigaction(sig, &previous, NULL);
    if (!info || info->si_code <= 0) raise(sig); /* sent, not a fault: deliver it again */
}

int hpcti_mapguard_acquire(void)
{
    int rc = 0;
    pthread_mutex_lock(&guard_lock);
    if (users == 0) {
        struct sigaction sa = {0};
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        rc = sigaction(SIGBUS, &sa, &previous) ? -1 : 0;
    }
    if (!rc) users++;
    pthread_mutex_unlock(&guard_lock);
    return rc;
}

void hpcti_mapguard_release(void)
{
    pthread_mutex_lock(&guard_lock);
    if (users > 0 && --users == 0) {
        struct sigaction now;
        if (!sigaction(SIGBUS, NULL, &now) && (now.sa_flags & SA_SIGINFO) &&
            now.sa_sigaction == on_sigbus)
            sigaction(SIGBUS, &previous, NULL);
    }
    pthread_mutex_unlock(&guard_lock);
}

void hpcti_mapguard_enter(sigjmp_buf *jb)
{
    guard_jb = jb;
}

void hpcti_mapguard_leave(void)
{
    guard_jb = NULL;
}

void hpcti_mapguard_recover(void)
{
    sigset_t bus;
    guard_jb = NULL;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, NULL); /* the kernel blocked it for the handler */
}
