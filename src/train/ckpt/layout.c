/*
 * layout.c — which slices of which global tensors a PE writes and reads, in
 * any layout (see ckpt/layout.h), and moving them between PEs and whole
 * arrays for the single-writer format.
 *
 * A run of a PE's flat array (a whole local tensor, or a ZeRO block of its
 * optimizer state) becomes slices in two steps: its elements, row-major in
 * the local tensor, are cut into boxes that are each contiguous in memory
 * (range_boxes: a partial first row, whole rows, a partial last row, and so
 * on down the dimensions); each box is then intersected with the tensor's
 * tensor-parallel pieces and moved to where that piece lies in the whole
 * tensor. Replicated parts are split by rows between the PEs that hold them
 * (ZeRO's blocks are this PE's alone; of a tensor whole on every PE of a tp
 * group, tp rank 0 writes its blocks), so each element is written once.
 */
#define _GNU_SOURCE
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/layout.h"
#include "internal.h"

typedef struct {
    int64_t start[SYM_MAX_DIMS], count[SYM_MAX_DIMS];
} box_t;

#define MAX_BOXES 16 /* 2 * SYM_MAX_DIMS - 1 for a range, at most */

/* ---- ranges and boxes ---- */

/* Elements [lo, hi) (row-major) of a tensor of `shape` as boxes each
 * contiguous in memory; returns how many (at most 2 * ndim - 1). */
static int range_boxes(int ndim, const int64_t *shape, int64_t lo, int64_t hi, box_t *b) {
    if (lo >= hi) return 0;
    if (ndim == 1) {
        b[0].start[0] = lo;
        b[0].count[0] = hi - lo;
        return 1;
    }
    int64_t inner = 1;
    for (int d = 1; d < ndim; d++) inner *= shape[d];
    int n = 0;
    box_t sub[MAX_BOXES];
    for (int64_t a = lo; a < hi;) {
        int64_t row = a / inner, end = (row + 1) * inner;
        if (a % inner || hi < end) { /* part of one row: the dimensions below */
            int64_t e = hi < end ? hi : end;
            int k = range_boxes(ndim - 1, shape + 1, a - row * inner, e - row * inner, sub);
            for (int j = 0; j < k; j++, n++) {
                b[n].start[0] = row;
                b[n].count[0] = 1;
                memcpy(b[n].start + 1, sub[j].start, (size_t)(ndim - 1) * sizeof(int64_t));
                memcpy(b[n].count + 1, sub[j].count, (size_t)(ndim - 1) * sizeof(int64_t));
            }
            a = e;
        } else { /* whole rows */
            int64_t rows = hi / inner - row;
            b[n].start[0] = row;
            b[n].count[0] = rows;
            for (int d = 1; d < ndim; d++) {
                b[n].start[d] = 0;
                b[n].count[d] = shape[d];
            }
            n++;
            a += rows * inner;
        }
    }
    return n;
}

/* Row-major index of `at` in a tensor of `shape`. */
static int64_t flat_index(int ndim, const int64_t *shape, const int64_t *at) {
    int64_t i = 0;
    for (int d = 0; d < ndim; d++) i = i * shape[d] + at[d];
    return i;
}

/* ---- the table ---- */

static sym_ckpt_slice_t *push(sym__ckpt_slices_t *l, int kind, size_t woff) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        sym_ckpt_slice_t *s = realloc(l->s, (size_t)cap * sizeof *s);
        if (s) l->s = s;
        int *k = s ? realloc(l->kind, (size_t)cap * sizeof *k) : NULL;
        if (k) l->kind = k;
        size_t *w = k ? realloc(l->woff, (size_t)cap * sizeof *w) : NULL;
        if (!w) return NULL;
        l->woff = w;
        l->cap = cap;
    }
    l->kind[l->n] = kind;
    l->woff[l->n] = woff;
    sym_ckpt_slice_t *e = &l->s[l->n++];
    memset(e, 0, sizeof *e);
    return e;
}

static void tensor_name(const sym__ckpt_layout_t *L, int kind, const char *param, char *out,
                        size_t len) {
    if (kind == 0)
        snprintf(out, len, "%s", param);
    else
        snprintf(out, len, "%s.%s", L->state_name[kind - 1], param);
}

/* Elements [lo, hi) of local tensor i (kind `kind`), whose element lo lies
 * at mem: its slices of the whole tensor. */
static int add_run(const sym__ckpt_layout_t *L, sym__ckpt_slices_t *l, int kind, int i,
                   int64_t lo, int64_t hi, float *mem) {
    const sym_param_t *p = sym_model_param(L->model, i), *w = sym_model_full_param(L->model, i);
    sym_param_piece_t pc[SYM_PARAM_MAX_PIECES];
    int np = sym_model_param_pieces(L->model, i, pc);
    box_t b[MAX_BOXES];
    int nb = range_boxes(p->ndim, p->shape, lo, hi, b);
    for (int j = 0; j < nb; j++)
        for (int k = 0; k < np; k++) {
            int64_t s0[SYM_MAX_DIMS] = {0}, n[SYM_MAX_DIMS] = {0};
            int empty = 0;
            for (int d = 0; d < p->ndim; d++) {
                int64_t a = b[j].start[d] > pc[k].part[d] ? b[j].start[d] : pc[k].part[d];
                int64_t e1 = b[j].start[d] + b[j].count[d], e2 = pc[k].part[d] + pc[k].count[d];
                int64_t e = e1 < e2 ? e1 : e2;
                empty |= e <= a;
                s0[d] = a;
                n[d] = e - a;
            }
            if (empty) continue;
            sym_ckpt_slice_t *s = push(l, kind, w->offset);
            if (!s) return sym__error(SYM_ENOMEM, "out of memory for a checkpoint's slices");
            tensor_name(L, kind, p->name, s->name, sizeof s->name);
            s->dtype = SYM_DT_F32;
            s->ndim = p->ndim;
            for (int d = 0; d < p->ndim; d++) {
                s->shape[d] = w->shape[d];
                s->start[d] = pc[k].whole[d] + s0[d] - pc[k].part[d];
                s->count[d] = n[d];
            }
            s->data = mem + (flat_index(p->ndim, p->shape, s0) - lo);
        }
    return SYM_OK;
}

/* Local tensor i is whole on every PE of the tp group (and there is one). */
static int tp_whole(const sym__ckpt_layout_t *L, const sym_param_t *p) {
    return sym_model_tp_size(L->model) > 1 && p->tp_dim < 0;
}

/* [*lo, *hi) of n elements (rows of `inner`): part `part` of `parts`. */
static void split(int64_t n, int64_t inner, int parts, int part, int64_t *lo, int64_t *hi) {
    size_t o, len;
    shmemx_block_range((size_t)(n / inner), parts, part, &o, &len);
    *lo = (int64_t)o * inner;
    *hi = (int64_t)(o + len) * inner;
}

int sym__ckpt_layout_slices(const sym__ckpt_layout_t *L, int save, sym__ckpt_slices_t *out) {
    memset(out, 0, sizeof *out);
    sym_model_t *m = L->model;
    int nt = sym_model_num_tensors(m), tp = sym_model_tp_size(m), rc = SYM_OK;
    for (int kind = 0; kind <= L->nstate && !rc; kind++) {
        float *base = kind == 0 ? (L->params ? L->params : sym_model_params(m))
                                : L->state[kind - 1];
        for (int i = 0; i < nt && !rc && base; i++) { /* whole local arrays */
            const sym_param_t *p = sym_model_param(m, i);
            int64_t lo = 0, hi = (int64_t)p->numel;
            if (save && L->skip_tied && !strcmp(p->name, "wte")) continue;
            if (save) { /* the PEs holding the same part split it by rows */
                int whole = tp_whole(L, p);
                split(hi, hi / p->shape[0], L->dp * (whole ? tp : 1),
                      whole ? L->dp_rank * tp + L->tp_rank : L->dp_rank, &lo, &hi);
            }
            rc = add_run(L, out, kind, i, lo, hi, base + p->offset + lo);
        }
        if (base || !L->zero) continue;
        float *shard = sym_zero_state_shard(L->zero, kind - 1);
        for (int b = 0; b < sym_zero_num_blocks(L->zero) && !rc; b++) { /* ZeRO's blocks */
            size_t blo, soff, len = sym_zero_block(L->zero, b, &blo, &soff);
            for (int i = 0; i < nt && !rc; i++) {
                const sym_param_t *p = sym_model_param(m, i);
                size_t a = blo > p->offset ? blo : p->offset;
                size_t e = blo + len < p->offset + p->numel ? blo + len : p->offset + p->numel;
                /* a tensor whole on the tp group: tp rank 0's blocks (the tp ranks'
                 * ZeRO partitions differ where their parts of wte do) */
                if (a >= e || (save && L->skip_tied && !strcmp(p->name, "wte")) ||
                    (save && tp_whole(L, p) && L->tp_rank))
                    continue;
                rc = add_run(L, out, kind, i, (int64_t)(a - p->offset), (int64_t)(e - p->offset),
                             shard + soff + (a - blo));
            }
        }
    }
    /* with tp nobody holds wte's padding rows [V, Vp): zeros, by PE 0 */
    const sym_model_config_t *c = sym_model_config(m);
    const sym_param_t *wte = sym_model_find_param(m, "wte");
    if (!rc && save && L->pad_owner && tp > 1 && wte && c->padded_vocab > c->vocab) {
        int64_t C = wte->shape[1], pad = (int64_t)(c->padded_vocab - c->vocab);
        size_t whole_off = sym_model_full_param(m, (int)(wte - sym_model_param(m, 0)))->offset;
        if (!(out->zeros = calloc((size_t)(pad * C), sizeof(float))))
            rc = sym__error(SYM_ENOMEM, "out of memory for a checkpoint's slices");
        for (int kind = 0; kind <= L->nstate && !rc; kind++) {
            sym_ckpt_slice_t *s = push(out, kind, whole_off);
            if (!s) {
                rc = sym__error(SYM_ENOMEM, "out of memory for a checkpoint's slices");
                break;
            }
            tensor_name(L, kind, "wte", s->name, sizeof s->name);
            s->dtype = SYM_DT_F32;
            s->ndim = 2;
            s->shape[0] = c->padded_vocab;
            s->shape[1] = C;
            s->start[0] = c->vocab;
            s->count[0] = pad;
            s->count[1] = C;
            s->data = out->zeros;
        }
    }
    if (rc) sym__ckpt_slices_free(out);
    return rc;
}

void sym__ckpt_slices_keep_params(sym__ckpt_slices_t *s) {
    int k = 0;
    for (int i = 0; i < s->n; i++)
        if (s->kind[i] == 0) {
            s->s[k] = s->s[i];
            s->woff[k] = s->woff[i];
            s->kind[k++] = 0;
        }
    s->n = k;
}

void sym__ckpt_slices_free(sym__ckpt_slices_t *s) {
    free(s->s);
    free(s->kind);
    free(s->woff);
    free(s->zeros);
    memset(s, 0, sizeof *s);
}

/* ---- whole arrays ---- */

/* Between slice s and its whole tensor at `whole` (row-major, s->shape), one
 * run of the last dimension at a time. */
static void box_copy(const sym_ckpt_slice_t *s, float *whole, int to_whole) {
    int nd = s->ndim;
    int64_t total = sym_ckpt_slice_elems(s), run = s->count[nd - 1];
    if (!total) return;
    int64_t at[SYM_MAX_DIMS];
    memcpy(at, s->start, sizeof at);
    float *data = s->data;
    for (int64_t done = 0; done < total; done += run) {
        float *w = whole + flat_index(nd, s->shape, at);
        if (to_whole)
            memcpy(w, data + done, (size_t)run * sizeof *w);
        else
            memcpy(data + done, w, (size_t)run * sizeof *w);
        for (int d = nd - 2; d >= 0; d--) { /* the next run: odometer over the box */
            if (++at[d] < s->start[d] + s->count[d]) break;
            at[d] = s->start[d];
        }
    }
}

void sym__ckpt_slices_copy(const sym__ckpt_slices_t *s, float *const *whole, int to_whole) {
    for (int i = 0; i < s->n; i++) box_copy(&s->s[i], whole[s->kind[i]] + s->woff[i], to_whole);
}

/* A packed slice: kind, whole offset, ndim, shape, start, count; then its floats. */
#define HDR_WORDS (3 + 3 * SYM_MAX_DIMS)
#define WINDOW ((size_t)4 << 20) /* bytes of the symmetric window a gather goes through */

/* The slices packed (a count, then each slice's header and floats), malloc'd. */
static char *pack(const sym__ckpt_slices_t *s, size_t *len) {
    size_t bytes = sizeof(int64_t);
    for (int i = 0; i < s->n; i++)
        bytes += HDR_WORDS * sizeof(int64_t) + (size_t)sym_ckpt_slice_elems(&s->s[i]) * sizeof(float);
    char *buf = malloc(bytes);
    if (!buf) return NULL;
    int64_t *h = (int64_t *)buf;
    *h++ = s->n;
    for (int i = 0; i < s->n; i++) {
        const sym_ckpt_slice_t *e = &s->s[i];
        h[0] = s->kind[i];
        h[1] = (int64_t)s->woff[i];
        h[2] = e->ndim;
        memcpy(h + 3, e->shape, sizeof e->shape);
        memcpy(h + 3 + SYM_MAX_DIMS, e->start, sizeof e->start);
        memcpy(h + 3 + 2 * SYM_MAX_DIMS, e->count, sizeof e->count);
        size_t n = (size_t)sym_ckpt_slice_elems(e);
        memcpy(h + HDR_WORDS, e->data, n * sizeof(float));
        h = (int64_t *)((char *)(h + HDR_WORDS) + n * sizeof(float));
    }
    *len = bytes;
    return buf;
}

/* Each packed slice into the whole arrays. */
static void unpack(const char *buf, float *const *whole) {
    const int64_t *r = (const int64_t *)buf;
    int64_t n = *r++;
    for (int64_t i = 0; i < n; i++) {
        sym_ckpt_slice_t e;
        memset(&e, 0, sizeof e);
        e.ndim = (int)r[2];
        memcpy(e.shape, r + 3, sizeof e.shape);
        memcpy(e.start, r + 3 + SYM_MAX_DIMS, sizeof e.start);
        memcpy(e.count, r + 3 + 2 * SYM_MAX_DIMS, sizeof e.count);
        e.data = (void *)(r + HDR_WORDS);
        box_copy(&e, whole[r[0]] + r[1], 1);
        r = (const int64_t *)((const char *)(r + HDR_WORDS) +
                              (size_t)sym_ckpt_slice_elems(&e) * sizeof(float));
    }
}

/* Every PE packs its slices; the sizes are all-gathered; then PE by PE, a
 * window's worth at a time, the PE copies into the symmetric window and PE 0
 * reads it (a barrier before and after each read), so the symmetric memory
 * taken is one window whatever the model's size. */
int sym__ckpt_slices_gather(const sym__ckpt_slices_t *s, float *const *whole) {
    int me = shmem_my_pe(), npes = shmem_n_pes(), rc = SYM_OK;
    size_t len = 0, most = 0;
    char *mine = pack(s, &len), *tmp = NULL;
    double *size = shmem_malloc((size_t)(npes + 1) * sizeof *size); /* collective */
    char *win = size ? shmem_malloc(WINDOW) : NULL;
    if (!size || !win) {
        if (size) shmem_free(size);
        free(mine);
        return sym__error(SYM_ENOMEM, "symmetric heap exhausted gathering a checkpoint (a %zu-byte "
                          "window); raise SYMTRAIN_SYMMETRIC_SIZE or use --ckpt-format sharded",
                          WINDOW);
    }
    size[npes] = mine ? (double)len : -1.0; /* -1: this PE is out of memory */
    if ((rc = sym__comm_allgather_f64(SHMEM_TEAM_WORLD, size, size + npes, 1))) goto out;
    for (int pe = 0; pe < npes; pe++) {
        if (size[pe] < 0) {
            rc = sym__error(SYM_ENOMEM, "PE %d is out of memory packing its part of a checkpoint",
                            pe);
            goto out;
        }
        if ((size_t)size[pe] > most) most = (size_t)size[pe];
    }
    if (me == 0 && !(tmp = malloc(most))) /* said after the rounds, which every PE runs */
        rc = sym__error(SYM_ENOMEM, "out of memory gathering a checkpoint (%zu bytes)", most);
    if (me == 0 && !rc) unpack(mine, whole);
    for (int pe = 1; pe < npes; pe++) {
        size_t n = (size_t)size[pe];
        for (size_t off = 0; off < n; off += WINDOW) {
            size_t k = n - off < WINDOW ? n - off : WINDOW;
            if (me == pe) memcpy(win, mine + off, k);
            shmem_barrier_all();
            if (me == 0 && tmp) shmem_getmem(tmp + off, win, k, pe);
            shmem_barrier_all();
        }
        if (me == 0 && tmp) unpack(tmp, whole);
    }
out:
    free(tmp);
    free(mine);
    shmem_free(win);
    shmem_free(size);
    return rc;
}
