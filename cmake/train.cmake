# The training stack (src/train, library libsymtrain) and the symtrain CLI.
#
# Needs zlib: the data loader reads the gzip IDX files of Fashion-MNIST. Without
# it the training stack is left out (and its tests are not registered).
# Matrix products go through OpenBLAS's cblas_sgemm when libopenblas-dev is
# found (SYM_HAVE_OPENBLAS), else through a cache-blocked kernel of our own;
# -DSYMTRAIN_USE_OPENBLAS=OFF forces the built-in kernel. Each choice is
# reported once, here.
option(SYMTRAIN_USE_OPENBLAS "use OpenBLAS for matrix products when it is found" ON)

find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  message(STATUS "symtrain: zlib: not found — the training stack and the symtrain CLI left "
                 "out (apt-get install zlib1g-dev)")
  set(SYM_HAVE_TRAIN OFF)
  return()
endif()
set(SYM_HAVE_TRAIN ON)

set(SYM_HAVE_OPENBLAS OFF)
set(SYM_HAVE_OPENBLAS_THREADS OFF)
if(SYMTRAIN_USE_OPENBLAS AND PkgConfig_FOUND)
  pkg_check_modules(OPENBLAS QUIET IMPORTED_TARGET openblas)
  if(OPENBLAS_FOUND)
    include(CheckSymbolExists)
    set(CMAKE_REQUIRED_INCLUDES ${OPENBLAS_INCLUDE_DIRS})
    set(CMAKE_REQUIRED_LIBRARIES ${OPENBLAS_LINK_LIBRARIES})
    check_symbol_exists(cblas_sgemm "cblas.h" SYM_CBLAS_SGEMM_OK)
    check_symbol_exists(openblas_set_num_threads "cblas.h" SYM_OPENBLAS_SET_THREADS_OK)
    unset(CMAKE_REQUIRED_INCLUDES)
    unset(CMAKE_REQUIRED_LIBRARIES)
    if(SYM_CBLAS_SGEMM_OK)
      set(SYM_HAVE_OPENBLAS ON)
      if(SYM_OPENBLAS_SET_THREADS_OK)
        set(SYM_HAVE_OPENBLAS_THREADS ON)
      endif()
    endif()
  endif()
endif()
if(SYM_HAVE_OPENBLAS)
  message(STATUS "symtrain: OpenBLAS ${OPENBLAS_VERSION}: found — matrix products use "
                 "cblas_sgemm")
elseif(NOT SYMTRAIN_USE_OPENBLAS)
  message(STATUS "symtrain: OpenBLAS: off (SYMTRAIN_USE_OPENBLAS=OFF) — matrix products use "
                 "the built-in blocked kernel")
else()
  message(STATUS "symtrain: OpenBLAS: not found — matrix products use the built-in blocked "
                 "kernel (apt-get install libopenblas-dev for speed)")
endif()

# src/train/ is folders by concern (core, ops, models, data, parallel, ckpt,
# obs, optim; docs/architecture.md); a file includes its neighbours' private
# headers as "core/parallel.h" and the layers below as "util/util.h".
file(GLOB_RECURSE SYMTRAIN_SOURCES CONFIGURE_DEPENDS src/train/*.c)
add_library(symtrain SHARED ${SYMTRAIN_SOURCES})
target_include_directories(symtrain PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
target_include_directories(symtrain PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/train)
# The element-wise loops vectorise at -O3 (GCC's -O2 cost model refuses them);
# their clamps become min/max instructions only without NaN / signed-zero
# rules (a NaN input still gives a NaN output: it flows through the product).
set_source_files_properties(src/train/ops/cpu/activation.c PROPERTIES COMPILE_OPTIONS
  "-O3;-fno-math-errno;-ffinite-math-only;-fno-signed-zeros")
# The distributed tensors' reduce-scatter adds peers' floats in a plain loop (comm.c).
set_source_files_properties(src/train/parallel/comm.c PROPERTIES COMPILE_OPTIONS "-O3")
target_link_libraries(symtrain PUBLIC symshmem PRIVATE ZLIB::ZLIB Threads::Threads m ${CMAKE_DL_LIBS})

if(SYM_HAVE_OPENBLAS)
  target_compile_definitions(symtrain PRIVATE SYM_HAVE_OPENBLAS=1)
  if(SYM_HAVE_OPENBLAS_THREADS)
    target_compile_definitions(symtrain PRIVATE SYM_HAVE_OPENBLAS_THREADS=1)
  endif()
  target_link_libraries(symtrain PRIVATE PkgConfig::OPENBLAS)
endif()
# The Prometheus endpoint (--metrics-port, src/train/obs/prom.c) serves over
# libmicrohttpd; without it the option says so once and training goes on.
set(SYM_HAVE_MHD OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(MHD QUIET IMPORTED_TARGET libmicrohttpd)
  if(MHD_FOUND)
    set(SYM_HAVE_MHD ON)
  endif()
endif()
if(SYM_HAVE_MHD)
  message(STATUS "symtrain: libmicrohttpd ${MHD_VERSION}: found — --metrics-port serves "
                 "Prometheus metrics")
  target_compile_definitions(symtrain PRIVATE SYM_HAVE_MHD=1)
  target_link_libraries(symtrain PRIVATE PkgConfig::MHD)
else()
  message(STATUS "symtrain: libmicrohttpd: not found — no Prometheus endpoint (apt-get install "
                 "libmicrohttpd-dev)")
endif()

set_target_properties(symtrain PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0)

# The CLI: `symtrain train ...`, `symtrain plot ...`. The executable target is
# symtrain_cli (the library owns the name symtrain); the file is build/symtrain.
add_executable(symtrain_cli tools/symtrain.c tools/symtrain_tokenize.c tools/symtrain_sample.c
  tools/symtrain_plan.c tools/symtrain_ckpt.c tools/symtrain_memstore.c)
target_link_libraries(symtrain_cli PRIVATE symtrain m)
set_target_properties(symtrain_cli PROPERTIES OUTPUT_NAME symtrain)

install(TARGETS symtrain symtrain_cli
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/symtrain DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
