/* memory.c (device double): device allocations mapped twice (a PROT_NONE address for the
 * library, a writable alias for the double's work), pinned host memory, sticky errors and the
 * fault handler that names a host dereference of device memory. */
#define _GNU_SOURCE
#include "double.h"

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { KIND_FREE = 0, KIND_DEVICE = 1, KIND_PINNED = 2 };

struct region {
    char *addr;   /* what the library holds: device (PROT_NONE) or pinned host */
    char *alias;  /* device: the writable mapping of the same pages */
    size_t bytes; /* as asked */
    size_t mapped;
    int kind;
};

#define MAX_REGIONS 65536
static struct region regions[MAX_REGIONS];
static int nregions;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static cudaError_t sticky = cudaSuccess;
static struct sigaction old_segv;

long dd_env(const char *name, long def)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v) return def;
    long x = strtol(v, &end, 10);
    return *end ? def : x;
}

unsigned dd_rand(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) & 0xffffffu;
}

void dd_report(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuda double (pid %d): %s\n", (int)getpid(), msg);
}

void dd_fail(cudaError_t e, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&mu);
    int first = sticky == cudaSuccess;
    if (first) sticky = e;
    pthread_mutex_unlock(&mu);
    fprintf(stderr, "cuda double (pid %d): %s%s\n", (int)getpid(), msg,
            first ? "" : " (after an earlier error)");
}

cudaError_t dd_sticky(void)
{
    pthread_mutex_lock(&mu);
    cudaError_t e = sticky;
    pthread_mutex_unlock(&mu);
    return e;
}

/* The region holding p (any kind), or NULL; read without the lock by the fault handler. */
static struct region *find(const void *p)
{
    const char *c = p;
    for (int i = 0; i < nregions; i++) {
        struct region *r = &regions[i];
        if (r->kind != KIND_FREE && c >= r->addr && c < r->addr + (r->mapped ? r->mapped : 1))
            return r;
    }
    return NULL;
}

int dd_pinned_fits(const void *p, size_t bytes)
{
    pthread_mutex_lock(&mu);
    struct region *r = find(p);
    size_t off = r ? (size_t)((const char *)p - r->addr) : 0;
    int ok = !r || r->kind != KIND_PINNED || (off <= r->bytes && bytes <= r->bytes - off);
    size_t size = r ? r->bytes : 0;
    pthread_mutex_unlock(&mu);
    if (!ok)
        dd_fail(cudaErrorIllegalAddress,
                "copy of %zu bytes at %p runs past its pinned allocation of %zu bytes", bytes, p,
                size);
    return ok;
}

int dd_kind(const void *p)
{
    pthread_mutex_lock(&mu);
    struct region *r = find(p);
    int k = r ? r->kind : 0;
    pthread_mutex_unlock(&mu);
    return k;
}

void *dd_dev(const void *p, size_t bytes, const char *what)
{
    pthread_mutex_lock(&mu);
    struct region *r = find(p);
    char *alias = NULL;
    size_t off = r ? (size_t)((const char *)p - r->addr) : 0;
    if (r && r->kind == KIND_DEVICE && off <= r->bytes && bytes <= r->bytes - off)
        alias = r->alias + off;
    pthread_mutex_unlock(&mu);
    if (alias) return alias;
    if (r && r->kind == KIND_DEVICE)
        dd_fail(cudaErrorIllegalAddress,
                "%s: device access [%p, +%zu bytes) runs past its allocation of %zu bytes at %p",
                what, p, bytes, r->bytes, (void *)r->addr);
    else
        dd_fail(cudaErrorIllegalAddress, "%s: %p is %s, not device memory", what, p,
                r ? "pinned host memory" : "host memory");
    return NULL;
}

/* SIGSEGV inside a device address: the library read or wrote device memory from the host. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
    struct region *r = find(si->si_addr);
    if (r && r->kind == KIND_DEVICE) {
        char msg[256];
        int n = snprintf(msg, sizeof msg,
                         "cuda double: host code dereferenced device memory at %p (allocation "
                         "of %zu bytes at %p); the call site:\n",
                         si->si_addr, r->bytes, (void *)r->addr);
        if (write(2, msg, (size_t)n) < 0) n = 0;
        void *frames[32];
        backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    }
    sigaction(SIGSEGV, &old_segv, NULL); /* Open MPI's handler or the default: re-raise */
    if (old_segv.sa_flags & SA_SIGINFO && old_segv.sa_sigaction)
        old_segv.sa_sigaction(sig, si, uc);
    else
        raise(sig);
}

static void install(void)
{
    void *frame;
    backtrace(&frame, 1); /* loads libgcc_s now, not first inside the fault handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
}

void dd_start(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}

static struct region *new_region(void)
{
    for (int i = 0; i < nregions; i++)
        if (regions[i].kind == KIND_FREE) return &regions[i];
    return nregions < MAX_REGIONS ? &regions[nregions++] : NULL;
}

/* Device memory: shared anonymous pages mapped twice, the address handed out PROT_NONE. The
 * pages start zeroed; cudaMalloc does not promise that, so they are filled with 0xff (a NaN
 * as float and as double) to make a read of memory nobody wrote visible in every result. */
cudaError_t cudaMalloc(void **p, size_t bytes)
{
    cudaError_t f = dd_capture_forbids("cudaMalloc");
    if (f) return f;
    dd_start();
    dd_context("cudaMalloc");
    if (!p) return cudaErrorInvalidValue;
    long page = sysconf(_SC_PAGESIZE);
    size_t mapped = ((bytes ? bytes : 1) + (size_t)page - 1) / (size_t)page * (size_t)page;
    if (bytes > ((size_t)1 << 40)) return cudaErrorMemoryAllocation;
    char *alias = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (alias == MAP_FAILED) return cudaErrorMemoryAllocation;
    char *addr = mremap(alias, 0, mapped, MREMAP_MAYMOVE);
    if (addr == MAP_FAILED || mprotect(addr, mapped, PROT_NONE)) {
        munmap(alias, mapped);
        return cudaErrorMemoryAllocation;
    }
    memset(alias, 0xff, mapped);
    pthread_mutex_lock(&mu);
    struct region *r = new_region();
    if (r) *r = (struct region){addr, alias, bytes, mapped, KIND_DEVICE};
    pthread_mutex_unlock(&mu);
    if (!r) {
        munmap(addr, mapped), munmap(alias, mapped);
        return cudaErrorMemoryAllocation;
    }
    *p = addr;
    return cudaSuccess;
}

/* cudaFree synchronises the device first, as CUDA's does. */
cudaError_t cudaFree(void *p)
{
    cudaError_t f = dd_capture_forbids("cudaFree");
    if (f) return f;
    dd_start();
    dd_context("cudaFree");
    cudaDeviceSynchronize();
    if (!p) return cudaSuccess;
    pthread_mutex_lock(&mu);
    struct region *r = find(p);
    int ok = r && r->kind == KIND_DEVICE && r->addr == p;
    struct region gone = ok ? *r : (struct region){0};
    if (ok) r->kind = KIND_FREE;
    pthread_mutex_unlock(&mu);
    if (!ok) {
        dd_report("cudaFree(%p): not the start of a device allocation", p);
        return cudaErrorInvalidValue;
    }
    munmap(gone.addr, gone.mapped), munmap(gone.alias, gone.mapped);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    cudaError_t f = dd_capture_forbids("cudaMallocHost");
    if (f) return f;
    dd_start();
    dd_context("cudaMallocHost");
    void *m = NULL;
    if (!p) return cudaErrorInvalidValue;
    if (dd_env("CUDA_DOUBLE_FAIL_MALLOC_HOST", 0) == 1) return cudaErrorNotSupported; /* a test's */
    if (posix_memalign(&m, 4096, bytes ? bytes : 1)) return cudaErrorMemoryAllocation;
    memset(m, 0xff, bytes ? bytes : 1); /* NaN: a read of what nobody wrote shows */
    pthread_mutex_lock(&mu);
    struct region *r = new_region();
    if (r) *r = (struct region){m, NULL, bytes, bytes ? bytes : 1, KIND_PINNED};
    pthread_mutex_unlock(&mu);
    if (!r) {
        free(m);
        return cudaErrorMemoryAllocation;
    }
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    cudaError_t f = dd_capture_forbids("cudaFreeHost");
    if (f) return f;
    dd_start();
    dd_context("cudaFreeHost");
    cudaDeviceSynchronize();
    if (!p) return cudaSuccess;
    pthread_mutex_lock(&mu);
    struct region *r = find(p);
    int ok = r && r->kind == KIND_PINNED && r->addr == p;
    if (ok) r->kind = KIND_FREE;
    pthread_mutex_unlock(&mu);
    if (!ok) {
        dd_report("cudaFreeHost(%p): not from cudaMallocHost", p);
        return cudaErrorInvalidValue;
    }
    free(p);
    return cudaSuccess;
}

/* Device allocations are device memory, cudaMallocHost's are registered host memory, and any
 * other address is unregistered host memory (CUDA 11 and later: success, not an error). */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    dd_context("cudaPointerGetAttributes");
    if (!a) return cudaErrorInvalidValue;
    int kind = dd_kind(p);
    *a = (struct cudaPointerAttributes){.type = cudaMemoryTypeUnregistered};
    if (kind == KIND_DEVICE)
        a->type = cudaMemoryTypeDevice, a->devicePointer = (void *)(uintptr_t)p;
    else if (kind == KIND_PINNED)
        a->type = cudaMemoryTypeHost, a->hostPointer = a->devicePointer = (void *)(uintptr_t)p;
    else
        a->hostPointer = (void *)(uintptr_t)p;
    return cudaSuccess;
}
