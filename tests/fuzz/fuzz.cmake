# Fuzzing the data loaders: tests/fuzz/fuzz_*.c are libFuzzer targets that
# call the production loaders (the same source files libsymtrain is built
# from, compiled again by clang with -fsanitize=fuzzer,address,undefined), and
# each runs for SYM_FUZZ_SECONDS from the committed seeds as a test. Without a
# clang that links libFuzzer the tests report SKIP (apt-get install clang
# libclang-rt-dev).
set(SYM_FUZZ_SECONDS 15 CACHE STRING "seconds each fuzz test runs")
set(SYM_HAVE_FUZZ OFF)
find_program(SYM_FUZZ_CC NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
set(SYM_FUZZ_FLAGS -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined
  -fno-sanitize-recover=undefined)
if(SYM_FUZZ_CC)
  set(probe ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.c)
  file(WRITE ${probe} "#include <stddef.h>\n#include <stdint.h>\n"
    "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return (int)(d && n) * 0; }\n")
  execute_process(COMMAND ${SYM_FUZZ_CC} ${SYM_FUZZ_FLAGS} ${probe} -o ${probe}.out
    RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(probe_rc EQUAL 0)
    set(SYM_HAVE_FUZZ ON)
  endif()
endif()
if(SYM_HAVE_FUZZ)
  message(STATUS "symtrain: libFuzzer (${SYM_FUZZ_CC}): found — the data loaders are fuzzed "
                 "${SYM_FUZZ_SECONDS} s each by ctest")
else()
  message(STATUS "symtrain: clang with libFuzzer: not found — the fuzz tests SKIP (apt-get "
                 "install clang libclang-rt-dev)")
endif()

# sym_fuzz_test(name SEEDS dir SOURCES src...): tests/fuzz/name.c against the
# production sources; the test fuzz_<what> runs it.
function(sym_fuzz_test name)
  cmake_parse_arguments(F "" "SEEDS" "SOURCES" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
  if(NOT SYM_HAVE_FUZZ)
    add_test(NAME ${name} COMMAND sh -c
      "echo 'SKIP: ${name}: no clang with libFuzzer (apt-get install clang libclang-rt-dev)'; exit 77")
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
    return()
  endif()
  set(srcs ${dir}/${name}.c)
  set(deps ${dir}/fuzz.h)
  foreach(s ${F_SOURCES})
    list(APPEND srcs ${PROJECT_SOURCE_DIR}/${s})
  endforeach()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${name})
  add_custom_command(OUTPUT ${out}
    COMMAND ${SYM_FUZZ_CC} ${SYM_FUZZ_FLAGS} -I${PROJECT_SOURCE_DIR}/include -I${SYM_GEN_INCLUDE}
      -I${PROJECT_SOURCE_DIR}/src/train -I${PROJECT_SOURCE_DIR}/src ${srcs} -lz -lm -o ${out}
    DEPENDS ${srcs} ${deps} COMMENT "Building the fuzz target ${name} (clang, libFuzzer + ASan + UBSan)"
    VERBATIM)
  add_custom_target(${name}_build ALL DEPENDS ${out})
  add_test(NAME ${name} COMMAND ${dir}/run.sh ${out} ${dir}/seeds/${F_SEEDS}
    ${CMAKE_CURRENT_BINARY_DIR}/${name}.work ${SYM_FUZZ_SECONDS})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120)
endfunction()

sym_fuzz_test(fuzz_idx SEEDS idx SOURCES src/train/data/idx.c src/train/data/dataset.c
  src/train/core/error.c)
sym_fuzz_test(fuzz_shard SEEDS shard SOURCES src/train/data/tokens.c src/train/core/error.c)
