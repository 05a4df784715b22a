# -DDDPLAB_GPU_ONLY=ON: only what the GPU check machine can build (CUDA toolkit, NCCL, no MPI, OpenBLAS,
# SQLite, Qt or SimGrid): the schedules and codecs of strategies/, the runtime's MLP, data loader, schedule
# executor, collective bench and reference ops, the CUDA backend, the NCCL communicator, the gpu tests and bench/gpu.
# Header-only dependencies and GoogleTest come from the system when present, else from the bundle that
# scripts/gpu-bundle.sh prepares (DDPLAB_BUNDLE_DIR).
set(DDPLAB_BUNDLE_DIR "${PROJECT_SOURCE_DIR}/.gpu-bundle" CACHE PATH "Headers, googletest and data carried to the GPU machine")
include(DdplabCuda)
if(NOT DDPLAB_HAVE_CUDA)
  message(FATAL_ERROR "DDPLAB_GPU_ONLY=ON needs the CUDA toolkit (none found; set CMAKE_CUDA_COMPILER)")
endif()
find_package(Threads REQUIRED)

find_package(fmt QUIET)
if(NOT TARGET fmt::fmt)  # fmt in header-only mode from the bundle
  add_library(fmt::fmt INTERFACE IMPORTED)
  set_target_properties(fmt::fmt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${DDPLAB_BUNDLE_DIR}/include
                                            INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
endif()
find_package(ZLIB QUIET)
if(NOT TARGET ZLIB::ZLIB)  # zlib's runtime is everywhere; its headers may not be: take them from the bundle
  find_library(DDPLAB_LIBZ NAMES z libz.so.1 REQUIRED)
  add_library(ZLIB::ZLIB UNKNOWN IMPORTED)
  set_target_properties(ZLIB::ZLIB PROPERTIES IMPORTED_LOCATION ${DDPLAB_LIBZ}
                                              INTERFACE_INCLUDE_DIRECTORIES ${DDPLAB_BUNDLE_DIR}/include)
endif()

# Header-only from the bundle when the system has none: nlohmann/json, and toml++ in its header-only mode.
find_package(nlohmann_json QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${DDPLAB_BUNDLE_DIR}/include)
endif()
add_library(ddplab_toml INTERFACE)
target_include_directories(ddplab_toml SYSTEM INTERFACE ${DDPLAB_BUNDLE_DIR}/include)
target_compile_definitions(ddplab_toml INTERFACE TOML_HEADER_ONLY=1)

# The scenario types the strategies are configured with (no results store: no SQLite here).
set(_c ${PROJECT_SOURCE_DIR}/core)
add_library(ddplab_core STATIC ${_c}/src/units.cpp ${_c}/src/scenario.cpp ${_c}/src/cluster_presets.cpp
  ${_c}/src/step_pattern.cpp)
target_include_directories(ddplab_core PUBLIC ${_c}/include)
target_link_libraries(ddplab_core PUBLIC nlohmann_json::nlohmann_json fmt::fmt PRIVATE ddplab_toml)

# All of strategies/: the PlanExecutor runs on the GPU too (bench/gpu/gpu_train.cpp, tests/gpu).
set(_s ${PROJECT_SOURCE_DIR}/strategies)
file(GLOB _sched CONFIGURE_DEPENDS ${_s}/src/*.cpp ${_s}/src/schedules/*.cpp ${_s}/src/codecs/*.cpp ${_s}/src/policies/*.cpp
     ${_s}/src/optimizers/*.cpp)
add_library(ddplab_strategies STATIC ${_sched})
set_source_files_properties(${_s}/src/codecs/host_compute.cpp PROPERTIES COMPILE_OPTIONS "-fno-math-errno;-ffp-contract=off")
target_include_directories(ddplab_strategies PUBLIC ${_s}/include PRIVATE ${_s}/src)
target_link_libraries(ddplab_strategies PUBLIC ddplab_core PRIVATE fmt::fmt)
target_compile_definitions(ddplab_strategies PRIVATE DDPLAB_MODELS_DIR="${_s}/models")

set(_r ${PROJECT_SOURCE_DIR}/runtime)
add_library(ddplab_runtime STATIC ${_r}/cpu/reference_ops.cpp ${_r}/cpu/host_layers.cpp ${_r}/src/model.cpp ${_r}/src/cnn.cpp ${_r}/src/collective_bench.cpp ${_r}/src/data.cpp ${_r}/src/input_pipeline.cpp ${_r}/src/link_probe.cpp ${_r}/src/mlp.cpp
                                  ${_r}/src/model_optimizer.cpp ${_r}/src/slowdown.cpp ${_r}/src/augment.cpp
                                  ${_r}/src/plan_executor.cpp ${_r}/src/plan_executor_comm.cpp ${_r}/src/single_process_communicator.cpp
                                  ${_r}/src/schedule_executor.cpp)
target_include_directories(ddplab_runtime PUBLIC ${_r}/include)
target_compile_definitions(ddplab_runtime PUBLIC DDPLAB_GPU_ONLY=1)
target_link_libraries(ddplab_runtime PUBLIC ddplab_strategies PRIVATE ZLIB::ZLIB fmt::fmt Threads::Threads)
add_subdirectory(${_r}/cuda ${CMAKE_BINARY_DIR}/runtime/cuda)  # adds the plugin loader to ddplab_runtime
if(NOT DDPLAB_HAVE_NCCL)
  message(FATAL_ERROR "DDPLAB_GPU_ONLY=ON needs NCCL (set NCCL_ROOT)")
endif()
add_subdirectory(${_r}/nccl ${CMAKE_BINARY_DIR}/runtime/nccl)

if(DDPLAB_BUILD_TESTS)
  enable_testing()
  find_package(GTest QUIET)
  if(NOT TARGET GTest::gtest_main)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory(${DDPLAB_BUNDLE_DIR}/googletest ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  endif()
  include(GoogleTest)
  function(ddplab_gtest name label)  # as in tests/CMakeLists.txt
    add_executable(${name} ${ARGN})
    target_link_libraries(${name} PRIVATE GTest::gtest_main)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)  # shared helpers
    gtest_discover_tests(${name} PROPERTIES LABELS ${label} DISCOVERY_TIMEOUT 60)
  endfunction()
  add_subdirectory(${PROJECT_SOURCE_DIR}/tests/gpu ${CMAKE_BINARY_DIR}/tests/gpu)
endif()
add_subdirectory(${PROJECT_SOURCE_DIR}/bench/gpu ${CMAKE_BINARY_DIR}/bench/gpu)
message(STATUS "ddplab GPU-only build: bundle ${DDPLAB_BUNDLE_DIR}")
