/*
 * train_pipe_device — the pipeline's device path (sym_pipe_use_device) with
 * interleaved virtual stages, on the CPU: a stand-in device whose forward and
 * backward run a CPU stage model of the same chunks (sym_model_create_stage
 * with activations), and whose "device inboxes" are a symmetric array of
 * V x S' slots a direction that put writes with shmem_putmem. It checks what
 * a GPU stage relies on and a GPU test cannot isolate: the chunk each call
 * names (the one its forward ran, for the backward), the box index k S' +
 * n % S' of message n into local chunk k (the sender's put and the
 * receiver's read agree, around the ring rank S-1 -> 0 too), which calls get
 * tokens, labels, a host input or output, and the first backward of a step.
 *
 * On gpt:L=8,C=32,H=4,V=64,T=16, 8 sequences in 4 micro-batches, for each
 * layout (2 PEs: pp=2 at V=1, 2, 4; 4 PEs: pp=4 at V=2, dp=2 x pp=2 at V=2),
 * both ways (device to device, and SYMTRAIN_PIPE_VIA_HOST=1), two steps of
 * the same weights: every loss and every gradient but the tied wte's (which
 * the CPU pipeline sums over the first and last stage inside its step, a
 * device in its update) equal bit for bit to the CPU pipeline's (the same
 * kernels on the same inputs in the same order), and with dp each replica's
 * before its average alike (the CPU pipeline averages, so dp compares the
 * losses only).
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"
#include "train_test.h"

enum { GB = 8, T = 16, NV = 64, M = 4, STEPS = 2, MAXSLOTS = 64 };
static const char spec[] = "gpt:L=8,C=32,H=4,V=64,T=16";
static float loss_sym[1];

static int32_t tokens[STEPS][GB][T + 1];

static void batch(int s, int row0, int rows, int32_t *in, int32_t *lab) {
    for (int r = 0; r < rows; r++)
        for (int t = 0; t < T; t++) {
            in[r * T + t] = tokens[s][row0 + r][t];
            lab[r * T + t] = tokens[s][row0 + r][t + 1];
        }
}

/* The stand-in device: a CPU stage of this PE's chunks. */
typedef struct {
    sym_model_t *m;
    int S, s, V, slots; /* stages, this one, chunks a stage, S' */
    int prev, next;     /* world PEs */
    size_t elems;       /* a slot's floats */
    float *box;         /* symmetric (2, V S', elems): forward inboxes, then backward */
    int chunk_of[MAXSLOTS], rows_of[MAXSLOTS];
    sym_tensor_t dlogits[MAXSLOTS];
    const float *out[MAXSLOTS]; /* a forward's output awaiting put */
    const float *dx;            /* the last backward's input gradient */
    int calls_first;            /* backwards told first */
} fake_t;

static float *box_at(fake_t *d, int fwd, int box) {
    CHECK(box >= 0 && box < d->V * d->slots, "box %d of %d", box, d->V * d->slots);
    return d->box + ((size_t)(fwd ? 0 : 1) * (size_t)(d->V * d->slots) + (size_t)box) * d->elems;
}

static int fake_forward(void *ctx, int slot, int chunk, int rows, const sym_forward_t *f,
                        const int32_t *tok, const int32_t *lab, const float *x, int box,
                        float scale, float *y, double *loss, int64_t *correct) {
    fake_t *d = ctx;
    int first = d->s == 0 && chunk == 0, last = d->s == d->S - 1 && chunk == d->V - 1;
    CHECK(slot >= 0 && slot < MAXSLOTS && chunk >= 0 && chunk < d->V, "slot %d chunk %d", slot,
          chunk);
    CHECK(!tok == !first && !lab == !last, "stage %d chunk %d: tokens %d labels %d", d->s, chunk,
          tok != NULL, lab != NULL);
    CHECK(first || (x != NULL) != (box >= 0), "stage %d chunk %d: input x %d box %d", d->s, chunk,
          x != NULL, box);
    CHECK(box < 0 || box / d->slots == chunk, "stage %d chunk %d reads box %d (chunk %d's)", d->s,
          chunk, box, box / d->slots);
    sym_model_use_chunk(d->m, chunk);
    sym_model_use_slot(d->m, slot);
    const float *in = first ? NULL : x ? x : box_at(d, 1, box);
    sym_input_t xi = {rows, T, in, tok};
    sym_tensor_t out;
    CHECK(sym_model_forward(d->m, &xi, f, &out) == 0, "forward: %s", sym_last_error());
    d->chunk_of[slot] = chunk;
    d->rows_of[slot] = rows;
    *loss = 0;
    if (last) {
        *loss = sym_model_xent(d->m, &out, lab, scale, f->training ? &out : NULL, correct);
        d->dlogits[slot] = out;
    } else if (y) {
        memcpy(y, sym_tensor_f32(&out), (size_t)rows * T * sizeof(float) * 32);
    } else {
        d->out[slot] = sym_tensor_f32(&out);
    }
    return 0;
}

static int fake_backward(void *ctx, int slot, int chunk, const float *dy, int box, float *dx,
                         int first) {
    fake_t *d = ctx;
    int embed = d->s == 0 && chunk == 0, head = d->s == d->S - 1 && chunk == d->V - 1;
    CHECK(d->chunk_of[slot] == chunk, "stage %d: backward of slot %d through chunk %d, its "
          "forward ran %d", d->s, slot, chunk, d->chunk_of[slot]);
    CHECK(head == (!dy && box < 0), "stage %d chunk %d: gradient dy %d box %d", d->s, chunk,
          dy != NULL, box);
    CHECK(box < 0 || box / d->slots == chunk, "stage %d chunk %d reads box %d", d->s, chunk, box);
    if (first) {
        sym_model_zero_grads(d->m);
        d->calls_first++;
    }
    sym_model_use_chunk(d->m, chunk);
    sym_model_use_slot(d->m, slot);
    size_t n = (size_t)d->rows_of[slot] * T;
    const float *g = dy ? dy : box >= 0 ? box_at(d, 0, box) : NULL;
    sym_tensor_t t = g ? sym_tensor_2d((float *)g, (int64_t)n, 32) : d->dlogits[slot];
    CHECK(sym_model_backward(d->m, &t, NULL, NULL) == 0, "backward: %s", sym_last_error());
    d->dx = embed ? NULL : sym_model_input_grad(d->m);
    if (dx) memcpy(dx, d->dx, n * 32 * sizeof(float));
    return 0;
}

static int fake_put(void *ctx, int slot, int fwd, int box) {
    fake_t *d = ctx;
    const float *src = fwd ? d->out[slot] : d->dx;
    CHECK(src != NULL, "put of slot %d (fwd %d) with nothing to send", slot, fwd);
    /* the receiver's chunk: the same k, or across the ring's seam the next / previous */
    int k = d->chunk_of[slot], to = fwd ? (d->s == d->S - 1 ? k + 1 : k) : (d->s == 0 ? k - 1 : k);
    CHECK(box / d->slots == to, "stage %d chunk %d puts into box %d, not chunk %d's", d->s, k, box,
          to);
    size_t n = (size_t)d->rows_of[slot] * T * 32;
    shmem_putmem(box_at(d, fwd, box), src, n * sizeof(float), fwd ? d->next : d->prev);
    shmem_quiet();
    return 0;
}

static int fake_handle(void *ctx, void *h) {
    (void)ctx;
    memset(h, 0, SYM_PIPE_HANDLE_BYTES);
    return 0;
}
static int fake_open(void *ctx, int next, const void *h) {
    (void)ctx;
    (void)next;
    (void)h;
    return 0;
}

/* One step of a pipeline: the loss summed over the job. */
static double step(sym_pipe_t *p, int st, int dp, int dr) {
    int rows = GB / dp;
    int32_t in[GB * T], lab[GB * T];
    batch(st, dr * rows, rows, in, lab);
    double lsum;
    CHECK(sym_pipe_step(p, in, lab, rows, (uint64_t)st, dr * rows, (float)dp / (GB * T), &lsum) ==
              0,
          "step %d: %s", st, sym_last_error());
    loss_sym[0] = (float)lsum;
    CHECK(sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, loss_sym, 1) == 0, "%s", sym_last_error());
    return loss_sym[0];
}

static void run(const char *layout, int V, int via_host, const sym_model_config_t *cfg) {
    int me = shmem_my_pe();
    sym_mesh_t *mesh;
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, layout, &mesh) == 0, "%s", sym_last_error());
    int ppd = sym_mesh_dim(mesh, "pp"), dpd = sym_mesh_dim(mesh, "dp");
    int dp = dpd >= 0 ? sym_mesh_size(mesh, dpd) : 1, dr = dpd >= 0 ? sym_mesh_coord(mesh, dpd) : 0;
    int S = sym_mesh_size(mesh, ppd), s = sym_mesh_coord(mesh, ppd);
    int R = GB / dp / M;
    /* the CPU pipeline: the reference */
    sym_pipe_config_t pc = {M, R, T, 0, 1.0, 0, 0, V};
    sym_pipe_t *cpu, *dev;
    CHECK(sym_pipe_create(cfg, mesh, &pc, &cpu) == 0, "%s: %s", layout, sym_last_error());
    double want[STEPS];
    for (int st = 0; st < STEPS; st++) want[st] = step(cpu, st, dp, dr);
    sym_model_t *cm = sym_pipe_model(cpu);
    size_t np = sym_model_num_params(cm);
    /* the device pipeline, and the device: a CPU stage of the same chunks */
    pc.params_only = 1;
    CHECK(sym_pipe_create(cfg, mesh, &pc, &dev) == 0, "%s: %s", layout, sym_last_error());
    fake_t d;
    memset(&d, 0, sizeof d);
    d.S = S;
    d.s = s;
    d.V = V;
    sym_pipe_inbox(dev, &d.slots, &d.elems);
    d.prev = shmem_team_translate_pe(sym_mesh_team(mesh, ppd), (s + S - 1) % S, SHMEM_TEAM_WORLD);
    d.next = shmem_team_translate_pe(sym_mesh_team(mesh, ppd), (s + 1) % S, SHMEM_TEAM_WORLD);
    d.box = shmem_malloc(2 * (size_t)V * (size_t)d.slots * d.elems * sizeof(float));
    CHECK(d.box != NULL, "no symmetric room for the stand-in's inboxes");
    CHECK(sym_pipe_slots(dev) <= MAXSLOTS, "%d activation sets", sym_pipe_slots(dev));
    sym_gpt_stage_t stg;
    memset(&stg, 0, sizeof stg);
    stg.chunks = V;
    for (int k = 0; k < V; k++)
        sym_pipe_layers(dev, k * S + s, &stg.first_layer[k], &stg.layers[k]);
    stg.embed = s == 0;
    stg.head = s == S - 1;
    stg.slots = sym_pipe_slots(dev);
    CHECK(sym_model_create_stage(cfg, R, 0, SHMEM_TEAM_INVALID, &stg, &d.m) == 0, "%s",
          sym_last_error());
    CHECK(sym_model_num_params(d.m) == np, "the stand-in holds %zu parameters, the stage %zu",
          sym_model_num_params(d.m), np);
    CHECK(memcmp(sym_model_params(d.m), sym_model_params(cm), np * sizeof(float)) == 0,
          "the stand-in's weights are not the stage's");
    if (via_host) setenv("SYMTRAIN_PIPE_VIA_HOST", "1", 1);
    sym_pipe_device_t dv = {&d, fake_forward, fake_backward, fake_put, fake_handle, fake_open};
    CHECK(sym_pipe_use_device(dev, &dv) == 0, "%s", sym_last_error());
    unsetenv("SYMTRAIN_PIPE_VIA_HOST");
    CHECK(sym_pipe_direct(dev) == !via_host, "%s V=%d: direct %d", layout, V, sym_pipe_direct(dev));
    for (int st = 0; st < STEPS; st++) {
        double got = step(dev, st, dp, dr);
        CHECK(got == want[st], "%s V=%d %s step %d: loss %.9g, the CPU pipeline's %.9g", layout, V,
              via_host ? "via the host" : "direct", st, got, want[st]);
    }
    CHECK(d.calls_first == STEPS, "%d backwards told first in %d steps", d.calls_first, STEPS);
    /* the last step's gradients: all but wte's (summed inside the CPU's step), without dp */
    int nt = sym_model_num_tensors(cm);
    for (int i = 0; dp == 1 && i < nt; i++) {
        const sym_param_t *a = sym_model_param(cm, i);
        if (!strcmp(a->name, "wte")) continue;
        const float *g = sym_model_grads(cm) + a->offset, *h = sym_model_grads(d.m) + a->offset;
        for (size_t k = 0; k < a->numel; k++)
            CHECK(g[k] == h[k], "%s V=%d stage %d: d %s[%zu] = %.9g on the device path, %.9g on "
                  "the CPU's", layout, V, s, a->name, k, h[k], g[k]);
    }
    if (me == 0)
        printf("train_pipe_device: %-10s V=%d %-14s losses %.6f %.6f, identical to the CPU "
               "pipeline's%s\n", layout, V, via_host ? "via the host" : "device to device",
               want[0] / (GB * T), want[1] / (GB * T), dp == 1 ? ", and the gradients" : "");
    shmem_barrier_all();
    sym_model_destroy(d.m);
    shmem_free(d.box);
    sym_pipe_destroy(dev);
    sym_pipe_destroy(cpu);
    sym_mesh_destroy(mesh);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    uint64_t seed = test_pe_start("train_pipe_device");
    if (n != 2 && n != 4) {
        if (me == 0) printf("train_pipe_device: SKIP: the layouts are for 2 or 4 PEs, not %d\n", n);
        shmem_finalize();
        return 77;
    }
    sym_blas_set_threads(1);
    sym_model_config_t cfg = test_gpt_config(spec, seed);
    CHECK(cfg.n_embd == 32, "the stand-in assumes C = 32");
    test_gpt_tokens(&tokens[0][0][0], STEPS, GB, T, NV, seed);
    for (int via = 0; via <= 1; via++) {
        if (n == 2) {
            run("pp=2", 1, via, &cfg);
            run("pp=2", 2, via, &cfg);
            run("pp=2", 4, via, &cfg);
        } else {
            run("pp=4", 2, via, &cfg);
            run("dp=2,pp=2", 2, via, &cfg);
        }
    }
    if (me == 0) printf("train_pipe_device: ok\n");
    shmem_finalize();
    return 0;
}
