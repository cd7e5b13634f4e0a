/*
 * mpp/shmem.h — the SGI / Cray SHMEM include path, which many older OpenSHMEM
 * programs still use (#include <mpp/shmem.h>). It is the standard header.
 */
#include <shmem.h>
