/*
 * gather.c — reduce-scatter, all-gather and broadcast.
 *
 * All three pull: after every member is "ready", each member reads what it
 * needs from the others' inputs (in place when the input is symmetric, else
 * from the member's staging copy), writes only its own output, and signals
 * "done" so inputs can be reused. Reads go through shared memory on one host
 * and become fabric gets between hosts, so the same code serves both.
 * Private inputs are staged in rounds of at most SYM_COLL_STAGE_BYTES.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

/* ---- reduce-scatter ---- */

/* Each round stages, for every member's block, the next piece of it (at most
 * stage / n elements), so every member reduces in every round. */
int sym__reduce_scatter(shmem_team_t t, void *dest, const void *source, size_t count,
                        const sym_redop_t *r) {
    int n = t->size, me = t->me;
    size_t es = r->esize, lo, len;
    shmemx_block_range(count, n, me, &lo, &len);
    if (count == 0) return 0;
    if (n == 1) {
        const void *in1[1] = {source};
        sym__reduce1(r, dest, in1, 1, count, 0);
        return 0;
    }
    int src_sym = sym__is_symmetric(source, count * es);
    int local = sym__coll_all_local(t);
    size_t maxblk = (count + (size_t)n - 1) / (size_t)n;
    size_t piece = src_sym && local ? maxblk : SYM_COLL_STAGE_BYTES / es / (size_t)n;
    if (piece > maxblk) piece = maxblk;
    if (!local && piece * es > SYM_COLL_STAGE_BYTES / 2) piece = SYM_COLL_STAGE_BYTES / 2 / es;
    char *stage = sym__coll_stage_in(t);
    const void **in = malloc((size_t)n * sizeof *in);
    char *tmp = local ? NULL : malloc((size_t)n * piece * es); /* fetched inputs, remote case */
    if (!in || (!local && !tmp)) {
        free(in);
        free(tmp);
        return SHMEMX_ENOMEM;
    }
    for (size_t p0 = 0; p0 < maxblk; p0 += piece) {
        if (!src_sym) /* stage piece p0 of every block: block k at stage + k * piece */
            for (int k = 0; k < n; k++) {
                size_t klo, klen;
                shmemx_block_range(count, n, k, &klo, &klen);
                if (p0 < klen)
                    memcpy(stage + (size_t)k * piece * es, (const char *)source + (klo + p0) * es,
                           (klen - p0 < piece ? klen - p0 : piece) * es);
            }
        sym__coll_sync_all(t, SYM_COLL_READY);
        size_t m = p0 < len ? (len - p0 < piece ? len - p0 : piece) : 0;
        if (m) {
            const char *src = src_sym ? (const char *)source + (lo + p0) * es
                                      : stage + (size_t)me * piece * es;
            for (int k = 0; k < n; k++) {
                if (local) {
                    in[k] = sym__coll_peer(t, k, src);
                } else {
                    sym__coll_get(t, k, tmp + (size_t)k * piece * es, src, m * es);
                    in[k] = tmp + (size_t)k * piece * es;
                }
            }
            sym__reduce1(r, (char *)dest + p0 * es, in, n, m, r->avg ? n : 0);
        }
        sym__coll_sync_all(t, SYM_COLL_DONE);
    }
    free(in);
    free(tmp);
    return 0;
}

/* ---- all-gather ---- */

int sym__allgather(shmem_team_t t, void *dest, const void *source, size_t bytes) {
    int n = t->size, me = t->me;
    if (bytes == 0) return 0;
    char *d = dest;
    if (n == 1) {
        memmove(d, source, bytes);
        return 0;
    }
    int src_sym = sym__is_symmetric(source, bytes);
    /* In place, each member's source is its own block of dest, so member m's
     * input is at dest + m * bytes, not at our source address. */
    int in_place = (const char *)source == d + (size_t)me * bytes;
    size_t chunk = src_sym ? bytes : SYM_COLL_STAGE_BYTES;
    char *stage = sym__coll_stage_in(t);
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t len = bytes - off < chunk ? bytes - off : chunk;
        if (!src_sym) memcpy(stage, (const char *)source + off, len);
        sym__coll_sync_all(t, SYM_COLL_READY);
        for (int k = 0; k < n; k++) {
            int m = (me + k) % n; /* start with ourselves, then spread the load */
            char *to = d + (size_t)m * bytes + off;
            const char *from = !src_sym ? stage : in_place ? to : (const char *)source + off;
            if (m == me) {
                if (!in_place) memmove(to, (const char *)source + off, len);
            } else {
                sym__coll_get(t, m, to, from, len);
            }
        }
        sym__coll_sync_all(t, SYM_COLL_DONE);
    }
    return 0;
}

/* ---- broadcast ---- */

/* Only the root's source matters, so the root says where to read: before each
 * round it writes into its slot's psync[0] either 0 (read my staging copy) or
 * 1 + segment << 62 + offset of its symmetric source. */
int sym__broadcast(shmem_team_t t, void *dest, const void *source, size_t bytes, int root,
                   int root_copies) {
    int n = t->size, me = t->me;
    if (bytes == 0) return 0;
    if (n == 1) {
        if (root_copies && dest != source) memmove(dest, source, bytes);
        return 0;
    }
    uint64_t *where = &sym__slot(t)->psync[0];
    size_t src_off = 0;
    int src_seg = me == root ? sym__seg_of(source, &src_off) : -1;
    if (src_seg >= 0 && bytes > sym__world.seg[src_seg].size - src_off) src_seg = -1;
    char *stage = sym__coll_stage_in(t);
    size_t chunk = SYM_COLL_STAGE_BYTES;
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t len = bytes - off < chunk ? bytes - off : chunk;
        if (me == root) {
            if (src_seg >= 0) {
                *where = 1 + ((uint64_t)src_seg << 62) + src_off + off;
            } else {
                memcpy(stage, (const char *)source + off, len);
                *where = 0;
            }
        }
        sym__coll_sync_all(t, SYM_COLL_READY);
        if (me != root) {
            uint64_t w;
            sym__coll_get(t, root, &w, where, sizeof w);
            const char *src = w ? sym__world.seg[w >> 62].base + ((w - 1) & ((1ull << 62) - 1))
                                : stage;
            sym__coll_get(t, root, (char *)dest + off, src, len);
        } else if (root_copies && dest != source) {
            memmove((char *)dest + off, (const char *)source + off, len);
        }
        sym__coll_sync_all(t, SYM_COLL_DONE);
    }
    return 0;
}

/* ---- variable all-gather and all-to-all (OpenSHMEM collect, alltoall(s)) ---- */

/* Member m's `bytes[m]` bytes from its symmetric `source` land at dest + displs[m]. */
int sym__allgatherv(shmem_team_t t, void *dest, const void *source, const size_t *bytes,
                    const size_t *displs) {
    int n = t->size, me = t->me;
    sym__coll_sync_all(t, SYM_COLL_READY);
    for (int k = 0; k < n; k++) {
        int m = (me + k) % n;
        if (!bytes[m]) continue;
        if (m == me)
            memmove((char *)dest + displs[m], source, bytes[m]);
        else
            sym__coll_get(t, m, (char *)dest + displs[m], source, bytes[m]);
    }
    sym__coll_sync_all(t, SYM_COLL_DONE);
    return 0;
}

/* Element k of the block member m sends to us: its source[sst * (me * nelems + k)]
 * lands at our dest[dst * (m * nelems + k)]; esize-byte elements, symmetric source. */
int sym__alltoalls(shmem_team_t t, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                   size_t nelems, size_t esize) {
    int n = t->size, me = t->me;
    char *d = dest;
    const char *s = source;
    sym__coll_sync_all(t, SYM_COLL_READY);
    for (int k = 0; k < n; k++) {
        int m = (me + k) % n;
        const char *from = s + (size_t)sst * (size_t)me * nelems * esize;
        char *to = d + (size_t)dst * (size_t)m * nelems * esize;
        const char *p = m == me ? from : sym__coll_peer(t, m, from);
        if (p && dst == 1 && sst == 1) {
            memcpy(to, p, nelems * esize);
            continue;
        }
        for (size_t e = 0; e < nelems; e++) {
            if (p)
                memcpy(to + (size_t)dst * e * esize, p + (size_t)sst * e * esize, esize);
            else
                sym__coll_get(t, m, to + (size_t)dst * e * esize, from + (size_t)sst * e * esize,
                              esize);
        }
    }
    sym__coll_sync_all(t, SYM_COLL_DONE);
    return 0;
}
