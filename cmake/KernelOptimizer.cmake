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
                    [CACHE_FILE <tuning-cache.json> [UPDATE_CACHE]]
                    [CASES_FROM <capture.json>]
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
    ``agent`` (the LLM agent rewrites the kernel) or ``hybrid`` (the agent
    proposes templates, the search tunes them); see KernelOptimizer's
    ``docs/agent.md``. The LLM settings (``OPENAI_API_KEY``,
    ``OPENAI_BASE_URL``, ``OPENAI_MODEL``, ...) are read from the environment
    of the build (``cmake --build``) when the tuning runs: they are never
    written into the build tree, and changing them does not re-run tuning.
    Project-wide default: ``KOPT_DEFAULT_STRATEGY``.

  ``SEARCH_STRATEGY``
    The parameter-search strategy; default: chosen by the size of the space.
    Only with ``STRATEGY search``.

  ``BUDGET``
    The tuning budget, e.g. ``evals=200`` or ``evals=500,minutes=20``:
    comma-separated items ``evals=N`` (or a bare ``N``), ``minutes=M`` (or
    ``Mm``) and ``patience=P``, N and P whole numbers of 1 or more, M a number
    greater than 0, each key at most once. Checked when configuring (a ``;``,
    as in ``"evals=10;minutes=2"``, is an error: use commas).
    Default: ``KOPT_DEFAULT_BUDGET``, else ``evals=100``.

  ``TARGET``
    Add the generated ``.cu`` to this existing target's sources and its folder
    to the target's include directories (for ``<name>_launch.h``).

  ``OUTPUT_VARIABLE``
    Instead of ``TARGET``: set this variable in the caller's scope to the
    generated ``.cu`` path.

  ``CACHE_FILE``
    A tuning cache (JSON) meant to be committed beside your sources. Without
    a GPU the build uses the cached kernel for the GPU named by
    ``KOPT_TARGET_GPU`` (or the only one cached), else the initial kernel,
    and says which. A cache made from another version of the spec is
    reported as stale and not used. The build only reads this file: after
    tuning on a GPU, the updated cache is written to
    ``${CMAKE_CURRENT_BINARY_DIR}/kernel_optimizer/<name>/<name>.tuning.json``
    (the ``<name>.benchmark`` test reads that copy); copy it over your file
    to commit the new tuning, or give ``UPDATE_CACHE``.

  ``UPDATE_CACHE``
    Let the build rewrite ``CACHE_FILE`` in place after tuning on a GPU.
    Default: ``KOPT_UPDATE_CACHE`` (OFF): a build never changes your source
    tree.

  ``CASES_FROM``
    A shape capture (the file the generated ``<name>_launch.h`` writes when
    the application runs with ``KOPT_CAPTURE=<file>``; KernelOptimizer's
    ``docs/capture.md``) or a cases file. Its shapes replace the spec's
    performance cases, each weighted by how often it ran; the spec's
    correctness cases stay. The tests ``<name>.correctness`` and
    ``<name>.benchmark`` run on the same cases. The file may not exist yet:
    the build then tunes on the spec's cases (and says so), and tunes again
    once it appears or changes. Relative to ``CMAKE_CURRENT_SOURCE_DIR``;
    a capture usually lives in the build tree
    (``${CMAKE_BINARY_DIR}/<name>.capture.json``).

  ``BENCHMARK_TOLERANCE``
    The ``<name>.benchmark`` test fails when the kernel is slower than the
    recorded best by more than this many percent. Default: 10.

  ``LABELS``
    Extra CTest labels; ``kernel_optimizer`` and ``correctness`` or
    ``benchmark`` are always set.

  ``PROPERTIES``
    Extra test properties, passed to ``set_tests_properties()``.

  Bad arguments stop the configure step with a message naming
  ``optimize_kernel()`` and the argument: besides unknown keywords and bad
  values, a ``SPEC``, ``TEMPLATE``, ``INITIAL_KERNEL`` or ``REFERENCE`` that
  does not exist or is a directory, an override file without a
  ``// kopt:entry`` line, and a ``template``/``initial``/``reference``
  ``source`` in the spec that does not exist (relative to the spec's folder;
  an override keyword replaces the spec's file and its check).

  Without a GPU the build never fails for lack of one, unless the cache
  variable ``KOPT_REQUIRE_GPU`` is ON. The tests exit with code 77 and show as
  skipped. A failing tuning run leaves the previous generated kernel in place.

  Tuning re-runs when a file it reads changes: the spec, the kernel sources
  and the files they ``#include "..."``, ``.npy`` inputs and golden outputs,
  the tuning cache, the ``kopt`` executable (``kopt generate`` writes a
  depfile naming them). Tuning commands never run at once under Ninja (they
  share its ``console`` pool); under Make, or in two builds at once, each
  ``kopt`` process takes the GPU's timing lock before it measures, so two
  never time on one GPU together.

  The tests declare CTest ``RESOURCE_GROUPS``: ``<name>.benchmark`` takes a
  whole GPU (``gpus:${KOPT_CTEST_GPU_SLOTS}``), ``<name>.correctness`` one
  slot (``gpus:1``), and both run on the GPU CTest gives them
  (``CTEST_RESOURCE_GROUP_0_GPUS``). Write the machine's resource spec file
  with ``kopt devices --ctest-resource-spec gpus.json``, then
  ``ctest -j 8 --resource-spec-file gpus.json`` runs one benchmark per GPU at
  a time. Without a resource spec file they run on GPU 0 (or the one
  ``CUDA_VISIBLE_DEVICES`` puts first), one at a time through the timing
  lock.

  Example:

  .. code-block:: cmake

    find_package(KernelOptimizer REQUIRED)
    add_executable(matmul main.cu)
    optimize_kernel(NAME sgemm SPEC kernels/sgemm.json TARGET matmul
                    CACHE_FILE kernels/sgemm.tuning.json BUDGET evals=200)

  then ``cmake --build build --target optimize_sgemm`` and ``ctest``.
#]=======================================================================]

# `cmake -D_KOPT_CASES_FROM=<file> -D_KOPT_CASES_STAMP=<stamp> -P KernelOptimizer.cmake`:
# the build step behind CASES_FROM. It writes the SHA-256 of the capture (or
# "missing") into the stamp, touching it only when that changes, so that the
# tuning, which depends on the stamp, runs again when the capture appears,
# changes or goes away, and not otherwise. (The capture is not in kopt
# generate's depfile: under Make a file that goes away would stay there.)
function(_kopt_update_cases_stamp from stamp)
  if(EXISTS "${from}" AND NOT IS_DIRECTORY "${from}")
    file(SHA256 "${from}" now)
  else()
    set(now "missing")
  endif()
  set(before "")
  if(EXISTS "${stamp}")
    file(READ "${stamp}" before)
  endif()
  if(NOT before STREQUAL now)
    file(WRITE "${stamp}" "${now}")
  endif()
endfunction()
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED _KOPT_CASES_STAMP)
  _kopt_update_cases_stamp("${_KOPT_CASES_FROM}" "${_KOPT_CASES_STAMP}")
  return()
endif()

include_guard(GLOBAL)

# Inside a function CMAKE_CURRENT_LIST_DIR is the caller's: remember ours.
set(_KOPT_MODULE_DIR "${CMAKE_CURRENT_LIST_DIR}" CACHE INTERNAL "KernelOptimizer module folder")

set(KOPT_DEFAULT_STRATEGY "search" CACHE STRING "Default STRATEGY of optimize_kernel()")
set(KOPT_DEFAULT_BUDGET "evals=100" CACHE STRING "Default BUDGET of optimize_kernel()")
option(KOPT_REQUIRE_GPU "Fail the build when a kernel cannot be tuned for lack of a GPU" OFF)
set(KOPT_TARGET_GPU "" CACHE STRING "GPU name whose tuning-cache entry builds without a GPU use")
option(KOPT_UPDATE_CACHE "Default of optimize_kernel(UPDATE_CACHE): the build rewrites CACHE_FILE after tuning" OFF)
set(KOPT_CTEST_GPU_SLOTS 4 CACHE STRING
    "Slots per GPU in the CTest resource spec file (kopt devices --ctest-slots): a benchmark test takes them all")

# BUDGET's grammar, as `kopt --budget` reads it: comma-separated items
# evals=N (or a bare N), minutes=M (or Mm), patience=P. `var` holds the value,
# `what` names it in the messages (BUDGET or KOPT_DEFAULT_BUDGET).
function(_kopt_check_budget var what)
  set(value "${${var}}")
  set(fix "e.g. ${what} evals=200 or ${what} evals=500,minutes=20")
  if(value STREQUAL "")
    message(FATAL_ERROR "optimize_kernel(): ${what} is empty; give a budget, ${fix}.")
  endif()
  string(FIND "${value}" ";" semicolon)
  if(NOT semicolon EQUAL -1)
    message(FATAL_ERROR "optimize_kernel(): ${what} '${value}' contains ';' (a CMake list): separate the "
                        "items with commas, ${fix}.")
  endif()
  if(value MATCHES "[ \t\r\n]")
    message(FATAL_ERROR "optimize_kernel(): ${what} '${value}' contains blanks: write the items without "
                        "spaces, separated by commas, ${fix}.")
  endif()
  string(REPLACE "," ";" items "${value}")
  set(seen "")
  foreach(item IN LISTS items)
    if(item STREQUAL "")
      message(FATAL_ERROR "optimize_kernel(): ${what} '${value}' has an empty item (two commas, or a comma at "
                          "an end), ${fix}.")
    endif()
    if(item MATCHES "^([^=]*)=(.*)$")
      set(key "${CMAKE_MATCH_1}")
      set(val "${CMAKE_MATCH_2}")
    elseif(item MATCHES "^[0-9]+$")
      set(key evals)
      set(val "${item}")
    elseif(item MATCHES "^(.*)m$")
      set(key minutes)
      set(val "${CMAKE_MATCH_1}")
    else()
      message(FATAL_ERROR "optimize_kernel(): ${what} item '${item}' is not KEY=VALUE (keys: evals, minutes, "
                          "patience), ${fix}.")
    endif()
    if(key STREQUAL "evaluations")
      set(key evals)
    elseif(key STREQUAL "min")
      set(key minutes)
    endif()
    if(NOT key MATCHES "^(evals|minutes|patience)$")
      message(FATAL_ERROR "optimize_kernel(): ${what} item '${item}': unknown key '${key}' (known: evals, "
                          "minutes, patience), ${fix}.")
    endif()
    if(key IN_LIST seen)
      message(FATAL_ERROR "optimize_kernel(): ${what} '${value}' gives ${key} twice; give it once, ${fix}.")
    endif()
    list(APPEND seen ${key})
    if(key STREQUAL "minutes")
      if(NOT val MATCHES "^([0-9]+([.][0-9]*)?|[.][0-9]+)$" OR val MATCHES "^0*[.]?0*$")
        message(FATAL_ERROR "optimize_kernel(): ${what} item '${item}': minutes must be a number greater than "
                            "0 (such as 20 or 0.5), ${fix}.")
      endif()
    elseif(NOT val MATCHES "^[0-9]+$" OR val MATCHES "^0+$")
      message(FATAL_ERROR "optimize_kernel(): ${what} item '${item}': ${key} must be a whole number of 1 or "
                          "more, ${fix}.")
    endif()
  endforeach()
endfunction()

# A file argument (or a file the spec names) must be a readable file, not a
# folder. `what` names it in the message.
function(_kopt_check_file path what hint)
  if(IS_DIRECTORY "${path}")
    message(FATAL_ERROR "optimize_kernel(): ${what} '${path}' is a directory, not a file.${hint}")
  endif()
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "optimize_kernel(): ${what} '${path}' does not exist.${hint}")
  endif()
endfunction()

function(optimize_kernel)
  block(SCOPE_FOR POLICIES)
  cmake_policy(VERSION 3.24...3.31)

  set(options UPDATE_CACHE)
  set(one_value NAME SPEC TEMPLATE INITIAL_KERNEL REFERENCE STRATEGY SEARCH_STRATEGY BUDGET TARGET
                OUTPUT_VARIABLE CACHE_FILE CASES_FROM BENCHMARK_TOLERANCE)
  set(multi_value LABELS PROPERTIES)
  cmake_parse_arguments(PARSE_ARGV 0 arg "${options}" "${one_value}" "${multi_value}")

  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "optimize_kernel(): unknown arguments '${arg_UNPARSED_ARGUMENTS}'. "
                        "Known keywords: NAME SPEC TEMPLATE INITIAL_KERNEL REFERENCE STRATEGY SEARCH_STRATEGY "
                        "BUDGET TARGET OUTPUT_VARIABLE CACHE_FILE UPDATE_CACHE CASES_FROM BENCHMARK_TOLERANCE LABELS "
                        "PROPERTIES.")
  endif()
  foreach(kw IN LISTS arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "optimize_kernel(): the keyword ${kw} needs a value, e.g. ${kw} <value>.")
  endforeach()
  # An empty value ("") leaves the keyword undefined without being reported
  # as missing (before CMake 3.31's CMP0174): find it among the arguments.
  if(ARGC GREATER 1)
    math(EXPR last "${ARGC} - 2")
    foreach(i RANGE 0 ${last})
      math(EXPR next "${i} + 1")
      if("${ARGV${i}}" IN_LIST one_value AND "${ARGV${next}}" STREQUAL "")
        message(FATAL_ERROR "optimize_kernel(): the keyword ${ARGV${i}} has an empty value; give one, "
                            "e.g. ${ARGV${i}} <value>.")
      endif()
    endforeach()
  endif()
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
  if(DEFINED arg_SEARCH_STRATEGY AND NOT arg_STRATEGY STREQUAL "search")
    message(FATAL_ERROR "optimize_kernel(): SEARCH_STRATEGY applies to STRATEGY search only, not to STRATEGY "
                        "${arg_STRATEGY}; drop SEARCH_STRATEGY or use STRATEGY search.")
  endif()
  if(NOT KOPT_CTEST_GPU_SLOTS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "optimize_kernel(): KOPT_CTEST_GPU_SLOTS '${KOPT_CTEST_GPU_SLOTS}' must be a whole "
                        "number of 1 or more (the slots per GPU of the CTest resource spec file), e.g. "
                        "-DKOPT_CTEST_GPU_SLOTS=4.")
  endif()
  if(arg_UPDATE_CACHE AND NOT DEFINED arg_CACHE_FILE)
    message(FATAL_ERROR "optimize_kernel(): UPDATE_CACHE needs CACHE_FILE <tuning-cache.json>, the file to update.")
  endif()
  if(NOT arg_UPDATE_CACHE AND KOPT_UPDATE_CACHE)
    set(arg_UPDATE_CACHE TRUE)
  endif()
  if(DEFINED arg_SEARCH_STRATEGY AND
     NOT arg_SEARCH_STRATEGY MATCHES "^(exhaustive|random|anneal|genetic|surrogate)$")
    message(FATAL_ERROR "optimize_kernel(): SEARCH_STRATEGY '${arg_SEARCH_STRATEGY}' is not one of "
                        "exhaustive, random, anneal, genetic, surrogate.")
  endif()
  if(DEFINED arg_BUDGET)
    _kopt_check_budget(arg_BUDGET BUDGET)
  else()
    set(arg_BUDGET "${KOPT_DEFAULT_BUDGET}")
    _kopt_check_budget(arg_BUDGET KOPT_DEFAULT_BUDGET)
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

  # Files: absolute, existing, not folders.
  foreach(kw SPEC TEMPLATE INITIAL_KERNEL REFERENCE CACHE_FILE)
    if(DEFINED arg_${kw})
      cmake_path(ABSOLUTE_PATH arg_${kw} BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
      if(kw STREQUAL "CACHE_FILE")
        if(IS_DIRECTORY "${arg_CACHE_FILE}")
          message(FATAL_ERROR "optimize_kernel(): CACHE_FILE '${arg_CACHE_FILE}' is a directory; name a JSON "
                              "file (it is created when missing).")
        endif()
      else()
        _kopt_check_file("${arg_${kw}}" "${kw} file"
                         " Check the path (relative paths are relative to ${CMAKE_CURRENT_SOURCE_DIR}).")
      endif()
    endif()
  endforeach()
  # An override file names its own entry point.
  foreach(kw TEMPLATE INITIAL_KERNEL REFERENCE)
    if(DEFINED arg_${kw})
      file(STRINGS "${arg_${kw}}" entry_lines REGEX "// kopt:entry[ \t]+[A-Za-z_]" LIMIT_COUNT 1)
      if(NOT entry_lines)
        message(FATAL_ERROR "optimize_kernel(): ${kw} file '${arg_${kw}}' has no '// kopt:entry NAME' line; "
                            "add one naming its __global__ function.")
      endif()
    endif()
  endforeach()

  # Everything the tuning depends on: the spec and the sources it names (each
  # must exist, or the build would stop at a missing dependency).
  file(SIZE "${arg_SPEC}" spec_size)
  if(spec_size GREATER 16777216)
    message(FATAL_ERROR "optimize_kernel(): SPEC '${arg_SPEC}' is ${spec_size} bytes; a spec is at most 16 MiB.")
  endif()
  file(READ "${arg_SPEC}" spec_text LIMIT 16777217)
  string(JSON spec_type ERROR_VARIABLE json_error TYPE "${spec_text}")
  if(json_error)
    message(FATAL_ERROR "optimize_kernel(): SPEC '${arg_SPEC}' is not valid JSON: ${json_error}")
  endif()
  if(NOT spec_type STREQUAL "OBJECT")
    message(FATAL_ERROR "optimize_kernel(): SPEC '${arg_SPEC}' is not a workload spec: its top level is "
                        "${spec_type}, not an object.")
  endif()
  cmake_path(GET arg_SPEC PARENT_PATH spec_dir)
  set(depends "${arg_SPEC}")
  foreach(key_kw template:TEMPLATE initial:INITIAL_KERNEL reference:REFERENCE)
    string(REPLACE ":" ";" pair "${key_kw}")
    list(GET pair 0 key)
    list(GET pair 1 kw)
    if(DEFINED arg_${kw})
      continue()  # the override replaces the spec's own file
    endif()
    string(JSON src_type ERROR_VARIABLE no_key TYPE "${spec_text}" ${key} source)
    if(no_key)
      continue()
    endif()
    if(NOT src_type STREQUAL "STRING")
      message(FATAL_ERROR "optimize_kernel(): SPEC '${arg_SPEC}': ${key}.source must be a string (a file "
                          "relative to the spec's folder), not ${src_type}.")
    endif()
    string(JSON src GET "${spec_text}" ${key} source)
    if(src STREQUAL "")
      message(FATAL_ERROR "optimize_kernel(): SPEC '${arg_SPEC}': ${key}.source is empty.")
    endif()
    set(abs_src "${src}")
    cmake_path(ABSOLUTE_PATH abs_src BASE_DIRECTORY "${spec_dir}" NORMALIZE)
    if(IS_DIRECTORY "${abs_src}" OR NOT EXISTS "${abs_src}")
      if(IS_DIRECTORY "${abs_src}")
        set(problem "is a directory, not a file")
      else()
        set(problem "does not exist")
      endif()
      message(FATAL_ERROR "optimize_kernel(): SPEC '${arg_SPEC}': ${key}.source '${src}' ${problem} "
                          "(${abs_src}). Paths in a spec are relative to the spec's folder; fix the path, or "
                          "pass ${kw} <file>.")
    endif()
    set(src "${abs_src}")
    list(APPEND depends "${src}")
  endforeach()
  string(JSON has_params ERROR_VARIABLE no_params GET "${spec_text}" tuning params)
  if(no_params AND NOT DEFINED arg_TEMPLATE)
    message(WARNING "optimize_kernel(${arg_NAME}): the spec '${arg_SPEC}' has no tuning.params: there is "
                    "no parameter space to search, so without a tuning cache the initial kernel is used.")
  endif()

  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/kernel_optimizer/${arg_NAME}")
  set(out_cu "${out_dir}/${arg_NAME}.cu")
  set(out_h "${out_dir}/${arg_NAME}_launch.h")
  set(out_d "${out_dir}/${arg_NAME}.d")
  set(cmd kopt::kopt generate --spec "${arg_SPEC}" --name "${arg_NAME}" --out-dir "${out_dir}"
          --budget "${arg_BUDGET}" --cache-dir "${CMAKE_BINARY_DIR}/kernel_optimizer/nvrtc-cache"
          --depfile "${out_d}")
  if(NOT arg_STRATEGY STREQUAL "search")
    # The agent's LLM settings come from the build's environment, never from here.
    list(APPEND cmd --strategy "${arg_STRATEGY}")
  endif()
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
  # CASES_FROM: a capture (or cases file) that may not exist yet. The tuning
  # depends on a stamp that an always-run step keeps at the file's SHA-256 or
  # "missing" (rewritten only when that changes), and kopt generate
  # --cases-from falls back to the spec's cases while the file is missing;
  # the cases it used go to <name>.cases.json, which the tests run on.
  set(cases_args "")
  if(DEFINED arg_CASES_FROM)
    cmake_path(ABSOLUTE_PATH arg_CASES_FROM BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    if(IS_DIRECTORY "${arg_CASES_FROM}")
      message(FATAL_ERROR "optimize_kernel(): CASES_FROM '${arg_CASES_FROM}' is a directory; name the capture "
                          "file (e.g. CASES_FROM \${CMAKE_BINARY_DIR}/${arg_NAME}.capture.json).")
    endif()
    if(EXISTS "${arg_CASES_FROM}")
      file(SIZE "${arg_CASES_FROM}" cases_size)
      if(cases_size GREATER 67108864)
        message(FATAL_ERROR "optimize_kernel(): CASES_FROM '${arg_CASES_FROM}' is ${cases_size} bytes; a cases "
                            "file or capture is at most 64 MiB.")
      endif()
      file(READ "${arg_CASES_FROM}" cases_text)
      string(JSON cases_type ERROR_VARIABLE json_error TYPE "${cases_text}")
      if(json_error)
        message(FATAL_ERROR "optimize_kernel(): CASES_FROM '${arg_CASES_FROM}' is not valid JSON: ${json_error}")
      endif()
      if(NOT cases_type MATCHES "^(OBJECT|ARRAY)$")
        message(FATAL_ERROR "optimize_kernel(): CASES_FROM '${arg_CASES_FROM}' is neither a shape capture nor a "
                            "cases file: its top level is ${cases_type}, not an object or an array.")
      endif()
    else()
      message(STATUS "optimize_kernel(${arg_NAME}): CASES_FROM '${arg_CASES_FROM}' does not exist yet: tuning on "
                     "the spec's cases; run the application with KOPT_CAPTURE=${arg_CASES_FROM} and the next "
                     "build tunes on the shapes it launched.")
    endif()
    set(cases_stamp "${CMAKE_CURRENT_BINARY_DIR}/kernel_optimizer/${arg_NAME}/${arg_NAME}.cases_from.stamp")
    set(cases_out "${CMAKE_CURRENT_BINARY_DIR}/kernel_optimizer/${arg_NAME}/${arg_NAME}.cases.json")
    _kopt_update_cases_stamp("${arg_CASES_FROM}" "${cases_stamp}")
    add_custom_target(kopt_cases_from_${arg_NAME}
                      COMMAND "${CMAKE_COMMAND}" "-D_KOPT_CASES_FROM=${arg_CASES_FROM}"
                              "-D_KOPT_CASES_STAMP=${cases_stamp}" -P "${_KOPT_MODULE_DIR}/KernelOptimizer.cmake"
                      BYPRODUCTS "${cases_stamp}"
                      VERBATIM)
    list(APPEND depends "${cases_stamp}")
    set(cases_args --input-cases "${cases_out}")
  endif()
  # Without UPDATE_CACHE the committed cache is only read; the updated one
  # (or a copy) lands in the build tree, where the benchmark test reads it.
  set(byproducts "")
  set(bench_cache "")
  if(DEFINED arg_CACHE_FILE)
    set(bench_cache "${arg_CACHE_FILE}")
    if(NOT arg_UPDATE_CACHE)
      set(bench_cache "${out_dir}/${arg_NAME}.tuning.json")
      list(APPEND cmd --cache-out "${bench_cache}")
      list(APPEND byproducts "${bench_cache}")
    endif()
  endif()
  if(DEFINED arg_CASES_FROM)
    list(APPEND cmd --cases-from "${arg_CASES_FROM}" --cases-out "${cases_out}")
    list(APPEND byproducts "${cases_out}")
  endif()
  if(KOPT_TARGET_GPU)
    list(APPEND cmd --target-gpu "${KOPT_TARGET_GPU}")
  endif()
  if(KOPT_REQUIRE_GPU)
    list(APPEND cmd --require-gpu)
  endif()

  set(cases_note "")
  if(DEFINED arg_CASES_FROM)
    cmake_path(GET arg_CASES_FROM FILENAME cases_name)
    set(cases_note ", on the shapes of ${cases_name} when it exists")
  endif()
  if(arg_UPDATE_CACHE)
    set(cache_note ", updating ${arg_CACHE_FILE}")
  else()
    set(cache_note "")
  endif()
  # USES_TERMINAL puts the command in Ninja's console pool: one tuning at a
  # time. The depfile adds every file the spec names (.npy inputs, golden
  # outputs, #included headers) to DEPENDS.
  add_custom_command(
    OUTPUT "${out_cu}" "${out_h}"
    BYPRODUCTS ${byproducts}
    COMMAND ${cmd}
    DEPENDS ${depends} kopt::kopt $<TARGET_FILE:kopt::kopt>
    DEPFILE "${out_d}"
    COMMENT "KernelOptimizer: generating ${arg_NAME} (tuned with ${arg_STRATEGY}, budget ${arg_BUDGET}${cases_note}, on a GPU${cache_note}; else from the tuning cache or the initial kernel)"
    USES_TERMINAL
    VERBATIM)
  set_source_files_properties("${out_cu}" "${out_h}" PROPERTIES GENERATED TRUE)
  add_custom_target(optimize_${arg_NAME} DEPENDS "${out_cu}" "${out_h}")
  if(DEFINED arg_CASES_FROM)
    add_dependencies(optimize_${arg_NAME} kopt_cases_from_${arg_NAME})
  endif()

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
  # Each test runs on the GPU CTest gives it under --resource-spec-file
  # (--device-from-ctest), else on GPU 0.
  add_test(NAME ${arg_NAME}.correctness
           COMMAND kopt::kopt evaluate --spec "${spec_for_tests}" ${cases_args} --kernel "${out_cu}" --no-time --quiet
                   --device-from-ctest --cache-dir "${CMAKE_BINARY_DIR}/kernel_optimizer/nvrtc-cache")
  set(bench_cmd kopt::kopt bench --spec "${spec_for_tests}" ${cases_args} --kernel "${out_cu}"
                --tolerance "${arg_BENCHMARK_TOLERANCE}" --device-from-ctest
                --cache-dir "${CMAKE_BINARY_DIR}/kernel_optimizer/nvrtc-cache"
                --benchmark_out=${out_dir}/${arg_NAME}.benchmark.json --benchmark_out_format=json)
  if(DEFINED arg_CACHE_FILE)
    list(APPEND bench_cmd --cache-file "${bench_cache}")
  endif()
  add_test(NAME ${arg_NAME}.benchmark COMMAND ${bench_cmd})
  # A correctness test takes one slot of a GPU, a benchmark all of them (the
  # whole GPU): `ctest -j --resource-spec-file` then runs one benchmark per
  # GPU at a time, and nothing else beside it there.
  set_tests_properties(${arg_NAME}.correctness PROPERTIES
                       SKIP_RETURN_CODE 77 RESOURCE_GROUPS "gpus:1"
                       LABELS "kernel_optimizer;correctness;${arg_LABELS}")
  set_tests_properties(${arg_NAME}.benchmark PROPERTIES
                       SKIP_RETURN_CODE 77 RESOURCE_GROUPS "gpus:${KOPT_CTEST_GPU_SLOTS}"
                       LABELS "kernel_optimizer;benchmark;${arg_LABELS}")
  if(arg_PROPERTIES)
    set_tests_properties(${arg_NAME}.correctness ${arg_NAME}.benchmark PROPERTIES ${arg_PROPERTIES})
  endif()
  endblock()
endfunction()
