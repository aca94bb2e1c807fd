/* signals.c: preemption signals set an async-signal-safe flag that the training loop polls
 * at step boundaries. These sig_atomic_t flags are the library's only global state. A
 * program installs the handlers first, before MPI_Init and hpct_init (ctx may be NULL then):
 * a signal during its start-up is kept and stops the run at its first step boundary. An
 * install never clears the flag, so nothing caught before it is lost. */
#include "../core/core.h"
#include "ckpt.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIGNALS 16

static volatile sig_atomic_t caught_signo; /* first signal caught, 0 if none */
static volatile sig_atomic_t caught_count; /* signals caught since the last clear */
static volatile sig_atomic_t installed;    /* 1 while a handle is installed */
static volatile sig_atomic_t stopping;     /* 1: stopping for a signal another rank caught */

struct hpct_signals {
    hpct_ctx_t ctx;
    int n;
    int signo[MAX_SIGNALS];
    struct sigaction old[MAX_SIGNALS];
};

/* The handler: two stores, nothing else (async-signal-safe). The handled signals are
 * blocked while it runs, so the count cannot race with itself. */
static void on_signal(int signo)
{
    if (!caught_signo) caught_signo = signo;
    if (caught_count < 1000000) caught_count = caught_count + 1;
}

static const char *bad_signal(int s)
{
    if (s <= 0 || s >= NSIG) return "is not a signal number";
    if (s == SIGKILL || s == SIGSTOP) return "cannot be caught";
    return NULL;
}

static void restore(struct hpct_signals *h, int upto)
{
    for (int i = 0; i < upto; i++) sigaction(h->signo[i], &h->old[i], NULL);
}

hpct_status_t hpct_signals_install(hpct_ctx_t ctx, const int *signals, int n, hpct_signals_t *out)
{
    static const int defaults[] = {SIGTERM, SIGUSR1};
    hpcti_clear_error(ctx); /* NULL before hpct_init: statuses without detail */
    if (!out) return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_signals_install: out is NULL");
    *out = NULL;
    if (!signals || n == 0) signals = defaults, n = 2;
    if (n < 0 || n > MAX_SIGNALS)
        return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                           "hpct_signals_install: %d signals, at most %d", n, MAX_SIGNALS);
    for (int i = 0; i < n; i++)
        if (bad_signal(signals[i]))
            return hpcti_error(ctx, HPCT_ERR_INVALID_ARG, "hpct_signals_install: signal %d %s",
                               signals[i], bad_signal(signals[i]));
    if (installed)
        return hpcti_error(ctx, HPCT_ERR_STATE,
                           "hpct_signals_install: preemption signals are "
                           "already installed (uninstall the other handle first)");
    struct hpct_signals *h = hpcti_calloc(ctx, 1, sizeof *h, "a signal handle");
    if (!h) return HPCT_ERR_NO_MEMORY;
    h->ctx = ctx;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* interrupted reads and writes resume */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < n; i++) sigaddset(&sa.sa_mask, signals[i]);
    for (int i = 0; i < n; i++) {
        h->signo[i] = signals[i];
        if (sigaction(signals[i], &sa, &h->old[i]) < 0) {
            int e = errno;
            restore(h, i);
            free(h);
            return hpcti_error(ctx, HPCT_ERR_INVALID_ARG,
                               "cannot install a handler for signal %d: %s", signals[i],
                               strerror(e));
        }
        h->n = i + 1;
    }
    installed = 1;
    *out = h;
    return HPCT_SUCCESS;
}

/* Replace our handler by SIG_IGN in one sigaction each: the default action is never in
 * force, not even for an instant. */
static void ignore(struct hpct_signals *h)
{
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    for (int i = 0; i < h->n; i++) sigaction(h->signo[i], &ign, NULL);
}

void hpct_signals_uninstall(hpct_signals_t h)
{
    if (!h) return;
    /* a preemption caught here or on another rank is still being acted on: a late signal
     * must not kill */
    if (caught_count > 0 || stopping)
        ignore(h);
    else
        restore(h, h->n);
    installed = 0;
    free(h);
}

int hpct_signals_pending(int *signo, int *count)
{
    int s = caught_signo, c = caught_count;
    if (signo) *signo = s;
    if (count) *count = c;
    return s != 0;
}

void hpct_signals_clear(void)
{
    caught_signo = 0;
    caught_count = 0;
    stopping = 0;
}

void hpcti_signals_stopping(void)
{
    stopping = 1;
}
