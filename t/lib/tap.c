/* tap.c: the TAP producer used by every C test. */
#include "tap.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int planned = -1, run, failed;
static const char *prefix = "";

void tap_prefix(const char *p)
{
    prefix = p ? p : "";
}

void tap_plan(int n)
{
    planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

void tap_skip_all(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("1..0 # SKIP ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    exit(0);
}

static int report(int cond, const char *fmt, va_list ap)
{
    run++;
    if (!cond) failed++;
    printf("%sok %d - %s", cond ? "" : "not ", run, prefix);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    return cond;
}

int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(cond, fmt, ap);
    va_end(ap);
    return cond;
}

int tap_is_int(long got, long want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int cond = report(got == want, fmt, ap);
    va_end(ap);
    if (!cond) tap_diag("got %ld, want %ld", got, want);
    return cond;
}

int tap_within(double got, double want, double tol, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int cond = report(fabs(got - want) <= tol, fmt, ap);
    va_end(ap);
    if (!cond) tap_diag("got %.9g, want %.9g within %.3g", got, want, tol);
    return cond;
}

int tap_is_str(const char *got, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int cond = report(got && want && strcmp(got, want) == 0, fmt, ap);
    va_end(ap);
    if (!cond) tap_diag("got '%s', want '%s'", got ? got : "(null)", want ? want : "(null)");
    return cond;
}

void tap_skip(int count, const char *reason)
{
    for (int i = 0; i < count; i++) printf("ok %d # SKIP %s\n", ++run, reason);
    fflush(stdout);
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

int tap_done(void)
{
    if (planned < 0) printf("1..%d\n", run);
    if (planned >= 0 && run != planned) tap_diag("planned %d tests but ran %d", planned, run);
    return failed || (planned >= 0 && run != planned) ? 1 : 0;
}

void tap_bail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("Bail out! ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    exit(1);
}
