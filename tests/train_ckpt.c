/*
 * train_ckpt — checkpoint directories: write, prune, verify, fall back, and
 * the background writer.
 *
 * Random file contents and metadata (64-bit values included) must round-trip
 * exactly. Damage is introduced the ways disks and crashes do it — a flipped
 * byte, a short file, a missing manifest, a half-written temporary directory —
 * and the reader must name each damaged checkpoint and fall back to the one
 * before. The writer thread must write what it was given at the time of the
 * call (a snapshot), report a failed write at the next call, and replace a
 * checkpoint of the same step.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <symtrain/symtrain.h>

#include "test.h"
#include "test_nobody.h"

static char dir[256];
static test_rng_t rng;

enum { NM = 3001, NO = 777 };

typedef struct {
    float model[NM];
    unsigned char optim[NO];
} blob_t;

static void meta_for(int64_t step, sym_ckpt_meta_t *m) {
    memset(m, 0, sizeof *m);
    m->step = step;
    m->global_batch = 96;
    m->train_samples = 600;
    m->epoch = step / 7; /* epochs of ceil(600 / 96) = 7 steps */
    m->sample = step % 7 * 96;
    m->world_size = 3;
    m->blas_threads = 2;
    m->seed = 0x8000000000000005ull; /* above 2^63: must survive as an integer */
    m->data_key = test_next(&rng);
    m->data_counter = 59999;
    m->dropout_key = test_next(&rng);
    snprintf(m->model, sizeof m->model, "mlp:784-\"quoted\"-10");
    snprintf(m->activation, sizeof m->activation, "gelu");
    m->dropout = 0.25f;
    m->params = NM;
    snprintf(m->optimizer, sizeof m->optimizer, "adamw");
    m->optim_steps = (uint64_t)step;
    snprintf(m->dataset, sizeof m->dataset, "fashion-mnist");
}

static void fill_blob(blob_t *b) {
    for (int i = 0; i < NM; i++) b->model[i] = (float)(test_uniform(&rng) - 0.5);
    for (int i = 0; i < NO; i++) b->optim[i] = (unsigned char)test_next(&rng);
}

static void files_of(const blob_t *b, sym_ckpt_file_t f[2]) {
    memset(f, 0, 2 * sizeof *f);
    snprintf(f[0].name, sizeof f[0].name, "model.bin");
    f[0].data = b->model;
    f[0].size = sizeof b->model;
    snprintf(f[1].name, sizeof f[1].name, "optim.bin");
    f[1].data = b->optim;
    f[1].size = sizeof b->optim;
}

static void expect_same(const sym_ckpt_t *ck, const sym_ckpt_meta_t *m, const blob_t *b) {
    const sym_ckpt_meta_t *r = &ck->meta;
    CHECK(r->step == m->step && r->epoch == m->epoch && r->sample == m->sample &&
          r->world_size == m->world_size && r->blas_threads == m->blas_threads &&
          r->global_batch == m->global_batch && r->seed == m->seed &&
          r->data_key == m->data_key && r->data_counter == m->data_counter &&
          r->dropout_key == m->dropout_key && r->dropout == m->dropout && r->params == m->params &&
          r->optim_steps == m->optim_steps && r->train_samples == m->train_samples &&
          !strcmp(r->model, m->model) && !strcmp(r->activation, m->activation) &&
          !strcmp(r->optimizer, m->optimizer) && !strcmp(r->dataset, m->dataset),
          "the metadata of step %lld did not round-trip", (long long)m->step);
    const sym_ckpt_file_t *fm = sym_ckpt_file(ck, "model.bin"), *fo = sym_ckpt_file(ck, "optim.bin");
    CHECK(fm && fo && fm->size == sizeof b->model && fo->size == sizeof b->optim, "file sizes");
    CHECK(!memcmp(fm->data, b->model, sizeof b->model) && !memcmp(fo->data, b->optim, sizeof b->optim),
          "file contents of step %lld differ", (long long)m->step);
}

static const char *path_of(int64_t step, const char *file) {
    static char p[2][512];
    static int k;
    char *out = p[k++ % 2];
    if (file)
        snprintf(out, 512, "%s/step-%08lld/%s", dir, (long long)step, file);
    else
        snprintf(out, 512, "%s/step-%08lld", dir, (long long)step);
    return out;
}

static const char *path_of_in(const char *d, int64_t step) {
    static char p[4][600];
    static int k;
    char *out = p[k++ % 4];
    snprintf(out, 600, "%s/step-%08lld", d, (long long)step);
    return out;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* What load_latest reported. */
static char reports[4096];
static int nreports;
static void collect(void *user, const char *msg) {
    (void)user;
    nreports++;
    strncat(reports, msg, sizeof reports - strlen(reports) - 2);
    strcat(reports, "\n");
}

static int64_t load_newest(sym_ckpt_t *ck) {
    reports[0] = '\0';
    nreports = 0;
    int rc = sym_ckpt_load_latest(dir, ck, collect, NULL);
    return rc ? rc : ck->meta.step;
}

static void check_write_prune_fallback(void) {
    blob_t b[5];
    sym_ckpt_meta_t m[5];
    for (int i = 0; i < 5; i++) {
        fill_blob(&b[i]);
        meta_for(10 * (i + 1), &m[i]);
        sym_ckpt_file_t f[2];
        files_of(&b[i], f);
        char path[512];
        CHECK(sym_ckpt_write(dir, 3, &m[i], f, 2, path, sizeof path) == 0, "%s", sym_last_error());
        CHECK(!strcmp(path, path_of(m[i].step, NULL)), "written to %s", path);
    }
    /* keep 3: steps 30, 40, 50 */
    CHECK(!exists(path_of(10, NULL)) && !exists(path_of(20, NULL)) && exists(path_of(30, NULL)) &&
          exists(path_of(50, NULL)), "pruning to the newest 3 went wrong");
    sym_ckpt_t ck;
    CHECK(load_newest(&ck) == 50 && nreports == 0, "newest: %s", sym_last_error());
    expect_same(&ck, &m[4], &b[4]);
    sym_ckpt_release(&ck);
    printf("  write + keep 3 + read back: exact, 64-bit fields and escaped strings included\n");

    /* a flipped byte in 50's model.bin */
    FILE *f = fopen(path_of(50, "model.bin"), "r+b");
    CHECK(f != NULL, "open");
    fseek(f, 4 * 1234 + 2, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 4 * 1234 + 2, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
    CHECK(load_newest(&ck) == 40 && nreports == 1, "after damaging step 50: got %lld, %d reports",
          (long long)ck.meta.step, nreports);
    CHECK(strstr(reports, "step-00000050") && strstr(reports, "CRC32C"), "report: %s", reports);
    expect_same(&ck, &m[3], &b[3]);
    sym_ckpt_release(&ck);
    printf("  flipped byte -> %s", reports);

    /* 40's optim.bin cut short */
    CHECK(truncate(path_of(40, "optim.bin"), 100) == 0, "truncate");
    CHECK(load_newest(&ck) == 30 && nreports == 2, "after truncating step 40: %d reports", nreports);
    CHECK(strstr(reports, "step-00000040") && strstr(reports, "100 bytes"), "report: %s", reports);
    expect_same(&ck, &m[2], &b[2]);
    sym_ckpt_release(&ck);

    /* a crash mid-write leaves a temporary directory; a directory without a
     * manifest is not taken either */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/.tmp-step-00000090.1", dir);
    CHECK(mkdir(tmp, 0755) == 0 && mkdir(path_of(60, NULL), 0755) == 0, "mkdir");
    CHECK(load_newest(&ck) == 30 && nreports == 3, "with a stray directory: %d reports", nreports);
    CHECK(strstr(reports, "step-00000060") && strstr(reports, "manifest.json"), "report: %s", reports);
    sym_ckpt_release(&ck);
    printf("  truncated file, missing manifest, temporary directory: skipped, named\n");

    /* nothing usable */
    CHECK(unlink(path_of(30, "manifest.json")) == 0, "unlink");
    CHECK(load_newest(&ck) == SYM_ECORRUPT, "no good checkpoint left, yet one was loaded");
    CHECK(strstr(sym_last_error(), "no usable checkpoint (4 damaged)"), "message: %s", sym_last_error());

    /* the next write prunes the old ones and the temporary directory */
    sym_ckpt_file_t fl[2];
    files_of(&b[0], fl);
    meta_for(70, &m[0]);
    CHECK(sym_ckpt_write(dir, 1, &m[0], fl, 2, NULL, 0) == 0, "%s", sym_last_error());
    CHECK(!exists(tmp) && !exists(path_of(60, NULL)) && !exists(path_of(30, NULL)) &&
          exists(path_of(70, NULL)), "pruning left stale directories");
    CHECK(load_newest(&ck) == 70 && nreports == 0, "after pruning: %s", sym_last_error());
    sym_ckpt_release(&ck);
}

static void check_writer(void) {
    sym_ckpt_writer_t *w;
    CHECK(sym_ckpt_writer_create(dir, 2, &w) == 0, "%s", sym_last_error());
    blob_t *b = malloc(sizeof *b), *orig = malloc(sizeof *orig);
    fill_blob(b);
    memcpy(orig, b, sizeof *b);
    sym_ckpt_meta_t m;
    meta_for(80, &m);
    sym_ckpt_file_t f[2];
    files_of(b, f);
    CHECK(sym_ckpt_save(w, &m, f, 2) == 0, "%s", sym_last_error());
    memset(b, 0xAB, sizeof *b); /* training goes on and changes the weights */
    CHECK(sym_ckpt_wait(w) == 0, "%s", sym_last_error());
    CHECK(!strcmp(sym_ckpt_last_path(w), path_of(80, NULL)), "last path %s", sym_ckpt_last_path(w));
    sym_ckpt_t ck;
    CHECK(load_newest(&ck) == 80, "%s", sym_last_error());
    expect_same(&ck, &m, orig);
    sym_ckpt_release(&ck);

    /* saving step 80 again replaces it */
    fill_blob(orig);
    memcpy(b, orig, sizeof *b);
    CHECK(sym_ckpt_save(w, &m, f, 2) == 0 && sym_ckpt_wait(w) == 0, "%s", sym_last_error());
    CHECK(load_newest(&ck) == 80, "%s", sym_last_error());
    expect_same(&ck, &m, orig);
    sym_ckpt_release(&ck);

    /* a write that fails is reported at the next call */
    char block[512];
    snprintf(block, sizeof block, "%s/.tmp-step-00000090.%ld", dir, (long)getpid());
    FILE *x = fopen(block, "w");
    CHECK(x && fclose(x) == 0, "create %s", block);
    meta_for(90, &m);
    CHECK(sym_ckpt_save(w, &m, f, 2) == 0, "%s", sym_last_error());
    int rc = sym_ckpt_wait(w);
    CHECK(rc == SYM_EIO && strstr(sym_last_error(), ".tmp-step-00000090"),
          "a failed background write was not reported: %d, %s", rc, sym_last_error());
    printf("  writer: snapshot at the call, same step replaced, failure reported: %s\n",
           sym_last_error());
    unlink(block);
    meta_for(100, &m);
    CHECK(sym_ckpt_save(w, &m, f, 2) == 0 && sym_ckpt_wait(w) == 0, "%s", sym_last_error());
    sym_ckpt_writer_destroy(w);
    CHECK(load_newest(&ck) == 100, "%s", sym_last_error());
    sym_ckpt_release(&ck);
    free(b);
    free(orig);
}

/* ---- attacks and damage on purpose ---- */

/* CRC32C bit by bit (reflected 0x82F63B78): the reference for the manifest's own checksum. */
static uint32_t crc32c_ref(const void *data, size_t n) {
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    static char buf[1 << 16];
    *len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[*len] = '\0';
    return buf;
}

static void spill(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(text, 1, len, f) == len && fclose(f) == 0, "write %s", path);
}

/* Set the first `"key": ` of a manifest to `value` (the JSON stays valid);
 * with fix_crc, recompute its checksum line the way the writer does, so that
 * only the checks of the fields against each other can tell. */
static void edit_manifest(const char *path, const char *key, const char *value, int fix_crc) {
    size_t len;
    char *text = slurp(path, &len), out[1 << 16], pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    char *at = strstr(text, pat);
    CHECK(at != NULL, "%s has no %s", path, pat);
    char *v = at + strlen(pat), *end = v + strcspn(v, ",}\n");
    int n = snprintf(out, sizeof out, "%.*s%s%s", (int)(v - text), text, value, end);
    if (fix_crc) {
        char *line = NULL;
        for (char *p = out; (p = strstr(p, "\n  \"manifest_crc32c\": \"")); p++) line = p;
        CHECK(line != NULL, "%s has no checksum line", path);
        char hex[9];
        snprintf(hex, sizeof hex, "%08x", crc32c_ref(out, (size_t)(line + 1 - out)));
        memcpy(line + strlen("\n  \"manifest_crc32c\": \""), hex, 8);
    }
    spill(path, out, (size_t)n);
}

static void write_step(const char *d, int64_t step, int keep, blob_t *b, sym_ckpt_meta_t *m) {
    fill_blob(b);
    meta_for(step, m);
    sym_ckpt_file_t f[2];
    files_of(b, f);
    CHECK(sym_ckpt_write(d, keep, m, f, 2, NULL, 0) == 0, "%s", sym_last_error());
}

static int64_t load_from(const char *d, sym_ckpt_t *ck) {
    reports[0] = '\0';
    nreports = 0;
    int rc = sym_ckpt_load_latest(d, ck, collect, NULL);
    if (!rc) sym_ckpt_release(ck);
    return rc ? rc : ck->meta.step;
}

static void check_attacks(void) {
    char d[400], p[500], q[600], victim[400];
    snprintf(d, sizeof d, "%s/attacks", dir);
    blob_t b;
    sym_ckpt_meta_t m;
    sym_ckpt_t ck;

    /* created 0600 / 0700 whatever the umask allows (it may only narrow) */
    mode_t old_mask = umask(0);
    write_step(d, 7, 3, &b, &m);
    umask(old_mask);
    struct stat st;
    snprintf(p, sizeof p, "%s/step-00000007", d);
    CHECK(stat(d, &st) == 0 && (st.st_mode & 07777) == 0700, "%s is %o", d, st.st_mode & 07777);
    CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0700, "%s is %o", p, st.st_mode & 07777);
    static const char *const names[] = {"model.bin", "optim.bin", "manifest.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(q, sizeof q, "%s/%s", p, names[i]);
        CHECK(stat(q, &st) == 0 && (st.st_mode & 07777) == 0600, "%s is %o under umask 0", q,
              st.st_mode & 07777);
    }
    printf("  under umask 0: the directories are 0700, the files 0600\n");

    write_step(d, 14, 3, &b, &m);
    write_step(d, 21, 3, &b, &m);
    snprintf(p, sizeof p, "%s/step-00000021/manifest.json", d);
    size_t len;
    char saved[1 << 16];
    const char *text = slurp(p, &len);
    memcpy(saved, text, len);
    struct {
        const char *key, *value, *says;
        int fix_crc;
    } edits[] = {
        {"sample", "192", "does not match its own checksum", 0},
        {"step", "999999", "does not match its own checksum", 0},
        {"sample", "192", "impossible position", 1},
        {"step", "999999", "impossible position", 1},
        {"epoch", "5", "impossible position", 1},
        /* the dropout stream's counter (its key becomes 0, which resume checks) */
        {"dropout\": {\"key", "0, \"counter\": 22", "dropout counter", 1},
        {"global_batch", "0", "impossible run", 1},
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        spill(p, saved, len);
        edit_manifest(p, edits[i].key, edits[i].value, edits[i].fix_crc);
        CHECK(load_from(d, &ck) == 14 && nreports == 1, "%s = %s%s: got %lld, %d reports",
              edits[i].key, edits[i].value, edits[i].fix_crc ? " (checksum fixed)" : "",
              (long long)ck.meta.step, nreports);
        CHECK(strstr(reports, "step-00000021") && strstr(reports, edits[i].says),
              "%s edited: report: %s", edits[i].key, reports);
    }
    spill(p, saved, len);
    CHECK(load_from(d, &ck) == 21 && nreports == 0, "restored: %s", sym_last_error());
    printf("  manifest fields edited: caught by its checksum, and with the checksum fixed by the "
           "fields' checks\n");

    /* A FIFO or a directory in the manifest's place: damage (no hang), the one before is used. */
    snprintf(q, sizeof q, "%s.saved", p);
    CHECK(rename(p, q) == 0 && mkfifo(p, 0600) == 0, "mkfifo %s", p);
    CHECK(load_from(d, &ck) == 14 && strstr(reports, "not a regular file"), "FIFO: %s", reports);
    CHECK(unlink(p) == 0 && mkdir(p, 0700) == 0, "mkdir %s", p);
    CHECK(load_from(d, &ck) == 14 && strstr(reports, "not a regular file"), "dir: %s", reports);
    CHECK(rmdir(p) == 0 && rename(q, p) == 0, "restore %s", p);

    /* The newest manifest unreadable (permissions): an I/O error, not damage:
     * nothing older is taken in its place. */
    uid_t uid;
    gid_t gid;
    int as_root = test_nobody(&uid, &gid);
    if (geteuid() == 0 && !as_root) {
        printf("  note: root without a 'nobody' user: the unreadable-manifest check is skipped\n");
    } else {
        CHECK(chmod(dir, 0711) == 0, "chmod %s", dir); /* nobody may pass through */
        test_give_to_nobody(d);
        CHECK(chmod(p, 0) == 0, "chmod %s", p);
        fflush(stdout);
        pid_t pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
            if (test_become_nobody() < 0) _exit(77);
            int rc = sym_ckpt_load_latest(d, &ck, collect, NULL);
            CHECK(rc == SYM_EIO, "an unreadable manifest gave %d (%s), not SYM_EIO", rc,
                  sym_last_error());
            CHECK(strstr(sym_last_error(), p) && strstr(sym_last_error(), strerror(EACCES)) &&
                  strstr(sym_last_error(), "nothing older is taken"), "message: %s",
                  sym_last_error());
            printf("  unreadable manifest -> %s\n", sym_last_error());
            fflush(stdout);
            _exit(0);
        }
        int wst;
        CHECK(waitpid(pid, &wst, 0) == pid && WIFEXITED(wst), "waitpid");
        if (WEXITSTATUS(wst) == 77)
            printf("  note: cannot become nobody here: the unreadable-manifest check is skipped\n");
        else
            CHECK(WEXITSTATUS(wst) == 0, "the unreadable-manifest check failed");
        CHECK(chmod(p, 0600) == 0 && chmod(dir, 0700) == 0, "chmod back");
    }

    /* Pruning never follows a link nor removes what no manifest lists, and
     * never removes a later step than the one written. */
    snprintf(victim, sizeof victim, "%s/victim", dir);
    CHECK(mkdir(victim, 0700) == 0, "mkdir %s", victim);
    for (int i = 0; i < 3; i++) { /* a copy of step 14: its manifest lists its files */
        snprintf(p, sizeof p, "%s/step-00000014/%s", d, names[i]);
        snprintf(q, sizeof q, "%s/%s", victim, names[i]);
        char *t = slurp(p, &len);
        spill(q, t, len);
    }
    snprintf(q, sizeof q, "%s/precious.txt", victim);
    spill(q, "keep me\n", 8);
    snprintf(p, sizeof p, "%s/step-00000001", d);
    CHECK(symlink(victim, p) == 0, "symlink %s", p);
    snprintf(p, sizeof p, "%s/step-00000014/notes.txt", d);
    spill(p, "mine\n", 5);
    /* a later step than the next write's: step 21's files under the name step-990 */
    CHECK(mkdir(path_of_in(d, 990), 0700) == 0, "mkdir");
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/step-00000021/%s", d, names[i]);
        snprintf(q, sizeof q, "%s/%s", path_of_in(d, 990), names[i]);
        char *t = slurp(p, &len);
        spill(q, t, len);
    }
    write_step(d, 28, 1, &b, &m);
    for (int i = 0; i < 3; i++) {
        snprintf(q, sizeof q, "%s/%s", victim, names[i]);
        CHECK(stat(q, &st) == 0, "pruning removed %s through a symbolic link", q);
    }
    snprintf(q, sizeof q, "%s/precious.txt", victim);
    CHECK(stat(q, &st) == 0, "pruning removed %s through a symbolic link", q);
    snprintf(p, sizeof p, "%s/step-00000001", d);
    CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "the link itself was removed");
    snprintf(p, sizeof p, "%s/step-00000014", d);
    CHECK(stat(p, &st) == 0, "a checkpoint holding a file of someone else's was removed whole");
    snprintf(q, sizeof q, "%s/notes.txt", p);
    CHECK(stat(q, &st) == 0, "%s, listed by no manifest, was removed", q);
    snprintf(q, sizeof q, "%s/model.bin", p);
    CHECK(stat(q, &st) != 0, "%s, listed by the manifest, was left", q);
    CHECK(stat(path_of_in(d, 7), &st) != 0 && stat(path_of_in(d, 21), &st) != 0,
          "older checkpoints were not pruned");
    CHECK(stat(path_of_in(d, 990), &st) == 0, "a later checkpoint than the one written was pruned");
    printf("  pruning: a symbolic link left alone (its target untouched), a file no manifest lists "
           "kept, a later step kept\n");

    /* Reading passes over a link, and over a checkpoint under another step's name. */
    snprintf(p, sizeof p, "%s/step-00000995", d);
    CHECK(symlink(victim, p) == 0, "symlink %s", p);
    CHECK(load_from(d, &ck) == 28 && nreports == 2, "got %lld, %d reports: %s",
          (long long)ck.meta.step, nreports, reports);
    CHECK(strstr(reports, "step-00000995 is damaged") && strstr(reports, "symbolic link") &&
          strstr(reports, "step-00000990 is damaged") && strstr(reports, "holds step 21"),
          "reports: %s", reports);
    printf("  reading: a linked step-* and a renamed one are named and passed over\n");
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_ckpt: seed %llu\n", (unsigned long long)seed);
    rng = test_rng(seed, 4);
    test_mkdtemp(dir, sizeof dir, "train_ckpt");
    check_write_prune_fallback();
    check_writer();
    check_attacks();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    printf("train_ckpt: ok\n");
    return 0;
}
