# GPU tests (label "gpu"; `make test-gpu` runs them). Each reports SKIP (exit
# 77, one line why) where there is no GPU, so a CI machine without one passes.
# Shared-GPU variants run several PEs on one GPU (SYMTRAIN_GPU_SHARE=1): the
# 4- and 8-PE runs on 2 GPUs are how the 4- and 8-GPU code paths are tested on
# a 2-GPU host.
if(NOT SYM_HAVE_GPU)
  return()
endif()

# sym_gpu_test(name SOURCE file NPES n... [ENV k=v;...] [ARGS a...] [SUFFIX s] [CUDA])
function(sym_gpu_test name)
  cmake_parse_arguments(T "CUDA" "SOURCE;SUFFIX;TIMEOUT" "NPES;ENV;ARGS" ${ARGN})
  if(NOT TARGET ${name})
    add_executable(${name} ${T_SOURCE})
    target_link_libraries(${name} PRIVATE symgpu symshmem CUDA::cudart m)
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    if(T_CUDA)
      sym_cuda_target(${name})
      target_link_libraries(${name} PRIVATE ${NVSHMEM_DEVICE_LIB} ${NVSHMEM_HOST_LIB})
    endif()
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  foreach(n ${T_NPES})
    set(tn ${name}_np${n}${T_SUFFIX})
    add_test(NAME ${tn}
      COMMAND ${SYMRUN} -n ${n} --timeout ${T_TIMEOUT} $<TARGET_FILE:${name}> ${T_ARGS})
    set_tests_properties(${tn} PROPERTIES LABELS gpu TIMEOUT ${T_TIMEOUT}
      SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
    if(T_ENV)
      set_tests_properties(${tn} PROPERTIES ENVIRONMENT "${T_ENV}")
    endif()
  endforeach()
endfunction()

set(_gpu_env "NCCL_NVLS_ENABLE=0;NVSHMEM_DISABLE_NVLS=1")
sym_gpu_test(gpu_nolib SOURCE gpu_nolib.c NPES 1 2 ENV "${_gpu_env}")
sym_gpu_test(gpu_init SOURCE gpu_init.c NPES 1 2 ENV "${_gpu_env}")
# a small scratch makes the two-shot and ring kernels loop (and reuse slots)
sym_gpu_test(gpu_coll SOURCE gpu_coll.c NPES 1 2
  ENV "${_gpu_env};SYMTRAIN_GPU_SCRATCH=4M")
sym_gpu_test(gpu_coll SOURCE gpu_coll.c NPES 2 SUFFIX _share1gpu
  ENV "${_gpu_env};SYMTRAIN_GPU_SCRATCH=4M;SYMTRAIN_GPU_SHARE=1;CUDA_VISIBLE_DEVICES=0;SYMTRAIN_TEST_QUICK=1")
sym_gpu_test(gpu_coll SOURCE gpu_coll.c NPES 4 8 SUFFIX _share2gpu
  ENV "${_gpu_env};SYMTRAIN_GPU_SCRATCH=4M;SYMTRAIN_GPU_SHARE=1;SYMTRAIN_TEST_QUICK=1")
# the epochs started just below 2^32 (SYMTRAIN_TEST_GPU_EPOCH_START, a test hook):
# block 0 passes 2^32 within a few collectives, the busier blocks during the
# quick subset, with every algorithm and the back-to-back sequences
sym_gpu_test(gpu_coll SOURCE gpu_coll.c NPES 2 SUFFIX _epochwrap
  ENV "${_gpu_env};SYMTRAIN_GPU_SCRATCH=4M;SYMTRAIN_GPU_SHARE=1;CUDA_VISIBLE_DEVICES=0;SYMTRAIN_TEST_QUICK=1;SYMTRAIN_TEST_GPU_EPOCH_START=4294967288;SYMTRAIN_GPU_TIMEOUT=10")
# the team collectives: 4 PEs on one GPU, sub-teams of 1, 2 and 4 PEs, disjoint
# teams at once, interleaved with the world, a team index reused; and the same
# (quick) with the epochs started just below 2^32
sym_gpu_test(gpu_coll SOURCE gpu_coll.c NPES 4 SUFFIX _teams ARGS --teams TIMEOUT 120
  ENV "${_gpu_env};SYMTRAIN_GPU_SCRATCH=4M;SYMTRAIN_GPU_SHARE=1;CUDA_VISIBLE_DEVICES=0")
sym_gpu_test(gpu_coll SOURCE gpu_coll.c NPES 4 SUFFIX _teams_epochwrap ARGS --teams TIMEOUT 120
  ENV "${_gpu_env};SYMTRAIN_GPU_SCRATCH=4M;SYMTRAIN_GPU_SHARE=1;CUDA_VISIBLE_DEVICES=0;SYMTRAIN_TEST_QUICK=1;SYMTRAIN_TEST_GPU_EPOCH_START=4294967288;SYMTRAIN_GPU_TIMEOUT=10")
# the way between hosts on one host: no peer reached by stores (a test hook),
# so every collective runs the ring on NVSHMEM signals, private sources staged
sym_gpu_test(gpu_coll SOURCE gpu_coll.c NPES 2 3 SUFFIX _noP2P
  ENV "${_gpu_env};SYMTRAIN_GPU_SCRATCH=4M;SYMTRAIN_GPU_SHARE=1;CUDA_VISIBLE_DEVICES=0;SYMTRAIN_TEST_QUICK=1;SYMTRAIN_TEST_GPU_NO_P2P=1")
sym_gpu_test(gpu_coll SOURCE gpu_coll.c NPES 4 SUFFIX _teams_noP2P ARGS --teams TIMEOUT 120
  ENV "${_gpu_env};SYMTRAIN_GPU_SCRATCH=4M;SYMTRAIN_GPU_SHARE=1;CUDA_VISIBLE_DEVICES=0;SYMTRAIN_TEST_QUICK=1;SYMTRAIN_TEST_GPU_NO_P2P=1")
sym_gpu_test(gpu_user_kernel SOURCE gpu_user_kernel.cu NPES 2 ENV "${_gpu_env}" CUDA)

# ---- the GPT's GPU kernels (libsymtrain_cuda) against their CPU references ----
# One process, no PEs: fresh random inputs each run (the seed is printed),
# every element compared, every kernel run twice for bitwise determinism.
# `gpu_train_ops --bench` times them at the GPT-2 small shape (not a test).
if(TARGET symtrain_cuda_ops AND TARGET symtrain)
  add_executable(gpu_train_ops gpu_train_ops.cu)
  set_property(TARGET gpu_train_ops PROPERTY COMPILE_OPTIONS "")
  target_compile_options(gpu_train_ops PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  target_include_directories(gpu_train_ops PRIVATE ${PROJECT_SOURCE_DIR}/src/train/ops/cuda)
  target_link_libraries(gpu_train_ops PRIVATE symtrain_cuda_ops symtrain CUDA::cudart m)
  set_target_properties(gpu_train_ops PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
  add_test(NAME gpu_train_ops COMMAND $<TARGET_FILE:gpu_train_ops>)
  set_tests_properties(gpu_train_ops PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77
    RUN_SERIAL TRUE)
endif()

# ---- sym_redistribute on GPU tensors: train_dtensor's cases on PEs sharing the GPU ----
if(TARGET symtrain)
  sym_gpu_test(train_dtensor_gpu SOURCE train_dtensor.c NPES 1 2 3 4 TIMEOUT 300
    ENV "${_gpu_env};SYMTRAIN_GPU_SHARE=1;CUDA_VISIBLE_DEVICES=0")
  target_compile_definitions(train_dtensor_gpu PRIVATE SYM_TEST_GPU)
  target_link_libraries(train_dtensor_gpu PRIVATE symtrain)
endif()
