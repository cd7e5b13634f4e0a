/*
 * mpp/shmemx.h — the extensions header on the SGI / Cray SHMEM include path.
 */
#include <shmemx.h>
