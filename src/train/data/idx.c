/*
 * idx.c — reading Fashion-MNIST: the IDX format (big-endian header: magic
 * 0x00000803 for images or 0x00000801 for labels, then one u32 per dimension,
 * then the bytes), gzip-compressed or plain (zlib's gzread reads both).
 *
 * Every way a file can be wrong is reported with its path: missing (with how to
 * install the package), unreadable, not IDX, the wrong shape, truncated, or
 * failing gzip's CRC (read to the end so zlib checks the trailer).
 *
 * A header is not trusted: every dimension and every product of them is
 * checked (in 64-bit, without overflow) before it is used, and the buffer
 * grows only with bytes the file really holds, so a crafted header can make
 * the loader neither read past a buffer nor allocate what the file does not
 * contain: it is reported as corrupt.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include <symtrain/data.h>

#include "internal.h"

#define MAGIC_IMAGES 0x00000803u
#define MAGIC_LABELS 0x00000801u
#define REINSTALL "apt-get install --reinstall " SYM_FASHION_MNIST_PACKAGE

/* ---- files ---- */

/* path = dir/base.gz if it exists, else dir/base if that does; 0, or -1. */
static int find_file(const char *dir, const char *base, char *path, size_t len) {
    struct stat st;
    snprintf(path, len, "%s/%s.gz", dir, base);
    if (stat(path, &st) == 0) return 0;
    snprintf(path, len, "%s/%s", dir, base);
    if (stat(path, &st) == 0) return 0;
    snprintf(path, len, "%s/%s.gz", dir, base);
    return -1;
}

static int gz_fail(gzFile f, const char *path, const char *what) {
    int zerr = 0;
    const char *msg = gzerror(f, &zerr);
    if (zerr == Z_ERRNO)
        return sym__error(SYM_EIO, "cannot read %s: %s", path, strerror(errno));
    if (zerr == Z_OK || zerr == Z_BUF_ERROR)
        return sym__error(SYM_ECORRUPT, "%s is truncated: it ends inside the %s; replace it (%s)",
                          path, what, REINSTALL);
    /* zlib's message reads "<path>: <what went wrong>" */
    const char *colon = strstr(msg, ": ");
    if (colon && !strncmp(msg, path, (size_t)(colon - msg))) msg = colon + 2;
    return sym__error(SYM_ECORRUPT, "%s is damaged (gzip: %s); replace it (%s)", path, msg,
                      REINSTALL);
}

static int read_exact(gzFile f, void *buf, size_t len, const char *path, const char *what) {
    char *p = buf;
    while (len) {
        unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
        int n = gzread(f, p, chunk);
        if (n <= 0) return gz_fail(f, path, what);
        p += n;
        len -= (size_t)n;
    }
    return SYM_OK;
}

static uint32_t be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* The data: `total` bytes as the header claims them. The buffer grows with
 * what the file really holds (its decompressed length is known only by
 * reading it), so a header that claims more than the file holds costs at
 * most twice the bytes that are there, and is called corrupt. */
static int read_data(gzFile f, size_t total, const char *path, const char *shape, uint8_t **out) {
    size_t cap = total < (1u << 20) ? total : (1u << 20), got = 0;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return sym__error(SYM_ENOMEM, "out of memory reading %s (%zu bytes)", path, cap);
    while (got < total) {
        if (got == cap) {
            size_t ncap = cap > total - cap ? total : 2 * cap;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return sym__error(SYM_ENOMEM, "out of memory reading %s (%zu of the %zu bytes "
                                  "its header claims)", path, ncap, total);
            }
            buf = nb;
            cap = ncap;
        }
        size_t want = cap - got;
        int n = gzread(f, buf + got, want > (1u << 30) ? (1u << 30) : (unsigned)want);
        int zerr = Z_OK;
        if (n <= 0) gzerror(f, &zerr);
        if (n <= 0 && (zerr == Z_OK || zerr == Z_BUF_ERROR)) {
            free(buf);
            return sym__error(SYM_ECORRUPT, "%s is corrupt or truncated: its header claims %s = "
                              "%zu bytes of data, but only %zu follow; replace it (%s)",
                              path, shape, total, got, REINSTALL);
        }
        if (n <= 0) {
            free(buf);
            return gz_fail(f, path, "data");
        }
        got += (size_t)n;
    }
    *out = buf;
    return SYM_OK;
}

/* Read an IDX file of `want_dims` dimensions; *data (malloc'd) gets the bytes,
 * dims[] the sizes. Each dimension is 1..2^24, one item (the product of all
 * but the first) at most INT_MAX bytes (a sample's size is an int) and the
 * whole a size_t, checked without overflow before anything is allocated. */
static int read_idx(const char *path, uint32_t magic, int want_dims, uint32_t *dims,
                    uint8_t **data) {
    *data = NULL;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return sym__error(SYM_ENOENT, "%s does not exist", path);
        return sym__error(SYM_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    gzbuffer(f, 1 << 18);
    int rc;
    unsigned char hdr[4 + 4 * 3];
    if ((rc = read_exact(f, hdr, 4, path, "header"))) goto out;
    if (be32(hdr) != magic) {
        rc = sym__error(SYM_ECORRUPT,
                        "%s is not an IDX %s file (magic 0x%08x, expected 0x%08x); replace it (%s)",
                        path, magic == MAGIC_IMAGES ? "image" : "label", be32(hdr), magic,
                        REINSTALL);
        goto out;
    }
    if ((rc = read_exact(f, hdr + 4, 4 * (size_t)want_dims, path, "header"))) goto out;
    char shape[64] = "";
    size_t total = 1, item = 1, at = 0;
    for (int d = 0; d < want_dims; d++) {
        dims[d] = be32(hdr + 4 + 4 * d);
        at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%u", d ? " x " : "", dims[d]);
        if (dims[d] == 0 || dims[d] > (1u << 24)) {
            rc = sym__error(SYM_ECORRUPT, "%s is corrupt: its header has an impossible dimension "
                            "%u (of %d: 1 to %u each); replace it (%s)", path, dims[d],
                            want_dims, 1u << 24, REINSTALL);
            goto out;
        }
        if (d > 0 && item > (size_t)INT_MAX / dims[d]) {
            rc = sym__error(SYM_ECORRUPT, "%s is corrupt: its header claims items of %s%s bytes, "
                            "more than %d; replace it (%s)", path, strchr(shape, 'x') + 2,
                            d + 1 < want_dims ? " x ..." : "", INT_MAX, REINSTALL);
            goto out;
        }
        if (total > SIZE_MAX / dims[d]) {
            rc = sym__error(SYM_ECORRUPT, "%s is corrupt: its header claims %s%s bytes, a product "
                            "that overflows a size; replace it (%s)", path, shape,
                            d + 1 < want_dims ? " x ..." : "", REINSTALL);
            goto out;
        }
        if (d > 0) item *= dims[d];
        total *= dims[d];
    }
    if ((rc = read_data(f, total, path, shape, data))) goto out;
    /* Read past the end, so zlib checks the gzip trailer (CRC-32 and length). */
    char extra;
    int n = gzread(f, &extra, 1);
    if (n < 0) {
        rc = gz_fail(f, path, "gzip trailer");
    } else if (n > 0) {
        rc = sym__error(SYM_ECORRUPT, "%s has bytes after its %zu bytes of data; replace it (%s)",
                        path, total, REINSTALL);
    }
out:
    gzclose(f);
    if (rc) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

/* ---- the data set ---- */

int sym_dataset_load_fashion(const char *dir, int train, sym_dataset_t *out) {
    memset(out, 0, sizeof *out);
    const char *img_base = train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte";
    const char *lab_base = train ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte";
    char img[PATH_MAX], lab[PATH_MAX];
    int miss_img = find_file(dir, img_base, img, sizeof img);
    int miss_lab = find_file(dir, lab_base, lab, sizeof lab);
    if (miss_img || miss_lab)
        return sym__error(SYM_ENOENT,
                          "Fashion-MNIST is not in %s (no %s); install it with `apt-get install "
                          "%s`, or pass --data DIR naming a directory with the four IDX files",
                          dir, miss_img ? img : lab, SYM_FASHION_MNIST_PACKAGE);
    uint32_t idims[3], ldims[1];
    uint8_t *pixels = NULL, *labels = NULL;
    int rc = read_idx(img, MAGIC_IMAGES, 3, idims, &pixels);
    if (!rc) rc = read_idx(lab, MAGIC_LABELS, 1, ldims, &labels);
    if (!rc && ldims[0] != idims[0])
        rc = sym__error(SYM_ECORRUPT, "%s holds %u labels but %s holds %u images; replace them (%s)",
                        lab, ldims[0], img, idims[0], REINSTALL);
    for (uint32_t i = 0; !rc && i < ldims[0]; i++)
        if (labels[i] > 9)
            rc = sym__error(SYM_ECORRUPT, "%s: label %u of sample %u is not a class 0..9; replace "
                            "it (%s)", lab, labels[i], i, REINSTALL);
    if (rc) {
        free(pixels);
        free(labels);
        return rc;
    }
    snprintf(out->name, sizeof out->name, "fashion-mnist");
    out->n = idims[0];
    out->dim = (int)((uint64_t)idims[1] * idims[2]);
    out->classes = 10;
    out->pixels = pixels;
    out->labels = labels;
    sym_dataset_set_stats(out);
    return SYM_OK;
}
