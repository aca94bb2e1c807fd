/* h5sink.c: the HDF5 file driver the checkpoint writer gives HDF5: POSIX pread/pwrite like
 * HDF5's sec2 driver (the same bytes on disk), except that a write never fails in HDF5's
 * eyes. HDF5 1.10 cannot recover from a failed write: a failed H5Fflush leaves its metadata
 * cache half flushed ("slist already enabled"), so the file can no longer be closed, and a
 * failed H5Fclose frees the file but keeps its id, which the next use of the id and HDF5's
 * own exit handler then read freed memory through (a crash, issue 37). Here the first failed
 * write is recorded in the caller's hpcti_ck_sink_t instead; later metadata writes are kept in
 * memory, so HDF5 can still read back what it wrote, and raw data is dropped. The caller
 * checks the sink after each stage and throws the file away. Runs under hpcti_hdf5_lock. */
#include "h5io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Metadata written after the first failure: [addr, addr + size) holds bytes. */
typedef struct kept {
    haddr_t addr;
    size_t size;
    unsigned char *bytes;
} kept_t;

typedef struct sink_file {
    H5FD_t pub; /* HDF5's part: first */
    int fd;
    haddr_t eoa, eof; /* end of the allocated and of the written address space, bytes */
    hpcti_ck_sink_t *sink;
    kept_t *kept;
    size_t num_kept, cap_kept;
} sink_file_t;

/* The driver info in the file access list: where failures are recorded. */
typedef struct sink_info {
    hpcti_ck_sink_t *sink;
} sink_info_t;

static void record(sink_file_t *f, int err, haddr_t addr, size_t size)
{
    if (f->sink->err) return; /* the first failure is the one to report */
    f->sink->err = err ? err : EIO;
    f->sink->offset = (long long)addr;
    f->sink->bytes = size;
}

static H5FD_t *sink_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr)
{
    (void)maxaddr;
    const sink_info_t *info = H5Pget_driver_info(fapl);
    if (!info || !info->sink) return NULL;
    int o = O_CLOEXEC | ((flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY);
    o |= ((flags & H5F_ACC_TRUNC) ? O_TRUNC : 0) | ((flags & H5F_ACC_CREAT) ? O_CREAT : 0);
    o |= (flags & H5F_ACC_EXCL) ? O_EXCL : 0;
    int fd = open(name, o, 0666);
    struct stat st;
    sink_file_t *f = fd >= 0 && fstat(fd, &st) == 0 ? calloc(1, sizeof *f) : NULL;
    if (!f) {
        if (flags & H5F_ACC_CREAT) info->sink->open_err = errno ? errno : ENOMEM;
        if (fd >= 0) close(fd);
        return NULL;
    }
    f->fd = fd, f->sink = info->sink;
    f->eof = (haddr_t)st.st_size;
    return &f->pub;
}

static herr_t sink_close(H5FD_t *file)
{
    sink_file_t *f = (sink_file_t *)file;
    if (close(f->fd) < 0) record(f, errno, f->eof, 0); /* NFS reports late write errors here */
    for (size_t i = 0; i < f->num_kept; i++) free(f->kept[i].bytes);
    free(f->kept);
    free(f);
    return 0;
}

static herr_t sink_query(const H5FD_t *file, unsigned long *flags)
{
    (void)file;
    if (flags)
        *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
                 H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA |
                 H5FD_FEAT_POSIX_COMPAT_HANDLE | H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
    return 0;
}

static haddr_t sink_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const sink_file_t *)file)->eoa;
}

static herr_t sink_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
    (void)type;
    ((sink_file_t *)file)->eoa = addr;
    return 0;
}

static haddr_t sink_get_eof(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const sink_file_t *)file)->eof;
}

static herr_t sink_get_handle(H5FD_t *file, hid_t fapl, void **handle)
{
    (void)fapl;
    *handle = &((sink_file_t *)file)->fd;
    return 0;
}

/* The kept write, newest first, that holds all of [addr, addr + size), or NULL. */
static const kept_t *find_kept(const sink_file_t *f, haddr_t addr, size_t size)
{
    for (size_t i = f->num_kept; i-- > 0;) {
        const kept_t *k = &f->kept[i];
        if (addr >= k->addr && addr + size <= k->addr + k->size) return k;
    }
    return NULL;
}

static herr_t sink_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                        void *buf)
{
    (void)type, (void)dxpl;
    sink_file_t *f = (sink_file_t *)file;
    const kept_t *k = f->sink->err ? find_kept(f, addr, size) : NULL;
    if (k) {
        memcpy(buf, k->bytes + (addr - k->addr), size);
        return 0;
    }
    unsigned char *p = buf;
    while (size > 0) {
        ssize_t got = pread(f->fd, p, size, (off_t)addr);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* past the end (or unreadable): zeros, as sec2 reads */
        p += got, addr += (haddr_t)got, size -= (size_t)got;
    }
    memset(p, 0, size);
    return 0;
}

/* After a failure: keep metadata in memory (HDF5 may read it back), drop raw data. */
static void keep(sink_file_t *f, H5FD_mem_t type, haddr_t addr, size_t size, const void *buf)
{
    if (type == H5FD_MEM_DRAW || size == 0) return;
    if (f->num_kept == f->cap_kept) {
        size_t cap = f->cap_kept ? 2 * f->cap_kept : 64;
        kept_t *grown = realloc(f->kept, cap * sizeof *grown);
        if (!grown) return; /* a later read of it gets the file's bytes: the file is discarded */
        f->kept = grown, f->cap_kept = cap;
    }
    unsigned char *copy = malloc(size);
    if (!copy) return;
    memcpy(copy, buf, size);
    f->kept[f->num_kept++] = (kept_t){addr, size, copy};
}

static herr_t sink_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                         const void *buf)
{
    (void)dxpl;
    sink_file_t *f = (sink_file_t *)file;
    haddr_t end = addr + size;
    const unsigned char *p = buf;
    while (!f->sink->err && size > 0) {
        ssize_t put = pwrite(f->fd, p, size, (off_t)addr);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0)
            record(f, put < 0 ? errno : ENOSPC, addr, size);
        else
            p += put, addr += (haddr_t)put, size -= (size_t)put;
    }
    if (size > 0) keep(f, type, addr, size, p);
    if (end > f->eof) f->eof = end;
    return 0;
}

/* At close HDF5 makes the file exactly eoa bytes long. */
static herr_t sink_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
    (void)dxpl, (void)closing;
    sink_file_t *f = (sink_file_t *)file;
    if (f->eoa == f->eof) return 0;
    if (!f->sink->err && ftruncate(f->fd, (off_t)f->eoa) < 0) record(f, errno, f->eoa, 0);
    f->eof = f->eoa;
    return 0;
}

static const H5FD_class_t sink_class = {
#ifdef H5FD_CLASS_VERSION /* HDF5 >= 1.13.2 */
    .version = H5FD_CLASS_VERSION,
    .value = 601, /* in the range HDF5 leaves to applications' drivers (512-65535) */
#endif
    .name = "hpctrain_ckpt_sink",
    .maxaddr = ((haddr_t)1 << (8 * sizeof(off_t) - 1)) - 1,
    .fc_degree = H5F_CLOSE_WEAK,
    .fapl_size = sizeof(sink_info_t),
    .open = sink_open,
    .close = sink_close,
    .query = sink_query,
    .get_eoa = sink_get_eoa,
    .set_eoa = sink_set_eoa,
    .get_eof = sink_get_eof,
    .get_handle = sink_get_handle,
    .read = sink_read,
    .write = sink_write,
    .truncate = sink_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

/* The driver's id, registered once (again if HDF5 was closed and reopened since). */
static hid_t sink_driver(void)
{
    static hid_t id = H5I_INVALID_HID;
    if (id < 0 || H5Iis_valid(id) <= 0) id = H5FDregister(&sink_class);
    return id;
}

hid_t hpcti_ck_sink_fapl(hpcti_ck_sink_t *sink)
{
    memset(sink, 0, sizeof *sink);
    sink_info_t info = {sink};
    hid_t driver = sink_driver(), fapl = driver < 0 ? -1 : H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_driver(fapl, driver, &info) < 0) {
        H5Pclose(fapl);
        fapl = -1;
    }
    return fapl;
}
