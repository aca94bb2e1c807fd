/* inputs.c: readers for the converter's input formats, gzip-compressed or plain. Whole files
 * are read into memory; gzip files are inflated with zlib's z_stream API (not gzread, which
 * skips junk after the last member without a word). */
#include "config.h"
#include "tools.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Append len bytes to the growing buffer *buf [*n of *cap]; -1 when out of memory. */
static int append(unsigned char **buf, size_t *n, size_t *cap, const void *src, size_t len)
{
    if (!len) return 0; /* *buf may still be NULL */
    if (*n + len > *cap) {
        size_t want = *cap ? *cap : 1 << 20;
        while (want < *n + len) want *= 2;
        unsigned char *grown = realloc(*buf, want);
        if (!grown) return -1;
        *buf = grown, *cap = want;
    }
    memcpy(*buf + *n, src, len);
    *n += len;
    return 0;
}

/* *f = path opened for reading if it is a regular file; 0 or an exit code. Opening a FIFO
 * does not wait for a writer (O_NONBLOCK, cleared once the file is known to be regular). */
static int open_regular(const char *path, FILE **f)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return tool_error(TOOL_DATA, "%s: %s", path, strerror(errno));
    struct stat st = {0};
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || flags < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        close(fd);
        return tool_error(TOOL_DATA, "%s: not a regular file (%s): inputs must be files", path,
                          S_ISFIFO(st.st_mode)  ? "a FIFO"
                          : S_ISDIR(st.st_mode) ? "a directory"
                                                : "a device, a socket or unreadable");
    }
    *f = fdopen(fd, "rb");
    if (!*f) return close(fd), tool_error(TOOL_FAILED, "%s: %s", path, strerror(errno));
    return TOOL_OK;
}

/* Whole raw file into *raw [*len]; 0 or an exit code. */
static int read_raw(const char *path, unsigned char **raw, size_t *len)
{
    FILE *f;
    int opened = open_regular(path, &f);
    if (opened) return opened;
    unsigned char chunk[1 << 16];
    size_t got, cap = 0;
    int rc = TOOL_OK;
    *raw = NULL, *len = 0;
    while (!rc && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (append(raw, len, &cap, chunk, got))
            rc = tool_error(TOOL_FAILED, "%s: out of memory", path);
    if (!rc && ferror(f)) rc = tool_error(TOOL_DATA, "%s: %s", path, strerror(errno ? errno : EIO));
    fclose(f);
    if (rc) free(*raw), *raw = NULL;
    return rc;
}

/* raw [len] (one or more gzip members, back to back, as gzip(1) writes with cat) inflated
 * into *out [*n]. Anything after the last member that is not another member (junk, zero
 * padding) is refused with its byte offset: zlib's gzread would skip it silently. */
static int gunzip(const char *path, const unsigned char *raw, size_t len, unsigned char **out,
                  size_t *n)
{
    z_stream z = {0};
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return tool_error(TOOL_FAILED, "%s: out of memory", path);
    unsigned char chunk[1 << 16];
    size_t cap = 0, member = 0; /* member: offset of the member being inflated */
    int rc = TOOL_OK, zr = Z_OK;
    *out = NULL, *n = 0;
    z.next_in = (unsigned char *)raw;
    z.avail_in = (uInt)(len < UINT_MAX ? len : UINT_MAX);
    while (!rc) {
        size_t offset = (size_t)(z.next_in - raw);
        if (z.avail_in == 0 && offset < len)
            z.avail_in = (uInt)(len - offset < UINT_MAX ? len - offset : UINT_MAX);
        z.next_out = chunk, z.avail_out = sizeof chunk;
        zr = inflate(&z, Z_NO_FLUSH);
        if (append(out, n, &cap, chunk, sizeof chunk - z.avail_out))
            rc = tool_error(TOOL_FAILED, "%s: out of memory", path);
        offset = (size_t)(z.next_in - raw);
        if (rc) break;
        if (zr == Z_STREAM_END) {
            if (offset == len) break; /* the last member ends the file */
            if (len - offset < 2 || raw[offset] != 0x1f || raw[offset + 1] != 0x8b) {
                rc = tool_error(TOOL_DATA,
                                "%s: %zu bytes of junk after the gzip stream at byte offset %zu "
                                "(not another gzip member)",
                                path, len - offset, offset);
                break;
            }
            member = offset;
            inflateReset(&z);
        } else if (zr == Z_BUF_ERROR && offset == len) { /* needs input the file lacks */
            rc = tool_error(TOOL_DATA,
                            "%s: gzip stream truncated at byte offset %zu (the member that "
                            "starts at byte %zu does not end)",
                            path, len, member);
        } else if (zr != Z_OK) {
            rc = tool_error(TOOL_DATA, "%s: corrupt gzip data near byte offset %zu: %s", path,
                            offset, z.msg ? z.msg : "inflate failed");
        }
    }
    inflateEnd(&z);
    if (rc) free(*out), *out = NULL;
    return rc;
}

/* Whole (decompressed) file into a malloc'd buffer; 0 or an exit code. A file that starts
 * with the gzip magic bytes is inflated; any other is taken as it is. */
static int slurp(const char *path, unsigned char **out, size_t *len)
{
    unsigned char *raw;
    size_t n;
    int rc = read_raw(path, &raw, &n);
    if (rc) return rc;
    if (n < 2 || raw[0] != 0x1f || raw[1] != 0x8b) {
        *out = raw, *len = n;
        return TOOL_OK;
    }
    rc = gunzip(path, raw, n, out, len);
    free(raw);
    return rc;
}

/* Elements of a; UINT64_MAX when the dims overflow (no file can hold that many). */
static uint64_t count_of(const tool_array_t *a)
{
    uint64_t n = 1;
    for (int i = 0; i < a->rank; i++)
        if (__builtin_mul_overflow(n, a->dims[i], &n)) return UINT64_MAX;
    return n;
}

/* Data bytes of a; UINT64_MAX when that overflows (never equal to a real file size). */
static uint64_t bytes_of(const tool_array_t *a)
{
    uint64_t bytes;
    if (__builtin_mul_overflow(count_of(a), (uint64_t)tool_type_size(a->type), &bytes))
        return UINT64_MAX;
    return bytes;
}

/* Reverse the bytes of each element (big-endian file -> little-endian host). */
static void swap_bytes(unsigned char *p, uint64_t count, size_t size)
{
    for (uint64_t i = 0; i < count && size > 1; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b], p[b] = t;
        }
}

/* IDX: 0 0 TYPE NDIMS, NDIMS big-endian uint32 sizes, then big-endian data. */
int tool_read_idx(const char *path, tool_array_t *a)
{
    unsigned char *buf;
    size_t len;
    int rc = slurp(path, &buf, &len);
    if (rc) return rc;
    static const struct {
        unsigned char code;
        tool_type_t type;
    } codes[] = {{0x08, TOOL_U8},  {0x09, TOOL_I8},  {0x0B, TOOL_I16},
                 {0x0C, TOOL_I32}, {0x0D, TOOL_F32}, {0x0E, TOOL_F64}};
    int type = -1;
    for (size_t i = 0; len >= 4 && i < sizeof codes / sizeof *codes; i++)
        if (buf[2] == codes[i].code) type = (int)codes[i].type;
    if (len < 4 || buf[0] || buf[1] || type < 0 || buf[3] < 1 || buf[3] > HPCT_SHARD_MAX_RANK)
        rc = tool_error(TOOL_DATA, "%s: not an IDX file (bad magic number)", path);
    size_t header = len >= 4 ? 4 + 4 * (size_t)buf[3] : 0;
    if (!rc && len < header) rc = tool_error(TOOL_DATA, "%s: IDX header truncated", path);
    if (!rc) {
        a->type = (tool_type_t)type;
        a->rank = buf[3];
        for (int i = 0; i < a->rank; i++) {
            const unsigned char *d = buf + 4 + 4 * i;
            a->dims[i] = (uint64_t)d[0] << 24 | (uint64_t)d[1] << 16 | (uint64_t)d[2] << 8 | d[3];
        }
        uint64_t bytes = bytes_of(a);
        if (bytes != len - header)
            rc = tool_error(TOOL_DATA, "%s: IDX header promises %llu data bytes, file has %zu (%s)",
                            path, (unsigned long long)bytes, len - header,
                            bytes > len - header ? "truncated" : "trailing bytes after the data");
    }
    if (!rc) {
        memmove(buf, buf + header, len - header);
        swap_bytes(buf, count_of(a), tool_type_size(a->type));
        a->data = buf;
    } else {
        free(buf);
    }
    return rc;
}

/* The value of key in a .npy header dict, e.g. "'descr': '<f4'" -> "'<f4'". */
static const char *npy_field(const char *header, const char *key)
{
    const char *p = strstr(header, key);
    if (!p) return NULL;
    p = strchr(p + strlen(key), ':');
    return p ? p + 1 + strspn(p + 1, " ") : NULL;
}

static int npy_descr(const char *v, tool_type_t *t)
{
    static const char *names[TOOL_NUM_TYPES] = {"u1", "i1", "u2", "i2", "u4",
                                                "i4", "u8", "i8", "f4", "f8"};
    if (!v || *v != '\'' || (v[1] != '<' && v[1] != '|')) return -1;
    for (int i = 0; i < TOOL_NUM_TYPES; i++)
        if (!strncmp(v + 2, names[i], 2) && v[4] == '\'') {
            *t = (tool_type_t)i;
            return 0;
        }
    return -1;
}

static int npy_shape(const char *v, tool_array_t *a)
{
    if (!v || *v != '(') return -1;
    a->rank = 0;
    for (v++;;) {
        v += strspn(v, " ,");
        if (*v == ')') break;
        char *end;
        unsigned long long d = strtoull(v, &end, 10);
        if (end == v || a->rank == HPCT_SHARD_MAX_RANK) return -1;
        a->dims[a->rank++] = d;
        v = end;
    }
    return a->rank >= 1 ? 0 : -1;
}

/* The malformed-header error of path: TOOL_DATA. */
static int npy_bad(const char *path, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return tool_error(TOOL_DATA, "%s: malformed .npy header: %s", path, why);
}

/* Index of the dict key k [n] in descr, fortran_order, shape; -1 for any other. */
static int npy_key_index(const char *k, size_t n)
{
    static const char *keys[3] = {"descr", "fortran_order", "shape"};
    for (int i = 0; i < 3; i++)
        if (strlen(keys[i]) == n && !strncmp(k, keys[i], n)) return i;
    return -1;
}

/* The quoted key at q (a quote) of the header h, its closing quote at end: known, not seen
 * before (*seen: a bit per key), followed by ':'. 0 or the error. */
static int npy_take_key(const char *path, const char *h, const char *q, const char *end, int *seen)
{
    int n = (int)(end - q - 1), k = npy_key_index(q + 1, (size_t)n);
    if (k < 0) return npy_bad(path, "unknown key '%.*s' at byte %td", n, q + 1, q - h);
    if (*seen & 1 << k) return npy_bad(path, "key '%.*s' given twice", n, q + 1);
    *seen |= 1 << k;
    if (end[1 + strspn(end + 1, " ")] != ':')
        return npy_bad(path, "key '%.*s' is not followed by ':'", n, q + 1);
    return TOOL_OK;
}

/* The header h is one Python dict literal with the keys descr, fortran_order and shape,
 * each once, quotes and brackets balanced, nothing but blanks after it. 0 or the error. */
static int npy_check_dict(const char *path, const char *h)
{
    const char *p = h + strspn(h, " ");
    int depth = 0, seen = 0, want_key = 0, rc = TOOL_OK;
    if (*p != '{') return npy_bad(path, "not a dict (no '{' at its start)");
    for (; *p && !rc; p++) {
        const char *q = *p == '\'' || *p == '"' ? strchr(p + 1, *p) : NULL;
        if ((*p == '\'' || *p == '"') && !q)
            return npy_bad(path, "unbalanced quote at byte %td", p - h);
        if (q && depth == 1 && want_key)
            rc = npy_take_key(path, h, p, q, &seen), want_key = 0;
        else if (!q && depth == 1 && want_key && !strchr(" \n}", *p))
            rc = npy_bad(path, "a key that is not a quoted string at byte %td", p - h);
        if (q)
            p = q;
        else if (strchr("{([", *p))
            want_key = ++depth == 1;
        else if (strchr("})]", *p) && --depth == 0)
            break;
        else if (*p == ',' && depth == 1)
            want_key = 1;
    }
    if (rc) return rc;
    if (depth != 0) return npy_bad(path, "unbalanced braces or parentheses");
    if (p[1 + strspn(p + 1, " \n")])
        return npy_bad(path, "text after the dict at byte %td", p + 1 - h);
    if (seen != 7)
        return npy_bad(path, "key '%s' is missing",
                       !(seen & 1)   ? "descr"
                       : !(seen & 2) ? "fortran_order"
                                     : "shape");
    return TOOL_OK;
}

/* The header's length and the data's offset of a .npy file buf [len]: 0 or the error (the
 * magic, a format version other than 1.0, 2.0, 3.0, a length past the end). */
static int npy_layout(const char *path, const unsigned char *buf, size_t len, size_t *hlen,
                      size_t *start)
{
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6))
        return tool_error(TOOL_DATA, "%s: not a .npy file (bad magic)", path);
    if (buf[6] < 1 || buf[6] > 3 || buf[7] != 0)
        return tool_error(TOOL_DATA,
                          "%s: .npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)",
                          path, buf[6], buf[7]);
    size_t at = buf[6] == 1 ? 10 : 12;
    *hlen = 0;
    if (len >= at) *hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    if (len >= at && at == 12) *hlen |= (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    *start = at + *hlen;
    if (!*hlen || *start > len)
        return tool_error(TOOL_DATA,
                          "%s: .npy header of %zu bytes does not fit the file (%zu bytes)", path,
                          *hlen, len);
    return TOOL_OK;
}

/* The dtype, order and shape of a well-formed header, for data_len bytes of data. */
static int npy_fields(const char *path, const char *header, tool_array_t *a, size_t data_len)
{
    const char *order = npy_field(header, "'fortran_order'");
    if (npy_descr(npy_field(header, "'descr'"), &a->type))
        return tool_error(
            TOOL_DATA, "%s: unsupported dtype (want little-endian u1..u8, i1..i8, f4, f8)", path);
    if (!order || strncmp(order, "False", 5))
        return tool_error(TOOL_DATA, "%s: Fortran-order arrays are not supported", path);
    if (npy_shape(npy_field(header, "'shape'"), a))
        return tool_error(TOOL_DATA, "%s: cannot read the shape", path);
    if (bytes_of(a) != data_len)
        return tool_error(TOOL_DATA, "%s: shape promises %llu bytes of data, file has %zu", path,
                          (unsigned long long)bytes_of(a), data_len);
    return TOOL_OK;
}

/* NumPy .npy v1-v3, little-endian, C order. */
int tool_read_npy(const char *path, tool_array_t *a)
{
    unsigned char *buf;
    size_t len;
    int rc = slurp(path, &buf, &len);
    if (rc) return rc;
    size_t hlen = 0, start = 0;
    rc = npy_layout(path, buf, len, &hlen, &start);
    char *header = rc ? NULL : strndup((char *)buf + start - hlen, hlen);
    if (!rc && !header) rc = tool_error(TOOL_FAILED, "out of memory");
    if (!rc && strlen(header) != hlen) rc = npy_bad(path, "a NUL byte in the header");
    if (!rc) rc = npy_check_dict(path, header);
    if (!rc) rc = npy_fields(path, header, a, len - start);
    free(header);
    if (rc) {
        free(buf);
        return rc;
    }
    memmove(buf, buf + start, len - start);
    a->data = buf;
    return TOOL_OK;
}

/* Append one value to a growing float array. */
static int push(float **v, size_t *n, size_t *cap, float x)
{
    if (*n == *cap) {
        float *grown = realloc(*v, (*cap = *cap ? 2 * *cap : 4096) * sizeof **v);
        if (!grown) return -1;
        *v = grown;
    }
    (*v)[(*n)++] = x;
    return 0;
}

/* Parse one CSV line into values; returns the column count or -1. */
static long parse_row(char *line, float **v, size_t *n, size_t *cap)
{
    long cols = 0;
    for (char *p = line;; cols++) {
        char *end;
        float x = strtof(p, &end);
        if (end == p || push(v, n, cap, x)) return -1;
        p = end + strspn(end, " \t\r\n");
        if (!*p) return cols + 1;
        if (*p != ',') return -1;
        p++;
    }
}

/* Split the label column out of values [rows, cols] into labels (int32 if integral); -1 when
 * out of memory, TOOL_DATA (said) for a label float32 cannot hold exactly. */
static int split_labels(const char *path, float *v, uint64_t rows, long cols, long lc,
                        tool_array_t *in, tool_array_t *lab)
{
    int integral = 1;
    float *x = malloc(rows * (size_t)(cols - 1) * sizeof *x), *y = malloc(rows * sizeof *y);
    if (!x || !y) return free(x), free(y), -1;
    for (uint64_t r = 0; r < rows; r++) {
        float *row = v + r * (uint64_t)cols, *dst = x + r * (uint64_t)(cols - 1);
        y[r] = row[lc];
        /* range first: converting a float outside int32 (or NaN) to int32 is undefined */
        integral &= y[r] >= -0x1p31f && y[r] < 0x1p31f && y[r] == (float)(int32_t)y[r];
        for (long c = 0, k = 0; c < cols; c++)
            if (c != lc) dst[k++] = row[c];
    }
    for (uint64_t r = 0; integral && r < rows; r++)
        if (fabsf(y[r]) > 0x1p24f) { /* read as float32: 16777219 became 16777220 */
            double label = y[r];
            free(x), free(y);
            return tool_error(TOOL_DATA,
                              "%s: sample %llu: the label %.0f is beyond 2^24, where float32 "
                              "(the CSV reader's type) holds no exact integers; class labels "
                              "must be below 16777216",
                              path, (unsigned long long)r, label);
        }
    if (integral)
        for (uint64_t r = 0; r < rows; r++) ((int32_t *)y)[r] = (int32_t)y[r];
    *in = (tool_array_t){TOOL_F32, 2, {rows, (uint64_t)(cols - 1)}, x};
    *lab = (tool_array_t){integral ? TOOL_I32 : TOOL_F32, 1, {rows}, y};
    return 0;
}

int tool_read_csv(const char *path, int label_column, int skip_header, tool_array_t *inputs,
                  tool_array_t *labels)
{
    unsigned char *text;
    size_t len;
    int rc = slurp(path, &text, &len);
    if (rc) return rc;
    unsigned char *ended = realloc(text, len + 1); /* room for the last line's NUL */
    if (!ended) return free(text), tool_error(TOOL_FAILED, "out of memory");
    text = ended;
    text[len] = '\0';
    float *v = NULL;
    size_t n = 0, cap = 0;
    long cols = -1, lineno = 0;
    uint64_t rows = 0;
    for (size_t at = 0; !rc && at < len;) {
        char *line = (char *)text + at, *nl = memchr(line, '\n', len - at);
        size_t line_len = nl ? (size_t)(nl - line) : len - at;
        at += line_len + 1;
        lineno++;
        line[line_len] = '\0';
        if (strlen(line) != line_len) {
            rc = tool_error(TOOL_DATA, "%s line %ld: a NUL byte (not a text file?)", path, lineno);
        } else if (!((lineno == 1 && skip_header) || !line[strspn(line, " \t\r")])) {
            long c = parse_row(line, &v, &n, &cap);
            if (c < 2 || (cols >= 0 && c != cols))
                rc = tool_error(TOOL_DATA, "%s line %ld: %s", path, lineno,
                                c < 0 ? "not a comma-separated list of numbers"
                                      : "column count differs from the first row (need >= 2)");
            cols = c, rows++;
        }
    }
    free(text);
    long lc = label_column < 0 ? cols - 1 : label_column;
    if (!rc && rows == 0) rc = tool_error(TOOL_DATA, "%s: no data rows", path);
    if (!rc && (lc < 0 || lc >= cols))
        rc = tool_error(TOOL_USAGE, "--label-column %d: %s has %ld columns", label_column, path,
                        cols);
    if (!rc) rc = split_labels(path, v, rows, cols, lc, inputs, labels);
    if (rc < 0) rc = tool_error(TOOL_FAILED, "out of memory");
    free(v);
    return rc;
}
