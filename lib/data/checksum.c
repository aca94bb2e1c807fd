/* checksum.c: "hpct64", the shard checksum: 4 independent multiply-rotate lanes over
 * 32-byte blocks (fast enough to verify at read(2) speed), a tail fold, and a final
 * avalanche with the length. Format in doc/data-formats.md. */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define K1 0x9e3779b185ebca87ULL
#define K2 0xc2b2ae3d27d4eb4fULL
#define K3 0x165667b19e3779f9ULL

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian hosts only (checked by configure's targets) */
    return v;
}

static inline uint64_t mix_word(uint64_t lane, uint64_t w)
{
    return rotl64(lane + w * K2, 31) * K1;
}

void hpcti_hash_init(hpcti_hash_t *h)
{
    memset(h, 0, sizeof *h);
    h->lane[0] = K1 + K2;
    h->lane[1] = K2;
    h->lane[2] = 0;
    h->lane[3] = 0 - K1;
}

static void hash_blocks(hpcti_hash_t *h, const unsigned char *p, size_t blocks)
{
    uint64_t a = h->lane[0], b = h->lane[1], c = h->lane[2], d = h->lane[3];
    for (size_t i = 0; i < blocks; i++, p += 32) {
        a = mix_word(a, load64(p));
        b = mix_word(b, load64(p + 8));
        c = mix_word(c, load64(p + 16));
        d = mix_word(d, load64(p + 24));
    }
    h->lane[0] = a, h->lane[1] = b, h->lane[2] = c, h->lane[3] = d;
}

void hpcti_hash_update(hpcti_hash_t *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    h->total += len;
    if (h->tail_len) {
        size_t take = 32 - h->tail_len < len ? 32 - h->tail_len : len;
        memcpy(h->tail + h->tail_len, p, take);
        h->tail_len += take, p += take, len -= take;
        if (h->tail_len < 32) return;
        hash_blocks(h, h->tail, 1);
        h->tail_len = 0;
    }
    hash_blocks(h, p, len / 32);
    memcpy(h->tail, p + (len & ~(size_t)31), len % 32);
    h->tail_len = len % 32;
}

uint64_t hpcti_hash_final(const hpcti_hash_t *h)
{
    uint64_t x = rotl64(h->lane[0], 1) + rotl64(h->lane[1], 7) + rotl64(h->lane[2], 12) +
                 rotl64(h->lane[3], 18) + h->total;
    for (size_t i = 0; i < h->tail_len; i++) x = rotl64(x ^ (h->tail[i] * K3), 11) * K1;
    x ^= x >> 33, x *= K2, x ^= x >> 29, x *= K3, x ^= x >> 32;
    return x;
}

int hpcti_checksum_file(const char *path, uint64_t *sum, uint64_t *bytes)
{
    enum { BUF = 1 << 20 };
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    unsigned char *buf = malloc(BUF);
    if (!buf) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    hpcti_hash_t h;
    hpcti_hash_init(&h);
    ssize_t n;
    while ((n = read(fd, buf, BUF)) > 0) hpcti_hash_update(&h, buf, (size_t)n);
    int saved = errno;
    free(buf);
    close(fd);
    if (n < 0) {
        errno = saved;
        return -1;
    }
    *sum = hpcti_hash_final(&h);
    *bytes = h.total;
    return 0;
}
