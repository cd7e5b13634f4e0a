/*
 * train_data — reading data sets, and every way a data file can be wrong.
 *
 * Writes small IDX files of random content (gzip and plain) into a scratch
 * directory and reads them back byte for byte; then damages them — missing,
 * truncated, a flipped byte inside the gzip stream, wrong magic, counts that
 * disagree, a bad label — and checks each is refused with SYM_ENOENT or
 * SYM_ECORRUPT and a message that names the file (and, when missing, the
 * package and the --data flag). Crafted headers (dimensions whose product
 * wraps, a sample too large to count, a 74-byte file claiming 3.3 GB) must
 * be called corrupt before anything is read or allocated on their word. The generated data set is checked for
 * determinism and prefix stability; the installed Fashion-MNIST, when present,
 * for its published shape.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <symtrain/symtrain.h>

#include "test.h"

static char dir[256];
static test_rng_t rng;

enum { N = 37, R = 28, C = 28 };
static uint8_t pixels[N * R * C], labels[N];

static void be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Write an IDX file (gzip if gz) of magic, dims and data; cut it short by `cut` bytes. */
static void write_idx(const char *name, int gz, uint32_t magic, const uint32_t *dims, int nd,
                      const uint8_t *data, size_t len, size_t cut) {
    size_t total = 4 + 4 * (size_t)nd + len;
    uint8_t *buf = malloc(total);
    be32(buf, magic);
    for (int d = 0; d < nd; d++) be32(buf + 4 + 4 * d, dims[d]);
    memcpy(buf + 4 + 4 * nd, data, len);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        CHECK(f != NULL, "gzopen %s", path);
        CHECK(gzwrite(f, buf, (unsigned)total) == (int)total, "gzwrite");
        CHECK(gzclose(f) == Z_OK, "gzclose");
        if (cut) { /* truncate the compressed file */
            struct stat st;
            CHECK(stat(path, &st) == 0, "stat");
            CHECK(truncate(path, st.st_size - (off_t)cut) == 0, "truncate");
        }
    } else {
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(buf, 1, total - cut, f) == total - cut && fclose(f) == 0, "write %s", path);
    }
    free(buf);
}

static void write_all(int gz) {
    uint32_t idims[3] = {N, R, C}, ldims[1] = {N};
    char a[64], b[64];
    snprintf(a, sizeof a, "train-images-idx3-ubyte%s", gz ? ".gz" : "");
    snprintf(b, sizeof b, "train-labels-idx1-ubyte%s", gz ? ".gz" : "");
    write_idx(a, gz, 0x803, idims, 3, pixels, sizeof pixels, 0);
    write_idx(b, gz, 0x801, ldims, 1, labels, sizeof labels, 0);
}

static void clear_dir(void) {
    static const char *names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                  "train-images-idx3-ubyte", "train-labels-idx1-ubyte"};
    char path[512];
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
}

static void expect_ok(const char *what) {
    sym_dataset_t ds;
    int rc = sym_dataset_load_fashion(dir, 1, &ds);
    CHECK(rc == 0, "%s: %s", what, sym_last_error());
    CHECK(ds.n == N && ds.dim == R * C && ds.classes == 10, "%s: shape %lld x %d", what, (long long)ds.n, ds.dim);
    CHECK(!memcmp(ds.pixels, pixels, sizeof pixels) && !memcmp(ds.labels, labels, sizeof labels),
          "%s: the bytes read differ from the bytes written", what);
    /* normalisation statistics from the pixels */
    double s = 0, s2 = 0;
    for (size_t i = 0; i < sizeof pixels; i++) s += pixels[i] / 255.0, s2 += (pixels[i] / 255.0) * (pixels[i] / 255.0);
    double mean = s / sizeof pixels, sd = sqrt(s2 / sizeof pixels - mean * mean);
    CHECK(fabs(ds.mean - mean) < 1e-6 && fabs(ds.std - sd) < 1e-6, "%s: mean %g std %g, expected %g %g",
          what, (double)ds.mean, (double)ds.std, mean, sd);
    /* gathering normalises */
    int64_t idx[2] = {5, 0};
    float x[2 * R * C];
    int32_t y[2];
    sym_dataset_gather(&ds, idx, 2, x, y);
    CHECK(y[0] == labels[5] && y[1] == labels[0], "gathered labels");
    CHECK(fabs(x[3] - ((pixels[5 * R * C + 3] / 255.0) - mean) / sd) < 1e-5, "gathered pixel");
    sym_dataset_free(&ds);
}

static void expect_fail(const char *what, int code, const char *needle1, const char *needle2) {
    sym_dataset_t ds;
    int rc = sym_dataset_load_fashion(dir, 1, &ds);
    CHECK(rc == code, "%s: returned %d (%s), expected %d; message: %s", what, rc, sym_strerror(rc), code,
          sym_last_error());
    CHECK(strstr(sym_last_error(), needle1) != NULL, "%s: the message does not name \"%s\": %s", what,
          needle1, sym_last_error());
    if (needle2)
        CHECK(strstr(sym_last_error(), needle2) != NULL, "%s: the message does not say \"%s\": %s",
              what, needle2, sym_last_error());
    printf("  %-34s -> %s\n", what, sym_last_error());
}

static void check_files(void) {
    for (size_t i = 0; i < sizeof pixels; i++) pixels[i] = (uint8_t)test_next(&rng);
    for (int i = 0; i < N; i++) labels[i] = (uint8_t)(test_next(&rng) % 10);
    char img[512], lab[512];
    snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(lab, sizeof lab, "%s/train-labels-idx1-ubyte.gz", dir);

    expect_fail("missing files", SYM_ENOENT, "apt-get install dataset-fashion-mnist", "--data");
    write_all(1);
    expect_ok("gzip files");
    clear_dir();
    write_all(0);
    expect_ok("plain files");
    clear_dir();

    uint32_t idims[3] = {N, R, C}, ldims[1] = {N};
    write_all(1);
    write_idx("train-images-idx3-ubyte.gz", 1, 0x803, idims, 3, pixels, sizeof pixels, 40);
    expect_fail("truncated gzip", SYM_ECORRUPT, img, NULL);

    write_idx("train-images-idx3-ubyte.gz", 0, 0x803, idims, 3, pixels, sizeof pixels, 1000);
    expect_fail("truncated data", SYM_ECORRUPT, img, "truncated");

    write_idx("train-images-idx3-ubyte.gz", 1, 0x803, idims, 3, pixels, sizeof pixels, 0);
    { /* flip a byte in the middle of the deflate stream */
        FILE *f = fopen(img, "r+b");
        CHECK(f != NULL, "open %s", img);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, size / 2, SEEK_SET);
        int c = fgetc(f);
        fseek(f, size / 2, SEEK_SET);
        fputc(c ^ 0xFF, f);
        fclose(f);
    }
    expect_fail("damaged gzip stream", SYM_ECORRUPT, img, NULL);

    write_idx("train-images-idx3-ubyte.gz", 1, 0x801, idims, 3, pixels, sizeof pixels, 0);
    expect_fail("wrong magic", SYM_ECORRUPT, img, "not an IDX image file");

    write_idx("train-images-idx3-ubyte.gz", 1, 0x803, idims, 3, pixels, sizeof pixels, 0);
    uint32_t fewer[1] = {N - 1};
    write_idx("train-labels-idx1-ubyte.gz", 1, 0x801, fewer, 1, labels, N - 1, 0);
    expect_fail("label count differs", SYM_ECORRUPT, lab, "labels");

    uint8_t bad[N];
    memcpy(bad, labels, N);
    bad[N - 1] = 10;
    write_idx("train-labels-idx1-ubyte.gz", 1, 0x801, ldims, 1, bad, N, 0);
    expect_fail("label out of range", SYM_ECORRUPT, lab, "class");
    clear_dir();
}

/* Crafted headers: each must be refused as corrupt, naming the file, before
 * anything is read past a buffer or allocated beyond what the file holds. */
static void check_crafted(void) {
    char img[512];
    snprintf(img, sizeof img, "%s/train-images-idx3-ubyte", dir);
    uint32_t ldims[1] = {N};
    write_idx("train-labels-idx1-ubyte", 0, 0x801, ldims, 1, labels, N, 0);

    /* 196608 x 9612203 x 9761029 wraps to 327680 in 64 bits (and 9612203 x
     * 9761029 to 1431655767 in 32): 327680 bytes of data followed, the labels
     * were there, and every sample read ran far past the 320 KB buffer. */
    enum { WN = 196608, WDATA = 327680 };
    uint32_t wrap[3] = {WN, 9612203, 9761029};
    uint8_t *zeros = calloc(WDATA, 1); /* WDATA > WN: holds both payloads */
    CHECK(zeros != NULL, "calloc");
    write_idx("train-images-idx3-ubyte", 0, 0x803, wrap, 3, zeros, WDATA, 0);
    uint32_t wl[1] = {WN};
    write_idx("train-labels-idx1-ubyte", 0, 0x801, wl, 1, zeros, WN, 0);
    expect_fail("dimensions whose product wraps", SYM_ECORRUPT, img, "corrupt");
    CHECK(strstr(sym_last_error(), "overflow") || strstr(sym_last_error(), "items of"),
          "the wrap is not named: %s", sym_last_error());
    write_idx("train-labels-idx1-ubyte", 0, 0x801, ldims, 1, labels, N, 0);

    /* A sample of 65536 x 65537 pixels: more than an int counts. */
    uint32_t wide[3] = {1, 65536, 65537};
    write_idx("train-images-idx3-ubyte", 0, 0x803, wide, 3, zeros, 1000, 0);
    expect_fail("a sample too large to count", SYM_ECORRUPT, img, "items of 65536 x 65537");
    free(zeros);

    uint32_t zero[3] = {N, 0, C}, big[3] = {N, (1u << 24) + 1, C};
    write_idx("train-images-idx3-ubyte", 0, 0x803, zero, 3, pixels, 100, 0);
    expect_fail("a zero dimension", SYM_ECORRUPT, img, "corrupt");
    write_idx("train-images-idx3-ubyte", 0, 0x803, big, 3, pixels, 100, 0);
    expect_fail("a dimension above 2^24", SYM_ECORRUPT, img, "corrupt");

    /* A 74-byte file (gzip'd, less) whose header claims 2^24 images of 14 x 14
     * (3.3 GB): it used to allocate them all before reading. Under an address
     * space limit 1 GiB above what the process maps, that was "out of memory";
     * it must be "corrupt", having allocated no more than the file holds. */
    uint32_t huge[3] = {1u << 24, 14, 14};
    for (int gz = 0; gz < 2; gz++) {
        char name[64];
        snprintf(name, sizeof name, "train-images-idx3-ubyte%s", gz ? ".gz" : "");
        write_idx(name, gz, 0x803, huge, 3, pixels, 58, 0);
        fflush(stdout);
        pid_t pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
            long pages = 0;
            FILE *f = fopen("/proc/self/statm", "r");
            CHECK(f && fscanf(f, "%ld", &pages) == 1, "read /proc/self/statm");
            fclose(f);
            struct rlimit lim;
            lim.rlim_cur = lim.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (1ul << 30);
            CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
            snprintf(img, sizeof img, "%s/%s", dir, name);
            expect_fail(gz ? "a 3.3 GB claim, gzip" : "a 3.3 GB claim in 74 bytes", SYM_ECORRUPT,
                        img, "claims 16777216 x 14 x 14 = 3288334336 bytes");
            fflush(stdout);
            _exit(0);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the 3.3 GB claim (%s) was not refused as "
              "corrupt", gz ? "gzip" : "plain");
        unlink(img);
        snprintf(img, sizeof img, "%s/train-images-idx3-ubyte", dir);
    }
    clear_dir();
}

static void check_generated(void) {
    sym_dataset_t a, b, c;
    CHECK(sym_dataset_generate(500, 9, 1, &a) == 0 && sym_dataset_generate(200, 9, 1, &b) == 0 &&
          sym_dataset_generate(200, 9, 0, &c) == 0, "%s", sym_last_error());
    CHECK(a.n == 500 && a.dim == 784 && a.classes == 10, "generated shape");
    CHECK(!memcmp(a.pixels, b.pixels, 200 * 784) && !memcmp(a.labels, b.labels, 200),
          "the first 200 samples of 500 differ from 200 generated alone");
    CHECK(memcmp(b.pixels, c.pixels, 200 * 784) != 0, "the test split equals the training split");
    int count[10] = {0};
    for (int i = 0; i < 500; i++) count[a.labels[i]]++;
    for (int k = 0; k < 10; k++) CHECK(count[k] > 20, "class %d has %d of 500 samples", k, count[k]);
    CHECK(a.std > 0.05f, "generated pixels hardly vary (std %g)", (double)a.std);
    sym_dataset_free(&a);
    sym_dataset_free(&b);
    sym_dataset_free(&c);
    printf("  generated set: deterministic, prefix-stable, all classes present\n");
}

static void check_installed(void) {
    sym_dataset_t tr, te;
    if (sym_dataset_load_fashion(SYM_FASHION_MNIST_DIR, 1, &tr) == SYM_ENOENT) {
        printf("  installed Fashion-MNIST: not installed, not checked (%s)\n", sym_last_error());
        return;
    }
    CHECK(sym_dataset_load_fashion(SYM_FASHION_MNIST_DIR, 0, &te) == 0, "%s", sym_last_error());
    CHECK(tr.n == 60000 && te.n == 10000 && tr.dim == 784, "Fashion-MNIST has %lld + %lld samples of %d",
          (long long)tr.n, (long long)te.n, tr.dim);
    int count[10] = {0};
    for (int64_t i = 0; i < tr.n; i++) count[tr.labels[i]]++;
    for (int k = 0; k < 10; k++) CHECK(count[k] == 6000, "class %d has %d training samples", k, count[k]);
    /* published statistics: mean 0.2860, std 0.3530 */
    CHECK(fabs(tr.mean - 0.2860) < 1e-3 && fabs(tr.std - 0.3530) < 1e-3, "mean %g std %g",
          (double)tr.mean, (double)tr.std);
    printf("  installed Fashion-MNIST: 60000 + 10000 samples, 6000 per class, mean %.4f std %.4f\n",
           (double)tr.mean, (double)tr.std);
    sym_dataset_free(&tr);
    sym_dataset_free(&te);
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_data: seed %llu\n", (unsigned long long)seed);
    rng = test_rng(seed, 3);
    test_mkdtemp(dir, sizeof dir, "train_data");
    check_files();
    check_crafted();
    rmdir(dir);
    check_generated();
    check_installed();
    printf("train_data: ok\n");
    return 0;
}
