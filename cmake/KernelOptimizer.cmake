# Distributed under the terms of the project's license.

#[=======================================================================[.rst:
KernelOptimizer
---------------

Tune a CUDA kernel at build time, compile the best validated version into your
targets, and gate merges on CTest correctness and benchmark tests.

.. command:: optimize_kernel

  ::

    optimize_kernel(NAME <name> SPEC <spec.json>
                    [TEMPLATE <template.cu>]
                    [INITIAL_KERNEL <kernel.cu>]
                    [REFERENCE <reference.cu>]
                    [STRATEGY search|agent|hybrid]
                    [SEARCH_STRATEGY <exhaustive|random|anneal|genetic|surrogate>]
                    [BUDGET <evals=N,minutes=M,patience=P>]
                    [TARGET <target> | OUTPUT_VARIABLE <var>]
                    [CACHE_FILE <tuning-cache.json>]
                    [BENCHMARK_TOLERANCE <percent>]
                    [LABELS <label>...]
                    [PROPERTIES <name> <value>...])

  ``NAME``
    The kernel's name: the generated files are
    ``${CMAKE_CURRENT_BINARY_DIR}/kernel_optimizer/<name>/<name>.cu`` and
    ``<name>_launch.h``, the target is ``optimize_<name>`` and the tests are
    ``<name>.correctness`` and ``<name>.benchmark``. A C identifier; unique
    in the project.

  ``SPEC``
    The workload spec (JSON; see KernelOptimizer's ``docs/spec-format.md``).
    Relative paths are relative to ``CMAKE_CURRENT_SOURCE_DIR``.

  ``TEMPLATE``, ``INITIAL_KERNEL``, ``REFERENCE``
    Override the spec's tunable template, initial kernel and reference kernel.
    Each file needs a ``// kopt:entry NAME`` line.

  ``STRATEGY``
    ``search`` (default, offline parameter search over the template),
    ``agent`` or ``hybrid`` (LLM proposer; not available in this version: an
    error says so). Project-wide default: ``KOPT_DEFAULT_STRATEGY``.

  ``SEARCH_STRATEGY``
    The parameter-search strategy; default: chosen by the size of the space.

  ``BUDGET``
    The tuning budget, e.g. ``evals=200`` or ``evals=500,minutes=20``.
    Default: ``KOPT_DEFAULT_BUDGET``, else ``evals=100``.

  ``TARGET``
    Add the generated ``.cu`` to this existing target's sources and its folder
    to the target's include directories (for ``<name>_launch.h``).

  ``OUTPUT_VARIABLE``
    Instead of ``TARGET``: set this variable in the caller's scope to the
    generated ``.cu`` path.

  ``CACHE_FILE``
    A tuning cache (JSON) meant to be committed beside your sources. On a
    machine with a GPU, tuning updates it; without a GPU the build uses the
    cached kernel for the GPU named by ``KOPT_TARGET_GPU`` (or the only one
    cached), else the initial kernel, and says which. A cache made from
    another version of the spec is reported as stale and not used.

  ``BENCHMARK_TOLERANCE``
    The ``<name>.benchmark`` test fails when the kernel is slower than the
    recorded best by more than this many percent. Default: 10.

  ``LABELS``
    Extra CTest labels; ``kernel_optimizer`` and ``correctness`` or
    ``benchmark`` are always set.

  ``PROPERTIES``
    Extra test properties, passed to ``set_tests_properties()``.

  Without a GPU the build never fails for lack of one, unless the cache
  variable ``KOPT_REQUIRE_GPU`` is ON. The tests exit with code 77 and show as
  skipped. A failing tuning run leaves the previous generated kernel in place.

  Example:

  .. code-block:: cmake

    find_package(KernelOptimizer REQUIRED)
    add_executable(matmul main.cu)
    optimize_kernel(NAME sgemm SPEC kernels/sgemm.json TARGET matmul
                    CACHE_FILE kernels/sgemm.tuning.json BUDGET evals=200)

  then ``cmake --build build --target optimize_sgemm`` and ``ctest``.
#]=======================================================================]

include_guard(GLOBAL)

# Inside a function CMAKE_CURRENT_LIST_DIR is the caller's: remember ours.
set(_KOPT_MODULE_DIR "${CMAKE_CURRENT_LIST_DIR}" CACHE INTERNAL "KernelOptimizer module folder")

set(KOPT_DEFAULT_STRATEGY "search" CACHE STRING "Default STRATEGY of optimize_kernel()")
set(KOPT_DEFAULT_BUDGET "evals=100" CACHE STRING "Default BUDGET of optimize_kernel()")
option(KOPT_REQUIRE_GPU "Fail the build when a kernel cannot be tuned for lack of a GPU" OFF)
set(KOPT_TARGET_GPU "" CACHE STRING "GPU name whose tuning-cache entry builds without a GPU use")

function(optimize_kernel)
  block(SCOPE_FOR POLICIES)
  cmake_policy(VERSION 3.24...3.31)

  set(options "")
  set(one_value NAME SPEC TEMPLATE INITIAL_KERNEL REFERENCE STRATEGY SEARCH_STRATEGY BUDGET TARGET
                OUTPUT_VARIABLE CACHE_FILE BENCHMARK_TOLERANCE)
  set(multi_value LABELS PROPERTIES)
  cmake_parse_arguments(PARSE_ARGV 0 arg "${options}" "${one_value}" "${multi_value}")

  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "optimize_kernel(): unknown arguments '${arg_UNPARSED_ARGUMENTS}'. "
                        "Known keywords: NAME SPEC TEMPLATE INITIAL_KERNEL REFERENCE STRATEGY SEARCH_STRATEGY "
                        "BUDGET TARGET OUTPUT_VARIABLE CACHE_FILE BENCHMARK_TOLERANCE LABELS PROPERTIES.")
  endif()
  foreach(kw IN LISTS arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "optimize_kernel(): the keyword ${kw} needs a value, e.g. ${kw} <value>.")
  endforeach()
  foreach(req NAME SPEC)
    if(NOT DEFINED arg_${req})
      message(FATAL_ERROR "optimize_kernel(): ${req} is required, e.g. "
                          "optimize_kernel(NAME sgemm SPEC sgemm.json TARGET my_app).")
    endif()
  endforeach()
  if(NOT arg_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "optimize_kernel(): NAME '${arg_NAME}' must be a C identifier "
                        "(letters, digits, underscores), since it names a header namespace.")
  endif()
  get_property(seen GLOBAL PROPERTY _KOPT_KERNEL_NAMES)
  if("${arg_NAME}" IN_LIST seen)
    message(FATAL_ERROR "optimize_kernel(): NAME '${arg_NAME}' is already used by another "
                        "optimize_kernel() call; give each kernel its own NAME.")
  endif()
  set_property(GLOBAL APPEND PROPERTY _KOPT_KERNEL_NAMES "${arg_NAME}")

  if(NOT DEFINED arg_STRATEGY)
    set(arg_STRATEGY "${KOPT_DEFAULT_STRATEGY}")
  endif()
  if(NOT arg_STRATEGY MATCHES "^(search|agent|hybrid)$")
    message(FATAL_ERROR "optimize_kernel(): STRATEGY '${arg_STRATEGY}' is not one of search, agent, hybrid.")
  endif()
  if(NOT arg_STRATEGY STREQUAL "search")
    message(FATAL_ERROR "optimize_kernel(): STRATEGY ${arg_STRATEGY} (the LLM proposer) is not available in "
                        "this version of KernelOptimizer; use STRATEGY search.")
  endif()
  if(DEFINED arg_SEARCH_STRATEGY AND
     NOT arg_SEARCH_STRATEGY MATCHES "^(exhaustive|random|anneal|genetic|surrogate)$")
    message(FATAL_ERROR "optimize_kernel(): SEARCH_STRATEGY '${arg_SEARCH_STRATEGY}' is not one of "
                        "exhaustive, random, anneal, genetic, surrogate.")
  endif()
  if(NOT DEFINED arg_BUDGET)
    set(arg_BUDGET "${KOPT_DEFAULT_BUDGET}")
  endif()
  if(NOT DEFINED arg_BENCHMARK_TOLERANCE)
    set(arg_BENCHMARK_TOLERANCE 10)
  endif()
  if(NOT arg_BENCHMARK_TOLERANCE MATCHES "^[0-9]+([.][0-9]+)?$")
    message(FATAL_ERROR "optimize_kernel(): BENCHMARK_TOLERANCE '${arg_BENCHMARK_TOLERANCE}' must be a "
                        "non-negative number of percent, e.g. BENCHMARK_TOLERANCE 10.")
  endif()
  if(DEFINED arg_TARGET AND DEFINED arg_OUTPUT_VARIABLE)
    message(FATAL_ERROR "optimize_kernel(): give TARGET or OUTPUT_VARIABLE, not both.")
  endif()
  if(DEFINED arg_TARGET AND NOT TARGET "${arg_TARGET}")
    message(FATAL_ERROR "optimize_kernel(): TARGET '${arg_TARGET}' is not a target. Create it first "
                        "(add_executable/add_library) or use OUTPUT_VARIABLE.")
  endif()
  if(NOT TARGET kopt::kopt)
    message(FATAL_ERROR "optimize_kernel(): the kopt tool target (kopt::kopt) is not defined: use "
                        "find_package(KernelOptimizer) or add_subdirectory() of KernelOptimizer first.")
  endif()

  # Files: absolute, existing.
  foreach(kw SPEC TEMPLATE INITIAL_KERNEL REFERENCE CACHE_FILE)
    if(DEFINED arg_${kw})
      cmake_path(ABSOLUTE_PATH arg_${kw} BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
      if(NOT kw STREQUAL "CACHE_FILE" AND NOT EXISTS "${arg_${kw}}")
        message(FATAL_ERROR "optimize_kernel(): ${kw} file '${arg_${kw}}' does not exist. "
                            "Check the path (relative paths are relative to ${CMAKE_CURRENT_SOURCE_DIR}).")
      endif()
    endif()
  endforeach()

  # Everything the tuning depends on: the spec and the sources it names.
  file(READ "${arg_SPEC}" spec_text)
  string(JSON spec_error ERROR_VARIABLE json_error TYPE "${spec_text}")
  if(json_error)
    message(FATAL_ERROR "optimize_kernel(): SPEC '${arg_SPEC}' is not valid JSON: ${json_error}")
  endif()
  cmake_path(GET arg_SPEC PARENT_PATH spec_dir)
  set(depends "${arg_SPEC}")
  foreach(key template initial reference)
    string(JSON src ERROR_VARIABLE no_key GET "${spec_text}" ${key} source)
    if(NOT no_key AND src)
      cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${spec_dir}" NORMALIZE)
      list(APPEND depends "${src}")
    endif()
  endforeach()
  string(JSON has_params ERROR_VARIABLE no_params GET "${spec_text}" tuning params)
  if(no_params AND NOT DEFINED arg_TEMPLATE)
    message(WARNING "optimize_kernel(${arg_NAME}): the spec '${arg_SPEC}' has no tuning.params: there is "
                    "no parameter space to search, so without a tuning cache the initial kernel is used.")
  endif()

  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/kernel_optimizer/${arg_NAME}")
  set(out_cu "${out_dir}/${arg_NAME}.cu")
  set(out_h "${out_dir}/${arg_NAME}_launch.h")
  set(cmd kopt::kopt generate --spec "${arg_SPEC}" --name "${arg_NAME}" --out-dir "${out_dir}"
          --budget "${arg_BUDGET}" --cache-dir "${CMAKE_BINARY_DIR}/kernel_optimizer/nvrtc-cache")
  foreach(kw_flag TEMPLATE:--template INITIAL_KERNEL:--initial-kernel REFERENCE:--reference
                  SEARCH_STRATEGY:--strategy CACHE_FILE:--cache-file)
    string(REPLACE ":" ";" pair "${kw_flag}")
    list(GET pair 0 kw)
    list(GET pair 1 flag)
    if(DEFINED arg_${kw})
      list(APPEND cmd ${flag} "${arg_${kw}}")
      if(NOT kw MATCHES "STRATEGY|CACHE_FILE")
        list(APPEND depends "${arg_${kw}}")
      endif()
    endif()
  endforeach()
  if(DEFINED arg_CACHE_FILE AND EXISTS "${arg_CACHE_FILE}")
    list(APPEND depends "${arg_CACHE_FILE}")
  endif()
  if(KOPT_TARGET_GPU)
    list(APPEND cmd --target-gpu "${KOPT_TARGET_GPU}")
  endif()
  if(KOPT_REQUIRE_GPU)
    list(APPEND cmd --require-gpu)
  endif()

  add_custom_command(
    OUTPUT "${out_cu}" "${out_h}"
    COMMAND ${cmd}
    DEPENDS ${depends} kopt::kopt $<TARGET_FILE:kopt::kopt>
    COMMENT "KernelOptimizer: generating ${arg_NAME} (tuned with ${arg_STRATEGY}, budget ${arg_BUDGET}, on a GPU; else from the tuning cache or the initial kernel)"
    USES_TERMINAL
    VERBATIM)
  set_source_files_properties("${out_cu}" "${out_h}" PROPERTIES GENERATED TRUE)
  add_custom_target(optimize_${arg_NAME} DEPENDS "${out_cu}" "${out_h}")

  if(DEFINED arg_TARGET)
    target_sources(${arg_TARGET} PRIVATE "${out_cu}")
    target_include_directories(${arg_TARGET} PRIVATE "${out_dir}")
    add_dependencies(${arg_TARGET} optimize_${arg_NAME})
  elseif(DEFINED arg_OUTPUT_VARIABLE)
    set(${arg_OUTPUT_VARIABLE} "${out_cu}" PARENT_SCOPE)
  endif()

  # Tests: correctness on every case with fresh inputs; benchmark against the
  # recorded best. Exit code 77 (no GPU) shows as skipped.
  set(spec_for_tests "${arg_SPEC}")
  add_test(NAME ${arg_NAME}.correctness
           COMMAND kopt::kopt evaluate --spec "${spec_for_tests}" --kernel "${out_cu}" --no-time --quiet
                   --cache-dir "${CMAKE_BINARY_DIR}/kernel_optimizer/nvrtc-cache")
  set(bench_cmd kopt::kopt bench --spec "${spec_for_tests}" --kernel "${out_cu}"
                --tolerance "${arg_BENCHMARK_TOLERANCE}"
                --cache-dir "${CMAKE_BINARY_DIR}/kernel_optimizer/nvrtc-cache"
                --benchmark_out=${out_dir}/${arg_NAME}.benchmark.json --benchmark_out_format=json)
  if(DEFINED arg_CACHE_FILE)
    list(APPEND bench_cmd --cache-file "${arg_CACHE_FILE}")
  endif()
  add_test(NAME ${arg_NAME}.benchmark COMMAND ${bench_cmd})
  set_tests_properties(${arg_NAME}.correctness PROPERTIES
                       SKIP_RETURN_CODE 77 LABELS "kernel_optimizer;correctness;${arg_LABELS}")
  set_tests_properties(${arg_NAME}.benchmark PROPERTIES
                       SKIP_RETURN_CODE 77 RUN_SERIAL TRUE LABELS "kernel_optimizer;benchmark;${arg_LABELS}")
  if(arg_PROPERTIES)
    set_tests_properties(${arg_NAME}.correctness ${arg_NAME}.benchmark PROPERTIES ${arg_PROPERTIES})
  endif()
  endblock()
endfunction()
