/* poll.c: how the library's polling waits (MPI_Test loops) give their CPU away. */
#include "core.h"
#include "sim.h"

#include <sched.h>
#include <time.h>

/* MPI requests progress only inside MPI calls, so the rule goes by how long nothing has
 * moved: spin, then yield, and sleep only after 1 s. Where Open MPI has no single-copy
 * mechanism, a large message between ranks of a node moves in fragments only while both
 * poll, and a sleep stalls it: 256 MiB on 2x2 virtual nodes of 16 cores took 450 ms with
 * sleeps after 50 ms of a wait, against 190 ms. sched_yield costs about 0.4-0.6 us in a VM. */
void hpcti_backoff(double idle, double spin)
{
#ifdef HPCT_SIM
    /* SMPI schedules ranks cooperatively: a spin or a sched_yield with no MPI call never lets
     * a simulated peer run, so every pause is a sleep in simulated time (smpicc maps nanosleep
     * to smpi_nanosleep), 5 % of the idle time from 0.1 us up to 50 us: a wait ends at most
     * that late, in few simulator events. */
    double pause = idle * 0.05 < 1e-7 ? 1e-7 : idle * 0.05 > 5e-5 ? 5e-5 : idle * 0.05;
    struct timespec pause_ts = {0, (long)(pause * 1e9)};
    (void)spin;
    nanosleep(&pause_ts, NULL);
    return;
#endif
    if (idle < spin) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        return;
    }
    if (idle < 1.0) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, idle < 10.0 ? 50000 : 1000000};
    nanosleep(&ts, NULL);
}
