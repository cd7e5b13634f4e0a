# Dependencies. OpenSSL's libcrypto is required; the others are optional: each
# is looked for once, what is missing is said once, and the parts that need it
# are left out of the build (their tests SKIP).
find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)
# Required, not optional: the env bootstrap authenticates ranks and encrypts
# what they exchange (fabric addresses, memory keys) with it, and there is no
# unprotected fallback (src/util/crypto.c).
find_package(OpenSSL QUIET COMPONENTS Crypto)
if(NOT OpenSSL_FOUND OR NOT TARGET OpenSSL::Crypto)
  message(FATAL_ERROR "symtrain: OpenSSL's libcrypto not found — it is required (the job token's "
                      "HMAC and the encrypted exchange of fabric keys); apt-get install libssl-dev")
endif()
message(STATUS "symtrain: OpenSSL libcrypto ${OPENSSL_VERSION}: found (required)")

set(SYM_HAVE_OFI OFF)
set(SYM_HAVE_PMIX OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(OFI QUIET IMPORTED_TARGET libfabric)
  pkg_check_modules(PMIX QUIET IMPORTED_TARGET pmix)
  if(OFI_FOUND)
    set(SYM_HAVE_OFI ON)
  endif()
  if(PMIX_FOUND)
    set(SYM_HAVE_PMIX ON)
  endif()
endif()
if(SYM_HAVE_OFI)
  message(STATUS "symtrain: libfabric ${OFI_VERSION}: found — PEs on other hosts use the fabric transport")
else()
  message(STATUS "symtrain: libfabric: not found — one host only (apt-get install libfabric-dev)")
endif()
if(SYM_HAVE_PMIX)
  message(STATUS "symtrain: PMIx ${PMIX_VERSION}: found — mpirun / srun --mpi=pmix can launch PEs")
else()
  message(STATUS "symtrain: PMIx: not found — no mpirun/srun launch (apt-get install libpmix-dev)")
endif()
