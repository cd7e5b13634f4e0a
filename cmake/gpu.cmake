# The GPU part (src/gpu, include/shmemx_gpu.h): CUDA C kernels on NVSHMEM.
# Built only where nvcc and NVSHMEM are both found; otherwise one line says what
# was missing and everything else builds as before (GPU tests are then absent).
#
#   NVSHMEM: $NVSHMEM_HOME (or -DNVSHMEM_HOME=), else the nvidia-nvshmem-cu13 pip
#            package of the python3 on PATH. NCCL (the benchmark's baseline):
#            $NCCL_HOME, else nvidia-nccl-cu13. MPI (the gpu-put baseline): CMake's
#            FindMPI. NCCL and MPI are optional.
#
# Targets: symgpu (the public API, loads the next one at shmemx_gpu_init),
# symgpu_nvshmem (kernels + NVSHMEM, a module), symbench-gpu, symbench-gpu-mpi,
# the gpu-labelled tests (tests/gpu.cmake) and `test-gpu` (ctest -L gpu).

set(SYM_HAVE_GPU OFF)
include(CheckLanguage)
check_language(CUDA)

find_program(SYM_PYTHON3 NAMES python3 python)
function(sym_pip_prefix module out)
  set(${out} "" PARENT_SCOPE)
  if(SYM_PYTHON3)
    execute_process(
      COMMAND ${SYM_PYTHON3} -c "import ${module} as m; print(list(m.__path__)[0])"
      OUTPUT_VARIABLE p RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0 AND p)
      set(${out} "${p}" PARENT_SCOPE)
    endif()
  endif()
endfunction()

# A library file by exact names (pip packages ship only the versioned .so).
function(sym_find_lib out dir)
  set(${out} "" PARENT_SCOPE)
  foreach(name ${ARGN})
    if(EXISTS "${dir}/lib/${name}")
      set(${out} "${dir}/lib/${name}" PARENT_SCOPE)
      return()
    endif()
    if(EXISTS "${dir}/lib64/${name}")
      set(${out} "${dir}/lib64/${name}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

set(_gpu_missing "")
if(NOT CMAKE_CUDA_COMPILER)
  set(_gpu_missing "nvcc")
endif()

set(NVSHMEM_HOME "$ENV{NVSHMEM_HOME}" CACHE PATH "NVSHMEM installation (include/, lib/)")
set(_nvshmem "${NVSHMEM_HOME}")
if(NOT _nvshmem)
  sym_pip_prefix(nvidia.nvshmem _nvshmem)
endif()
set(NVSHMEM_HOST_LIB "")
set(NVSHMEM_DEVICE_LIB "")
if(_nvshmem AND EXISTS "${_nvshmem}/include/nvshmem.h")
  sym_find_lib(NVSHMEM_HOST_LIB "${_nvshmem}" libnvshmem_host.so.3 libnvshmem_host.so)
  sym_find_lib(NVSHMEM_DEVICE_LIB "${_nvshmem}" libnvshmem_device.a)
endif()
if(NOT NVSHMEM_HOST_LIB OR NOT NVSHMEM_DEVICE_LIB)
  list(APPEND _gpu_missing "NVSHMEM (set NVSHMEM_HOME or pip install nvidia-nvshmem-cu13)")
endif()

if(_gpu_missing)
  list(JOIN _gpu_missing " and " _gpu_missing)
  message(STATUS "symtrain: GPU: not found — ${_gpu_missing} missing; GPU library, "
                 "symbench-gpu and GPU tests left out")
  return()
endif()

set(SYM_HAVE_GPU ON)
get_filename_component(NVSHMEM_LIB_DIR "${NVSHMEM_HOST_LIB}" DIRECTORY)
set(NVSHMEM_INCLUDE_DIR "${_nvshmem}/include")

# Hopper only: "90-real" is -gencode=arch=compute_90,code=sm_90, on every compile
# and device link; device code is linked across files (-rdc) as NVSHMEM needs.
set(CMAKE_CUDA_ARCHITECTURES 90-real)
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)

# NCCL, for the benchmark's side-by-side columns
set(NCCL_HOME "$ENV{NCCL_HOME}" CACHE PATH "NCCL installation (include/, lib/)")
set(_nccl "${NCCL_HOME}")
if(NOT _nccl)
  sym_pip_prefix(nvidia.nccl _nccl)
endif()
set(NCCL_LIB "")
if(_nccl AND EXISTS "${_nccl}/include/nccl.h")
  sym_find_lib(NCCL_LIB "${_nccl}" libnccl.so.2 libnccl.so)
endif()
find_package(MPI COMPONENTS C QUIET)

set(_gpu_extra "")
if(NCCL_LIB)
  string(APPEND _gpu_extra ", NCCL baseline ${NCCL_LIB}")
else()
  string(APPEND _gpu_extra ", no NCCL (benchmark without baseline columns)")
endif()
if(MPI_C_FOUND)
  string(APPEND _gpu_extra ", MPI baseline")
else()
  string(APPEND _gpu_extra ", no MPI (gpu-put without MPI baseline)")
endif()
message(STATUS "symtrain: GPU: found — nvcc ${CMAKE_CUDA_COMPILER_VERSION} (sm_90), "
               "NVSHMEM ${_nvshmem}${_gpu_extra}")

# The CUDA targets take their warnings through the host compiler, not the
# project-wide -Wall -Wextra (nvcc does not take those directly).
function(sym_cuda_target t)
  set_property(TARGET ${t} PROPERTY COMPILE_OPTIONS "")
  set_target_properties(${t} PROPERTIES CUDA_SEPARABLE_COMPILATION ON CUDA_RUNTIME_LIBRARY Shared)
  target_compile_options(${t} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra>)
  target_include_directories(${t} PRIVATE ${NVSHMEM_INCLUDE_DIR})
  set_property(TARGET ${t} APPEND PROPERTY BUILD_RPATH ${CUDAToolkit_LIBRARY_DIR})
endfunction()

# ---- libsymgpu_nvshmem: kernels, NVSHMEM bootstrap (loaded by libsymgpu) ----
file(GLOB SYMGPU_CU_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/*.cu)
add_library(symgpu_nvshmem MODULE ${SYMGPU_CU_SOURCES})
sym_cuda_target(symgpu_nvshmem)
target_compile_options(symgpu_nvshmem PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fvisibility=hidden>)
target_link_libraries(symgpu_nvshmem PRIVATE ${NVSHMEM_DEVICE_LIB} ${NVSHMEM_HOST_LIB} symshmem
                      symutil CUDA::cudart)
# Only the backend table is exported: NVSHMEM's static device library and the
# CUDA registration stubs stay private to this module, so a program that links
# its own copy (its kernels call NVSHMEM) does not interpose ours.
target_link_options(symgpu_nvshmem PRIVATE
  "LINKER:--version-script=${PROJECT_SOURCE_DIR}/src/gpu/backend.map" "LINKER:--exclude-libs,ALL")
set_property(TARGET symgpu_nvshmem APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/backend.map)
set_target_properties(symgpu_nvshmem PROPERTIES
  INSTALL_RPATH "${SYM_LIB_RPATH};${NVSHMEM_LIB_DIR};${CUDAToolkit_LIBRARY_DIR}")

# ---- libsymgpu: the public API (C, no CUDA needed to load) ----
add_library(symgpu SHARED ${PROJECT_SOURCE_DIR}/src/gpu/api.c)
target_link_libraries(symgpu PUBLIC symshmem PRIVATE symutil ${CMAKE_DL_LIBS})
add_dependencies(symgpu symgpu_nvshmem)
set_target_properties(symgpu PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0
  INSTALL_RPATH "${SYM_LIB_RPATH}")

# ---- symbench-gpu ----
add_executable(symbench-gpu ${PROJECT_SOURCE_DIR}/tools/symbench_gpu.cu)
sym_cuda_target(symbench-gpu)
target_link_libraries(symbench-gpu PRIVATE symgpu symshmem symutil ${NVSHMEM_DEVICE_LIB}
                      ${NVSHMEM_HOST_LIB} CUDA::cudart m)
# Installed: ours relative to bin/, NVSHMEM, CUDA and NCCL where they were found.
set(_symbench_gpu_rpath "${CMAKE_INSTALL_RPATH};${NVSHMEM_LIB_DIR};${CUDAToolkit_LIBRARY_DIR}")
if(NCCL_LIB)
  target_compile_definitions(symbench-gpu PRIVATE SYM_HAVE_NCCL=1)
  target_include_directories(symbench-gpu PRIVATE ${_nccl}/include)
  target_link_libraries(symbench-gpu PRIVATE ${NCCL_LIB})
  get_filename_component(_nccl_lib_dir "${NCCL_LIB}" DIRECTORY)
  list(APPEND _symbench_gpu_rpath "${_nccl_lib_dir}")
endif()
set_target_properties(symbench-gpu PROPERTIES INSTALL_RPATH "${_symbench_gpu_rpath}")

# The gpu-put baseline: MPI with host staging (symbench-gpu gpu-put reads its table).
if(MPI_C_FOUND)
  add_executable(symbench-gpu-mpi ${PROJECT_SOURCE_DIR}/bench/gpu/mpi_staged.c)
  target_link_libraries(symbench-gpu-mpi PRIVATE MPI::MPI_C CUDA::cudart)
endif()

add_custom_target(test-gpu
  COMMAND ${CMAKE_CTEST_COMMAND} -L gpu --output-on-failure
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
  COMMENT "GPU tests (they SKIP where there is no GPU)")

install(TARGETS symgpu LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS symgpu_nvshmem LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS symbench-gpu RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/shmemx_gpu.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ---- libsymtrain_cuda: the GPT on the GPU (src/train/ops/cuda + models/gpt_cuda.cu) and
# the GPU half of sym_redistribute (parallel/dtensor_cuda.cu) ----
# The kernels are a static library of their own (no NVSHMEM, no -rdc; private
# header src/train/ops/cuda/ops_cuda.h), linked into the module and into
# tests/gpu_train_ops. The module is what libsymtrain (plain C) dlopens from its
# own folder (src/train/core/device.h): it exports only sym_cuda_backend and
# finds libsymgpu / libsymshmem beside itself ($ORIGIN), CUDA where it was found.
file(GLOB SYMTRAIN_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/train/ops/cuda/*.cu)
add_library(symtrain_cuda_ops STATIC ${SYMTRAIN_CUDA_SOURCES})
set_property(TARGET symtrain_cuda_ops PROPERTY COMPILE_OPTIONS "")
target_compile_options(symtrain_cuda_ops PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra -lineinfo>)
target_include_directories(symtrain_cuda_ops PUBLIC ${PROJECT_SOURCE_DIR}/include
  ${PROJECT_SOURCE_DIR}/src/train/ops/cuda)
target_link_libraries(symtrain_cuda_ops PUBLIC CUDA::cudart CUDA::cublasLt)
set_target_properties(symtrain_cuda_ops PROPERTIES CUDA_RUNTIME_LIBRARY Shared
  POSITION_INDEPENDENT_CODE ON)

add_library(symtrain_cuda MODULE ${PROJECT_SOURCE_DIR}/src/train/models/gpt_cuda.cu
  ${PROJECT_SOURCE_DIR}/src/train/parallel/dtensor_cuda.cu)
set_property(TARGET symtrain_cuda PROPERTY COMPILE_OPTIONS "")
target_compile_options(symtrain_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-fvisibility=hidden -lineinfo>)
target_include_directories(symtrain_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src/train)
target_link_libraries(symtrain_cuda PRIVATE symtrain_cuda_ops symgpu symshmem CUDA::cudart
  CUDA::cublasLt)
target_link_options(symtrain_cuda PRIVATE "LINKER:--exclude-libs,ALL" "LINKER:--no-undefined")
set_target_properties(symtrain_cuda PROPERTIES CUDA_RUNTIME_LIBRARY Shared
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}
  INSTALL_RPATH "${SYM_LIB_RPATH};${CUDAToolkit_LIBRARY_DIR}")
set_property(TARGET symtrain_cuda APPEND PROPERTY BUILD_RPATH ${CUDAToolkit_LIBRARY_DIR})
if(TARGET symtrain)
  add_dependencies(symtrain symtrain_cuda) # built with the library that loads it
endif()
install(TARGETS symtrain_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
