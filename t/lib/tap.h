/* tap.h: a small TAP producer for the tests in t/ (Test Anything Protocol 13).
 * Argument order, everywhere: the value under test first, then what it should be, then the
 * printf-style description: tap_is_int(got, want, "..."), tap_within(got, want, tol, "...").
 * Plan first (tap_plan), end with "return tap_done();". The shell twin is t/lib/tap.sh. */
#ifndef HPCT_TAP_H
#define HPCT_TAP_H

#include <stddef.h>

/* Announce the number of tests. */
void tap_plan(int n);
/* A prefix for every later point's description (e.g. "[device double, not a GPU] "). */
void tap_prefix(const char *prefix);
/* Print "1..0 # SKIP reason" and exit 0 (an honest skip, never a silent pass). */
void tap_skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* One test point; returns cond. */
int tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Pass when got == want (ints); prints both on failure. */
int tap_is_int(long got, long want, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Pass when |got - want| <= tol; prints both on failure. */
int tap_within(double got, double want, double tol, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Pass when strings are equal (NULL-safe). */
int tap_is_str(const char *got, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Mark test points as skipped. */
void tap_skip(int count, const char *reason);
/* A "# ..." diagnostic line. */
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit status for main: 0 when every planned test ran and passed. */
int tap_done(void);
/* Stop the test run at once ("Bail out!"). */
void tap_bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
