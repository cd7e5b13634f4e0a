/*
 * mesh.c — the device mesh: PEs of a team arranged in 1 to 3 named
 * dimensions, a team per row of each dimension, and the symmetric scratch the
 * redistributions share (see symtrain/dtensor.h).
 *
 * A team PE's index is ((c0 * n1) + c1) * n2 + c2: the last dimension varies
 * fastest. The rows come from shmem_team_split_2d, whose rows of one split
 * share a team slot (they never touch each other's memory): two splits for
 * three dimensions (the last dimension's rows, then the rest split in two),
 * one for two, a strided copy of the parent for one. So a mesh takes at most
 * three team slots whatever its size.
 */
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "parallel/mesh.h"

/* ---- the spec ---- */

static int parse_spec(const char *spec, sym_mesh_t *m) {
    static const char *const names[] = {"dp", "tp", "pp"};
    const char *p = spec ? spec : "";
    m->ndims = 0;
    while (*p) {
        int which = -1;
        for (int i = 0; i < 3; i++)
            if (!strncmp(p, names[i], 2) && p[2] == '=') which = i;
        if (which < 0)
            return sym__error(SYM_EINVAL,
                              "mesh '%s': write NAME=SIZE,... with names dp, tp, pp (e.g. "
                              "dp=2,tp=2)", spec);
        for (int k = 0; k < m->ndims; k++)
            if (!strcmp(m->name[k], names[which]))
                return sym__error(SYM_EINVAL, "mesh '%s': %s is named twice", spec,
                                  names[which]);
        if (m->ndims == SYM_MESH_MAX_DIMS)
            return sym__error(SYM_EINVAL, "mesh '%s': at most %d dimensions", spec,
                              SYM_MESH_MAX_DIMS);
        char *end;
        long v = strtol(p + 3, &end, 10);
        if (end == p + 3 || v < 1 || v > 1 << 20)
            return sym__error(SYM_EINVAL, "mesh '%s': the size of %s must be a whole number "
                              ">= 1", spec, names[which]);
        strcpy(m->name[m->ndims], names[which]);
        m->size[m->ndims++] = (int)v;
        p = end;
        if (*p == ',') p++;
        else if (*p)
            return sym__error(SYM_EINVAL, "mesh '%s': unexpected '%c'; separate NAME=SIZE with "
                              "','", spec, *p);
    }
    if (m->ndims == 0)
        return sym__error(SYM_EINVAL, "mesh '%s': name at least one dimension (e.g. tp=2)",
                          spec ? spec : "");
    return SYM_OK;
}

/* ---- building ---- */

static void destroy_teams(sym_mesh_t *m) {
    for (int k = 0; k < m->ndims; k++) {
        if (m->team[k] != SHMEM_TEAM_INVALID) shmem_team_destroy(m->team[k]);
        m->team[k] = SHMEM_TEAM_INVALID;
    }
}

static int split(shmem_team_t parent, int xrange, shmem_team_t *x, shmem_team_t *y) {
    if (shmem_team_split_2d(parent, xrange, NULL, 0, x, NULL, 0, y))
        return sym__error(SYM_ECOMM, "mesh: shmem_team_split_2d failed (no free team slots: "
                                     "destroy teams or meshes no longer needed)");
    return SYM_OK;
}

int sym_mesh_create(shmem_team_t parent, const char *spec, sym_mesh_t **out) {
    *out = NULL;
    if (parent == SHMEM_TEAM_INVALID || shmem_team_my_pe(parent) < 0)
        return sym__error(SYM_EINVAL, "mesh: this PE is not a member of the parent team");
    sym_mesh_t *m = calloc(1, sizeof *m);
    if (!m) return sym__error(SYM_ENOMEM, "mesh: out of memory");
    int rc = parse_spec(spec, m);
    if (rc) goto fail;
    int n = shmem_team_n_pes(parent), me = shmem_team_my_pe(parent);
    long prod = 1;
    for (int k = 0; k < m->ndims; k++) prod *= m->size[k];
    if (prod != n) {
        rc = sym__error(SYM_EINVAL, "mesh '%s' has %ld PEs, but the team has %d: make the sizes "
                        "multiply to %d", spec, prod, n, n);
        goto fail;
    }
    for (int k = m->ndims - 1, r = me; k >= 0; k--) {
        m->coord[k] = r % m->size[k];
        r /= m->size[k];
    }
    for (int k = 0; k < SYM_MESH_MAX_DIMS; k++) m->team[k] = SHMEM_TEAM_INVALID;
    if (m->ndims == 1) {
        if (shmem_team_split_strided(parent, 0, 1, n, NULL, 0, &m->team[0])) {
            rc = sym__error(SYM_ECOMM, "mesh: shmem_team_split_strided failed (no free team "
                                       "slots: destroy teams or meshes no longer needed)");
            goto fail;
        }
    } else if (m->ndims == 2) {
        if ((rc = split(parent, m->size[1], &m->team[1], &m->team[0]))) goto fail;
    } else {
        shmem_team_t rest; /* the PEs with my last coordinate, numbered c0 * n1 + c1 */
        if ((rc = split(parent, m->size[2], &m->team[2], &rest))) goto fail;
        rc = split(rest, m->size[1], &m->team[1], &m->team[0]);
        shmem_team_destroy(rest);
        if (rc) goto fail;
    }
    m->whole_job = n == shmem_n_pes();
    *out = m;
    return SYM_OK;
fail:
    destroy_teams(m);
    free(m);
    return rc;
}

void sym_mesh_destroy(sym_mesh_t *m) {
    if (!m) return;
    if (m->scratch_owned) shmem_free(m->scratch);
    destroy_teams(m);
    free(m);
}

/* ---- queries ---- */

int sym_mesh_ndims(const sym_mesh_t *m) { return m->ndims; }

int sym_mesh_dim(const sym_mesh_t *m, const char *name) {
    for (int k = 0; k < m->ndims; k++)
        if (!strcmp(m->name[k], name)) return k;
    return -1;
}

static int valid_dim(const sym_mesh_t *m, int k) { return k >= 0 && k < m->ndims; }

const char *sym_mesh_name(const sym_mesh_t *m, int k) { return valid_dim(m, k) ? m->name[k] : "?"; }
int sym_mesh_size(const sym_mesh_t *m, int k) { return valid_dim(m, k) ? m->size[k] : 0; }
int sym_mesh_coord(const sym_mesh_t *m, int k) { return valid_dim(m, k) ? m->coord[k] : -1; }
shmem_team_t sym_mesh_team(const sym_mesh_t *m, int k) {
    return valid_dim(m, k) ? m->team[k] : SHMEM_TEAM_INVALID;
}

/* ---- scratch ---- */

int sym_mesh_attach_scratch(sym_mesh_t *m, void *buf, size_t bytes) {
    if (bytes && !shmem_addr_accessible(buf, shmem_my_pe()))
        return sym__error(SYM_EINVAL, "mesh: the scratch buffer is not symmetric memory "
                                      "(allocate it with shmem_malloc)");
    if (m->scratch_owned) shmem_free(m->scratch);
    m->scratch = buf;
    m->scratch_bytes = bytes;
    m->scratch_owned = 0;
    return SYM_OK;
}

int sym__mesh_scratch(sym_mesh_t *m, size_t bytes, void **buf) {
    if (bytes <= m->scratch_bytes) {
        *buf = m->scratch;
        return SYM_OK;
    }
    if (!m->whole_job)
        return sym__error(SYM_ENOMEM, "mesh: this redistribution needs %zu bytes of symmetric "
                          "scratch, the mesh has %zu: a mesh over part of the job cannot "
                          "allocate it; attach a larger buffer (sym_mesh_attach_scratch)",
                          bytes, m->scratch_bytes);
    size_t want = bytes < 2 * m->scratch_bytes ? 2 * m->scratch_bytes : bytes;
    want = (want + 65535) / 65536 * 65536;
    if (m->scratch_owned) shmem_free(m->scratch);
    m->scratch = shmem_malloc(want); /* every PE asks the same: the same block everywhere */
    m->scratch_owned = m->scratch != NULL;
    m->scratch_bytes = m->scratch ? want : 0;
    if (!m->scratch)
        return sym__error(SYM_ENOMEM, "mesh: no %zu bytes of symmetric memory for the "
                          "redistribution's scratch: raise SYMTRAIN_SYMMETRIC_SIZE as PE 0's line "
                          "before says", want);
    *buf = m->scratch;
    return SYM_OK;
}
