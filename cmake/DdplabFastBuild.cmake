# What keeps a clean build of the whole suite inside CI's budget on 2 cores (docs/testing.md, "Suite time").

# The tests, the CLI, core and strategies compile in batches of sources (CMake's unity build): their heavy
# headers (GoogleTest, CLI11, nlohmann/json, ddplab's own) are parsed once a batch, not once a file. A batch
# shares one anonymous namespace, so file-local names must differ within a target. Turn it off to rebuild
# one file alone while editing it.
option(DDPLAB_UNITY_BUILD "Compile the tests, the CLI, core and strategies in batches of sources" ON)

# ddplab_unity(TARGET): batches of 8 sources.
function(ddplab_unity target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ${DDPLAB_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 8)
endfunction()

# Precompiled headers: the standard and third-party headers that nearly every source of a target includes are
# parsed once a target, not once a source. ddplab's own headers stay out: they change often.
option(DDPLAB_PCH "Precompile the heavy third-party headers of each library, the CLI and the tests" ON)

set(DDPLAB_PCH_COMMON
  <algorithm> <cmath> <cstdint> <functional> <map> <memory> <optional> <set> <stdexcept> <string>
  <string_view> <utility> <vector>
  <fmt/format.h> <nlohmann/json.hpp>)

# lld (Debian package lld) links faster than the default linker; the suite links about a hundred executables.
include(CheckLinkerFlag)
check_linker_flag(CXX -fuse-ld=lld DDPLAB_HAVE_LLD)
if(DDPLAB_HAVE_LLD AND NOT DDPLAB_FUZZ)
  add_link_options(-fuse-ld=lld)
endif()

# ddplab_precompile(TARGET [HEADER...]): the common set plus the target's own heavy headers.
function(ddplab_precompile target)
  if(DDPLAB_PCH)
    target_precompile_headers(${target} PRIVATE ${DDPLAB_PCH_COMMON} ${ARGN})
  endif()
endfunction()

# ddplab_precompile_like(TARGET DONOR): TARGET uses DONOR's precompiled header (same compiler flags), for
# the many one-source test executables that would otherwise each precompile the same headers.
function(ddplab_precompile_like target donor)
  if(DDPLAB_PCH)
    target_precompile_headers(${target} REUSE_FROM ${donor})
  endif()
endfunction()
