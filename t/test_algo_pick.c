/* test_algo_pick: the probe's choice from its timings (hpcti_algo_pick, lib/comm/avg/algo.c): the
 * fastest wins, the library's own path keeps a tie, an untimed candidate never wins, and
 * shm/p2p (one node) or p2p (several) keeps a class of 1 MiB or more unless the copying path
 * is over 10 % faster (below 1 MiB a tie stays with the copying path). */
#include "../lib/comm/dist.h"
#include "lib/tap.h"

#include <string.h>

#define KIB(k) ((size_t)(k)*1024 / sizeof(float)) /* floats in k KiB */

static const int one_node[] = {HPCTI_ALGO_SHM, HPCTI_ALGO_SHM_P2P, HPCTI_ALGO_ALLGATHER};
static const int two_nodes[] = {HPCTI_ALGO_SHM, HPCTI_ALGO_P2P, HPCTI_ALGO_ALLGATHER};

/* The name of the winner among one_node's candidates timed shm, shm/p2p, allgather (us). */
static const char *pick(double shm, double p2p, double allgather, size_t n)
{
    const double best[] = {shm * 1e-6, p2p * 1e-6, allgather * 1e-6};
    return hpcti_algo_name(one_node[hpcti_algo_pick(one_node, best, 3, n)]);
}

/* The same among two_nodes' candidates shm, p2p, allgather. */
static const char *pick2(double shm, double p2p, double allgather, size_t n)
{
    const double best[] = {shm * 1e-6, p2p * 1e-6, allgather * 1e-6};
    return hpcti_algo_name(two_nodes[hpcti_algo_pick(two_nodes, best, 3, n)]);
}

static void expect(const char *got, const char *want, const char *what)
{
    tap_ok(!strcmp(got, want), "%s: %s (got %s)", what, want, got);
}

int main(void)
{
    tap_plan(13);
    expect(pick(53, 53, 1e24, KIB(16)), "shm", "16 KiB, shm and shm/p2p tied");
    expect(pick(53, 52, 1e24, KIB(16)), "shm/p2p", "16 KiB, shm/p2p 2 % faster");
    expect(pick(200, 210, 1e24, KIB(256)), "shm", "256 KiB, shm/p2p 5 % slower");
    expect(pick(300, 300, 1e24, KIB(1024)), "shm/p2p", "1 MiB, tied");
    expect(pick(280, 300, 1e24, KIB(1024)), "shm/p2p", "1 MiB, shm 7 % faster");
    expect(pick(260, 300, 1e24, KIB(1024)), "shm", "1 MiB, shm 15 % faster");
    expect(pick(1000, 1050, 1e24, KIB(4096)), "shm/p2p", "4 MiB, shm 5 % faster");
    expect(pick(60, 50, 40, KIB(16)), "allgather", "16 KiB, allgather fastest");
    expect(pick(300, 300, 250, KIB(1024)), "allgather",
           "1 MiB, allgather 17 % faster than shm/p2p");
    expect(pick2(504, 516, 1e24, KIB(1024)), "p2p", "two nodes, 1 MiB, shm 2 % faster");
    expect(pick2(440, 516, 1e24, KIB(1024)), "shm", "two nodes, 1 MiB, shm 15 % faster");
    expect(pick2(127, 130, 1e24, KIB(256)), "shm", "two nodes, 256 KiB, shm 2 % faster");
    const double best[] = {40e-6, 1e30, 5e-6};
    tap_ok(hpcti_algo_pick(one_node, best, 2, KIB(4)) == 0,
           "a candidate past nc is not looked at, an untimed one never wins (index %d)",
           hpcti_algo_pick(one_node, best, 2, KIB(4)));
    return tap_done();
}
