/* test_token_partners: the arrival-token partners (hpcti_token_partners, lib/comm/runtime/
 * collective.c) for every W up to 300 and a few large ones: no rank itself, no repeat,
 * ascending; symmetric (p a partner of q when q is of p); connected (from rank 0 every rank is
 * reached), so equal operation numbers between partners mean equal numbers everywhere; every
 * other rank up to W = 5; at most 2 ceil(log2 W), so a healthy operation costs O(log W). */
#include "../lib/comm/runtime/runtime.h"
#include "lib/tap.h"

#include <stdlib.h>
#include <string.h>

static int ceil_log2(int w)
{
    int k = 0;
    while ((1L << k) < w) k++;
    return k;
}

/* "" when the partner list of rank r in w is well formed and not too long, else why. */
static const char *list_fault(int r, int w, const int *p, int n)
{
    if (n > 2 * ceil_log2(w)) return "longer than 2 ceil(log2 W)";
    for (int i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= w) return "a rank out of range";
        if (p[i] == r) return "the rank itself";
        if (i && p[i] <= p[i - 1]) return "not strictly ascending";
    }
    return "";
}

static int has(const int *p, int n, int q)
{
    for (int i = 0; i < n; i++)
        if (p[i] == q) return 1;
    return 0;
}

/* "" when the partner graph of w ranks is well formed, symmetric and connected, else why. */
static const char *graph_fault(int w)
{
    int(*part)[HPCTI_MAX_PARTNERS] = malloc((size_t)w * sizeof *part);
    int *n = malloc((size_t)w * sizeof *n), *seen = calloc((size_t)w, sizeof *seen);
    int *queue = malloc((size_t)w * sizeof *queue);
    const char *fault = "";
    for (int r = 0; r < w && !*fault; r++) {
        n[r] = hpcti_token_partners(r, w, part[r]);
        fault = list_fault(r, w, part[r], n[r]);
        if (!*fault && w <= 5 && n[r] != w - 1) fault = "not every other rank at W <= 5";
    }
    for (int r = 0; r < w && !*fault; r++)
        for (int i = 0; i < n[r] && !*fault; i++)
            if (!has(part[part[r][i]], n[part[r][i]], r)) fault = "not symmetric";
    int head = 0, tail = 0, reached = 1;
    queue[tail++] = 0, seen[0] = 1;
    while (!*fault && head < tail) { /* breadth first from rank 0 */
        int r = queue[head++];
        for (int i = 0; i < n[r]; i++)
            if (!seen[part[r][i]]) seen[part[r][i]] = 1, queue[tail++] = part[r][i], reached++;
    }
    if (!*fault && reached != w) fault = "not connected";
    free(part), free(n), free(seen), free(queue);
    return fault;
}

int main(void)
{
    tap_plan(6);
    const char *fault = "";
    int bad_w = 0;
    for (int w = 1; w <= 300 && !*fault; w++)
        if (*(fault = graph_fault(w))) bad_w = w;
    tap_ok(!*fault, "W = 1..300: every partner graph well formed, symmetric and connected%s%s",
           *fault ? ": " : "", fault);
    if (*fault) tap_diag("first fault at W = %d", bad_w);
    static const int big[] = {1024, 4096, 4099};
    for (int i = 0; i < 3; i++) {
        fault = graph_fault(big[i]);
        tap_ok(!*fault, "W = %d: well formed, symmetric and connected%s%s", big[i],
               *fault ? ": " : "", fault);
    }
    int p[HPCTI_MAX_PARTNERS];
    int n = hpcti_token_partners(5, 16384, p);
    tap_ok(n == 27 && p[0] == 1 && has(p, n, 4) && has(p, n, 6) && has(p, n, 16381) &&
               has(p, n, 5 + 8192),
           "W = 16384, rank 5: 27 partners (5 +- 2^k; 5 + 8192 = 5 - 8192 once), got %d", n);
    n = hpcti_token_partners(0, 8, p);
    tap_ok(n == 5 && p[0] == 1 && p[1] == 2 && p[2] == 4 && p[3] == 6 && p[4] == 7,
           "W = 8, rank 0: partners 1,2,4,6,7 (not 3 and 5), got %d", n);
    return tap_done();
}
