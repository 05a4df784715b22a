# The fuzz build (preset "fuzz"): the libraries that read outside input (core, strategies, and the runtime's
# IDX reader) instrumented for libFuzzer with ASan and UBSan, and one harness per reader (tests/fuzz).
# Needs clang; Debian's clang 14 carries libFuzzer in libclang-rt-14-dev.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "DDPLAB_FUZZ needs clang (libFuzzer); configure with the fuzz preset, got ${CMAKE_CXX_COMPILER_ID}")
endif()
find_package(tomlplusplus REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)
# A UBSan finding aborts (as a crash) rather than printing and going on.
set(_fuzz_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_compile_options(-fsanitize=fuzzer-no-link ${_fuzz_flags})
add_link_options(${_fuzz_flags})
set(DDPLAB_FUZZ_LINK -fsanitize=fuzzer)
include(DdplabFastBuild)
add_subdirectory(core)
add_subdirectory(strategies)
enable_testing()
add_subdirectory(tests/fuzz)
