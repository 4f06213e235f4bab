# Fuzz targets (tests/fuzz/): one per parser of strangers' bytes, each a
# LLVMFuzzerTestOneInput over the parser's public entry point.
#  - IDLEGRID_FUZZ=ON (clang only; scripts/fuzz.sh configures it): libFuzzer
#    binaries. Configure with everything instrumented, for example
#      CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja \
#        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDLEGRID_FUZZ=ON \
#        -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1" \
#        -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1"
#    and build only the <name>_fuzz targets.
#  - otherwise (the ordinary gcc build): plain programs whose main()
#    (replay_main.cc) runs the committed corpus, tests/fuzz/corpus/<name>/,
#    as the ctest fuzz_corpus_<name>.
# Included from the top-level CMakeLists.txt, after the modules are defined.
option(IDLEGRID_FUZZ "Build the fuzz targets as libFuzzer binaries (clang; scripts/fuzz.sh)" OFF)

# <name>:<libraries, comma-separated>; the target is <name>_fuzz, its source
# tests/fuzz/<name>_fuzz.cc.
set(IDLEGRID_FUZZ_TARGETS
    "manifest:ig_manifest"
    "items:ig_manifest"
    "api_json:ig_manifest"
    "task_ranges:ig_jobs"
    "tar:ig_image"
    "oci_archive:ig_image"
    "registry_manifest:ig_registry,ig_image"
    "pilot:ig_runtime"
    "receipt:ig_receipt"
    "policy:ig_agent")

if(IDLEGRID_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "IDLEGRID_FUZZ needs clang (libFuzzer): configure with CXX=clang++-14 (scripts/fuzz.sh)")
  endif()
  # The pilot is linked -static, which the sanitizers cannot be; it is built
  # because ig_runtime embeds it, and is not what is fuzzed.
  target_compile_options(idlegrid-pilot PRIVATE -fno-sanitize=all)
  target_link_options(idlegrid-pilot PRIVATE -fno-sanitize=all)
endif()

foreach(entry ${IDLEGRID_FUZZ_TARGETS})
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 name)
  list(GET parts 1 libs)
  string(REPLACE "," ";" libs "${libs}")
  set(corpus ${CMAKE_CURRENT_LIST_DIR}/corpus/${name})
  if(IDLEGRID_FUZZ)
    add_executable(${name}_fuzz ${CMAKE_CURRENT_LIST_DIR}/${name}_fuzz.cc)
    target_compile_options(${name}_fuzz PRIVATE -fsanitize=fuzzer)
    target_link_options(${name}_fuzz PRIVATE -fsanitize=fuzzer)
    # -runs=0: replay the committed corpus once, fuzzing nothing.
    add_test(NAME fuzz_corpus_${name} COMMAND ${name}_fuzz -runs=0 ${corpus})
  else()
    add_executable(${name}_fuzz ${CMAKE_CURRENT_LIST_DIR}/${name}_fuzz.cc ${CMAKE_CURRENT_LIST_DIR}/replay_main.cc)
    add_test(NAME fuzz_corpus_${name} COMMAND ${name}_fuzz ${corpus})
  endif()
  target_link_libraries(${name}_fuzz PRIVATE ${libs})
  set_tests_properties(fuzz_corpus_${name} PROPERTIES TIMEOUT 120)
endforeach()
