/*
 * train_ckpt_borrow — the writer thread writing the caller's own buffers
 * (sym__ckpt_save_borrowed, ckpt/async.h: the snapshot buffers of loop.c,
 * pinned memory on the GPU): nothing is copied at the call, ready() runs on
 * the writer thread before the first byte is read (what it puts into the
 * buffers, as a GPU copy completing there does, is what the checkpoint
 * holds), and a ready() that fails is the save's failure, reported once by
 * sym_ckpt_wait, with nothing committed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <symtrain/symtrain.h>

#include "ckpt/async.h"
#include "internal.h"
#include "test.h"

enum { N = 4099 };

static char dir[256];
static test_rng_t rng;
static float buf[N], truth[N];
static pthread_t caller;
static int ready_calls, ready_off_thread;

static void meta_for(int64_t step, sym_ckpt_meta_t *m) {
    memset(m, 0, sizeof *m);
    m->step = step;
    m->sample = step; /* epochs of 1000 steps of 1 sample */
    m->global_batch = 1;
    m->train_samples = 1000;
    m->world_size = 1;
    m->blas_threads = 1;
    m->seed = 7;
    m->params = N;
    m->optim_steps = (uint64_t)step;
    snprintf(m->model, sizeof m->model, "unit");
    snprintf(m->activation, sizeof m->activation, "none");
    snprintf(m->optimizer, sizeof m->optimizer, "sgd");
    snprintf(m->dataset, sizeof m->dataset, "none");
}

/* As a GPU's copy completing: the buffer gets its contents only now. */
static int fill_late(void *user) {
    (void)user;
    ready_calls++;
    ready_off_thread = !pthread_equal(pthread_self(), caller);
    memcpy(buf, truth, sizeof buf);
    return SYM_OK;
}

static int refuse(void *user) {
    (void)user;
    return sym__error(SYM_EIO, "the copy failed (a test's refusal)");
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_ckpt_borrow: seed %llu\n", (unsigned long long)seed);
    rng = test_rng(seed, 1);
    test_mkdtemp(dir, sizeof dir, "train_ckpt_borrow");
    caller = pthread_self();
    sym_ckpt_writer_t *w;
    CHECK(sym_ckpt_writer_create(dir, 10, &w) == 0, "writer: %s", sym_last_error());
    for (int i = 0; i < N; i++) truth[i] = (float)(test_uniform(&rng) - 0.5);
    memset(buf, 0xAB, sizeof buf); /* poison: what a copy at the call would write */
    sym_ckpt_meta_t m;
    meta_for(5, &m);
    sym_ckpt_file_t f[1] = {{"model.bin", buf, sizeof buf, 0}};
    CHECK(sym__ckpt_save_borrowed(w, &m, f, 1, fill_late, NULL) == 0, "save: %s", sym_last_error());
    CHECK(sym_ckpt_wait(w) == 0, "the borrowed write failed: %s", sym_last_error());
    CHECK(ready_calls == 1 && ready_off_thread, "ready ran %d times, on the %s thread", ready_calls,
          ready_off_thread ? "writer's" : "caller's");
    char path[512];
    snprintf(path, sizeof path, "%s/step-00000005", dir);
    sym_ckpt_t ck;
    CHECK(sym_ckpt_load(path, &ck) == 0, "load: %s", sym_last_error());
    const sym_ckpt_file_t *got = sym_ckpt_file(&ck, "model.bin");
    CHECK(got && got->size == sizeof truth, "model.bin missing or of another size");
    for (int i = 0; i < N; i++)
        CHECK(((const float *)got->data)[i] == truth[i], "element %d: %g written, %g in the buffer "
              "when ready returned", i, ((const float *)got->data)[i], truth[i]);
    sym_ckpt_release(&ck);

    meta_for(6, &m);
    CHECK(sym__ckpt_save_borrowed(w, &m, f, 1, refuse, NULL) == 0, "save: %s", sym_last_error());
    CHECK(sym_ckpt_wait(w) == SYM_EIO, "a failed ready was not the save's failure");
    CHECK(strstr(sym_last_error(), "a test's refusal") != NULL, "the failure says: %s",
          sym_last_error());
    CHECK(sym_ckpt_wait(w) == 0, "the failure was reported twice");
    struct stat st;
    snprintf(path, sizeof path, "%s/step-00000006", dir);
    CHECK(stat(path, &st) != 0, "%s was committed after its ready failed", path);
    CHECK(sym_ckpt_newest_step(dir) == 5, "the newest checkpoint is step %lld",
          (long long)sym_ckpt_newest_step(dir));
    sym_ckpt_writer_destroy(w);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    printf("train_ckpt_borrow: the caller's buffer written as ready left it, on the writer "
           "thread; a failed ready failed the save, once, nothing committed: ok\n");
    return 0;
}
