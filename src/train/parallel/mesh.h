/*
 * mesh.h — the device mesh's state, shared by mesh.c (building it) and
 * dtensor.c (redistributing over it); the contract is symtrain/dtensor.h.
 */
#ifndef SYM_TRAIN_MESH_H
#define SYM_TRAIN_MESH_H

#include <shmem.h>
#include <stddef.h>

#include <symtrain/dtensor.h>

struct sym_mesh {
    int ndims;
    char name[SYM_MESH_MAX_DIMS][4];     /* "dp", "tp", "pp" */
    int size[SYM_MESH_MAX_DIMS];         /* PEs along each dimension */
    int coord[SYM_MESH_MAX_DIMS];        /* this PE's coordinates */
    shmem_team_t team[SYM_MESH_MAX_DIMS]; /* this PE's row along each dimension */
    int whole_job;  /* the mesh holds every PE: scratch may grow with shmem_malloc */
    void *scratch;  /* symmetric; the same size on every PE */
    size_t scratch_bytes;
    int scratch_owned; /* from shmem_malloc (else attached by the caller) */
};

/* *buf = the mesh's symmetric scratch, at least `bytes` large: grown (a
 * collective over the job) on a whole-job mesh, else SYM_ENOMEM saying how
 * much to attach. Every PE of the mesh calls it with the same `bytes`. */
int sym__mesh_scratch(sym_mesh_t *mesh, size_t bytes, void **buf);

#endif
