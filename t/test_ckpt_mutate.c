/* test_ckpt_mutate.c: several hundred byte-mutations of a real checkpoint (bit flips,
 * overwritten runs, truncations at positions drawn from a fixed seed), each loaded in a
 * child process with a time limit: by hpct_ckpt_load_latest on a directory holding an intact
 * older checkpoint and the mutated newer one, and by hpct_ckpt_file_open with every dataset
 * verified and read. No mutation may crash the child (a signal), hang it, or load damaged
 * state: the loader must load the newer file bit-identical or skip it and fall back to the
 * older one, and must close every HDF5 object it opened. HPCT_MUTATIONS (default 400) and
 * HPCT_MUTATION_SEED (default 1) vary the run. */
#include "config.h"
#include "lib/ckpt_util.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static const size_t counts[] = {50, 20};
#define OLD_STEP   10
#define NEW_STEP   20
#define LIMIT_SECS 60 /* per child: far above the few milliseconds a load takes */

/* Outcomes of one mutation (the child's exit status, or the parent's verdict). */
enum { LOADED_NEW, FELL_BACK, REFUSED, WRONG_STATE, LEFT_OPEN, CRASHED, HUNG, OUTCOMES };
static const char *outcome_names[OUTCOMES] = {"loaded the mutated file intact",
                                              "skipped it and fell back to the older one",
                                              "refused the directory with an error",
                                              "loaded damaged state",
                                              "left HDF5 objects open",
                                              "crashed",
                                              "hung"};

static uint64_t rng_state;
static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) tap_bail("cannot read %s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *buf = malloc(*len);
    if (!buf || fread(buf, 1, *len, f) != *len) tap_bail("cannot read %s", path);
    fclose(f);
    return buf;
}

static void write_all(const char *path, const unsigned char *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) tap_bail("cannot write %s", path);
}

/* Mutation k of orig[len] into out; its new length. A third flip one bit, a third overwrite
 * 1-16 bytes (random, 0x00 or 0xff), a sixth truncate, a sixth hit the first 512 bytes (the
 * superblock and root object header, parsed before any checksum of the library's). */
static size_t mutate(const unsigned char *orig, size_t len, unsigned char *out, int k, char *what,
                     size_t n)
{
    memcpy(out, orig, len);
    uint64_t r = next_random();
    size_t pos = (size_t)(next_random() % len);
    switch (k % 6) {
    case 0:
    case 1:
        out[pos] ^= (unsigned char)(1u << (r % 8));
        snprintf(what, n, "bit %u of byte %zu flipped", (unsigned)(r % 8), pos);
        return len;
    case 2:
    case 3: {
        size_t run = 1 + (size_t)(r % 16);
        int fill = (int)(r >> 8) % 3;
        for (size_t i = pos; i < pos + run && i < len; i++)
            out[i] = fill == 0 ? (unsigned char)next_random() : fill == 1 ? 0x00 : 0xff;
        snprintf(what, n, "%zu bytes at %zu overwritten (%s)", run, pos,
                 fill == 0   ? "random"
                 : fill == 1 ? "0x00"
                             : "0xff");
        return len;
    }
    case 4: snprintf(what, n, "truncated to %zu of %zu bytes", pos, len); return pos;
    default:
        pos %= len < 512 ? len : 512;
        out[pos] = (unsigned char)r;
        snprintf(what, n, "byte %zu of the header area set to 0x%02x", pos, (unsigned)(r & 0xff));
        return len;
    }
}

/* The child: inspect the mutated file, then resume from dir; exit with the outcome. */
static int child_load(const char *dir, const char *path)
{
    state_t st, want;
    st_create(&st, 2, counts, HPCT_OPT_ADAMW);
    /* the mutated file on its own; any status is fine, only crashes and hangs count */
    ckpt_read_file(st.ctx, path, 1u << 20);
    st_scramble(&st);
    hpct_ckpt_t ck = st_open_ck(&st, dir, 0);
    hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
    hpct_status_t rc = hpct_ckpt_load_latest(ck, st.params, st.opt, &m);
    if (H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) return LEFT_OPEN;
    if (rc) return REFUSED;
    st_create(&want, 2, counts, HPCT_OPT_ADAMW);
    st_fill(&want, OLD_STEP, 1); /* as main() saved: the AdamW slots carry over to step 20 */
    if (m.step == NEW_STEP) st_fill(&want, NEW_STEP, 2);
    hpct_optimizer_set_step(want.opt, m.step == NEW_STEP ? NEW_STEP : OLD_STEP);
    if ((m.step != NEW_STEP && m.step != OLD_STEP) || !st_equal(&st, &want)) return WRONG_STATE;
    return m.step == NEW_STEP ? LOADED_NEW : FELL_BACK;
}

/* Wait for pid at most LIMIT_SECS; the outcome (HUNG after killing it). */
static int wait_child(pid_t pid)
{
    int status;
    struct timespec nap = {0, 5 * 1000 * 1000};
    for (long waited_ms = 0; waited_ms < LIMIT_SECS * 1000L; waited_ms += 5) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) {
            if (WIFSIGNALED(status)) return CRASHED;
            int code = WEXITSTATUS(status);
            return code >= 0 && code <= LEFT_OPEN ? code : CRASHED;
        }
        if (got < 0 && errno != EINTR) tap_bail("waitpid: %s", strerror(errno));
        nanosleep(&nap, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return HUNG;
}

int main(void)
{
    const char *env_n = getenv("HPCT_MUTATIONS"), *env_seed = getenv("HPCT_MUTATION_SEED");
    int mutations = env_n && atoi(env_n) > 0 ? atoi(env_n) : 400;
    rng_state = 0x9e3779b97f4a7c15ULL * (uint64_t)(env_seed ? strtoull(env_seed, NULL, 10) : 1) | 1;
    tap_plan(6);

    /* a real directory: step 10 (intact, the fallback) and step 20 (to be mutated) */
    char dir[512], newest[1024], oldest[1024];
    make_tmpdir(dir, sizeof dir, "mutate");
    state_t st;
    st_create(&st, 2, counts, HPCT_OPT_ADAMW);
    hpct_ckpt_t ck = st_open_ck(&st, dir, 0);
    for (long step = OLD_STEP; step <= NEW_STEP; step += NEW_STEP - OLD_STEP) {
        st_fill(&st, (unsigned)step, step == NEW_STEP ? 2 : 1);
        hpct_ckpt_meta_t m = HPCT_CKPT_META_INITIALIZER;
        m.step = step;
        m.model = "mutate";
        hpct_optimizer_set_step(st.opt, step); /* a load refuses optimizer/step != meta/step */
        if (hpct_ckpt_save(ck, st.params, st.opt, &m))
            tap_bail("save: %s", hpct_last_error(st.ctx));
        const char *p;
        hpct_ckpt_last_path(ck, &p);
        snprintf(step == NEW_STEP ? newest : oldest, sizeof newest, "%s", p);
    }
    hpct_ckpt_close(ck);
    st_destroy(&st);
    size_t len, old_len;
    unsigned char *orig = read_all(newest, &len), *old = read_all(oldest, &old_len);
    unsigned char *mutated = malloc(len);
    if (!mutated) tap_bail("out of memory");

    /* the control: the file as saved loads bit-identical */
    pid_t control = fork();
    if (control < 0) tap_bail("fork: %s", strerror(errno));
    if (control == 0) _exit(child_load(dir, newest));
    int got = wait_child(control);
    tap_ok(got == LOADED_NEW, "the unmutated checkpoint loads intact (%s)", outcome_names[got]);

    int seen[OUTCOMES] = {0};
    char what[128], first_seen[OUTCOMES][256] = {{0}};
    for (int k = 0; k < mutations; k++) {
        size_t n = mutate(orig, len, mutated, k, what, sizeof what);
        write_all(newest, mutated, n);
        write_all(oldest, old, old_len); /* a loader may move a rejected file aside */
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) tap_bail("fork: %s", strerror(errno));
        if (pid == 0) _exit(child_load(dir, newest));
        int o = wait_child(pid);
        if (!seen[o]++) snprintf(first_seen[o], sizeof first_seen[o], "mutation %d: %s", k, what);
    }
    for (int o = 0; o < OUTCOMES; o++)
        tap_diag("%4d of %d mutations: %s%s%s", seen[o], mutations, outcome_names[o],
                 seen[o] ? ", first: " : "", seen[o] ? first_seen[o] : "");
    tap_is_int(seen[CRASHED], 0, "no mutation crashes the loader or the inspector");
    tap_is_int(seen[HUNG], 0, "no mutation hangs them (limit %d s each)", LIMIT_SECS);
    tap_is_int(seen[WRONG_STATE], 0, "no mutation loads damaged state");
    tap_is_int(seen[LEFT_OPEN], 0, "no mutation leaves an HDF5 object open");
    tap_ok(seen[LOADED_NEW] + seen[FELL_BACK] + seen[REFUSED] == mutations,
           "every mutation loaded intact, fell back or was refused (%d, %d, %d)", seen[LOADED_NEW],
           seen[FELL_BACK], seen[REFUSED]);
    free(orig), free(old), free(mutated);
    remove_tree(dir);
    return tap_done();
}
