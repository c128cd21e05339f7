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
                    [STRATEGY <search|agent|hybrid|search strategy>]
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
    What proposes the candidates: ``search`` (the default: the offline
    parameter search over the template, with the strategy kopt chooses for
    the size of the space), or any name ``kopt optimize --strategy`` takes:
    a parameter-search strategy (``exhaustive``, ``random``, ``anneal``, ...;
    KernelOptimizer's ``docs/search.md``), ``agent`` (the LLM agent rewrites
    the kernel) or ``hybrid`` (the agent proposes templates, the search tunes
    them; ``docs/agent.md``). The names are kopt's: a strategy added to kopt
    is accepted here as it is. The LLM settings (``OPENAI_API_KEY``,
    ``OPENAI_BASE_URL``, ``OPENAI_MODEL``, ...) are read from the environment
    of the build (``cmake --build``) when the tuning runs: they are never
    written into the build tree, and changing them does not re-run tuning.
    Default: ``KOPT_DEFAULT_STRATEGY``.

  ``SEARCH_STRATEGY``
    Deprecated: ``SEARCH_STRATEGY <s>`` is ``STRATEGY <s>`` (with a
    deprecation warning); it may not be given with another ``STRATEGY`` than
    ``search``.

  ``BUDGET``
    The tuning budget as ``kopt --budget`` reads it (KernelOptimizer's
    ``docs/cli.md``), e.g. ``evals=200`` or ``evals=500,minutes=20``. A ``;``,
    as in ``"evals=10;minutes=2"``, is an error: it makes a CMake list; use
    commas. Default: ``KOPT_DEFAULT_BUDGET``.

  ``TARGET``
    Add the generated ``.cu`` to this existing target's sources and its folder
    to the target's include directories (for ``<name>_launch.h``).

  ``OUTPUT_VARIABLE``
    Instead of ``TARGET``: set this variable in the caller's scope to the
    generated ``.cu`` path. Add it to a target of the calling directory: the
    compile options below are source properties of that directory.

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
    Default: ``KOPT_UPDATE_CACHE``: a build never changes your source tree.

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
  ``optimize_kernel()`` and the argument. The module checks the call itself:
  unknown keywords, missing or empty values, ``NAME``, ``TARGET``, a
  ``SPEC``, override file, ``CACHE_FILE`` or ``CASES_FROM`` that is a
  directory (or, but for the last two, does not exist). The rest is kopt's
  to judge: where kopt exists when configuring (``find_package``), the
  build's ``kopt generate`` command line runs with ``--check``, and a
  ``BUDGET``, ``STRATEGY``, spec (its JSON, the files it names), override
  file or ``CASES_FROM`` file that kopt would reject stops the configure step
  with kopt's message. Where kopt is built by the same build
  (``add_subdirectory``, FetchContent) it does not exist yet: ``kopt
  generate`` gives the same messages when ``optimize_<name>`` builds.

  The generated ``.cu`` compiles with the NVRTC options the kernel was tuned
  with (the spec's ``compile_options``, the kernel file's ``// kopt:options``
  line, e.g. ``-use_fast_math``): ``kopt generate`` writes them in nvcc's
  spelling to ``<name>.nvcc_options`` beside it, and the module appends
  ``--options-file=<that file>`` to the source's ``COMPILE_OPTIONS`` (under
  nvcc; in the calling directory and, with ``TARGET``, the target's), after
  the target's own flags. ``-arch`` is left out (``CUDA_ARCHITECTURES``
  decides), and an option kopt cannot translate is a warning of the build.

  Without a GPU the build never fails for lack of one, unless
  ``KOPT_REQUIRE_GPU`` is ON. The tests exit with code 77 and show as
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

Variables
^^^^^^^^^

  ================================= ========== ===============================
  Variable                          Default    Meaning
  ================================= ========== ===============================
  ``KOPT_DEFAULT_STRATEGY``         ``search`` Cache. ``STRATEGY`` of the calls
                                               that give none.
  ``KOPT_DEFAULT_BUDGET``           (empty)    Cache. ``BUDGET`` of the calls
                                               that give none; empty: kopt's
                                               default (``evals=100``).
  ``KOPT_REQUIRE_GPU``              ``OFF``    Cache. ON: a build that cannot
                                               tune for lack of a GPU fails
                                               (``kopt generate
                                               --require-gpu``).
  ``KOPT_TARGET_GPU``               (empty)    Cache. Without a GPU, use the
                                               ``CACHE_FILE`` entry of the GPU
                                               of this name.
  ``KOPT_UPDATE_CACHE``             ``OFF``    Cache. ``UPDATE_CACHE`` for
                                               every call.
  ``KOPT_CTEST_GPU_SLOTS``          ``4``      Cache. Slots per GPU of the
                                               CTest resource spec file
                                               (``kopt devices
                                               --ctest-slots``): a benchmark
                                               test takes them all.
  ``KernelOptimizer_TEMPLATES_DIR`` (set)      Set by ``find_package`` and
                                               ``add_subdirectory``: the
                                               bundled workload templates
                                               (``sgemm/sgemm.json``).
  ================================= ========== ===============================

Example
^^^^^^^

  .. code-block:: cmake

    find_package(KernelOptimizer REQUIRED)
    add_executable(matmul main.cu)
    optimize_kernel(NAME sgemm SPEC kernels/sgemm.json TARGET matmul
                    CACHE_FILE kernels/sgemm.tuning.json BUDGET evals=200)

  then ``cmake --build build --target optimize_sgemm`` and ``ctest``.
#]=======================================================================]

if(CMAKE_VERSION VERSION_LESS 3.25)
  message(FATAL_ERROR "KernelOptimizer.cmake needs CMake 3.25 or newer (block()); this is CMake ${CMAKE_VERSION}.")
endif()

# The module's own policies: each function below records them where it is
# defined and runs with them, whatever the including project has set. 3.25:
# block(); 3.31: the newest CMake the module's tests have run with.
block(SCOPE_FOR POLICIES)
cmake_policy(VERSION 3.25...3.31)

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

# The cache variables of the "Variables" table above.
set(KOPT_DEFAULT_STRATEGY "search" CACHE STRING "Default STRATEGY of optimize_kernel()")
set(KOPT_DEFAULT_BUDGET "" CACHE STRING "Default BUDGET of optimize_kernel() (empty: kopt's default)")
option(KOPT_REQUIRE_GPU "Fail the build when a kernel cannot be tuned for lack of a GPU" OFF)
set(KOPT_TARGET_GPU "" CACHE STRING "GPU name whose tuning-cache entry builds without a GPU use")
option(KOPT_UPDATE_CACHE "Default of optimize_kernel(UPDATE_CACHE): the build rewrites CACHE_FILE after tuning" OFF)
set(KOPT_CTEST_GPU_SLOTS 4 CACHE STRING
    "Slots per GPU in the CTest resource spec file (kopt devices --ctest-slots): a benchmark test takes them all")

# message(FATAL_ERROR "optimize_kernel(): " ...): the arguments joined, ';'
# in them kept.
function(_kopt_fail)
  set(text "")
  math(EXPR last "${ARGC} - 1")
  foreach(i RANGE ${last})
    string(APPEND text "${ARGV${i}}")
  endforeach()
  message(FATAL_ERROR "optimize_kernel(): ${text}")
endfunction()

# The call's shape: unknown keywords, keywords without a value or with an
# empty one, NAME and SPEC. `argv` is the call's "${ARGV}": its empty
# elements are the empty values that cmake_parse_arguments() drops before
# CMake 3.31 (CMP0174).
function(_kopt_check_keywords argv)
  if(arg_UNPARSED_ARGUMENTS)
    list(JOIN keywords " " known)
    _kopt_fail("unknown arguments '${arg_UNPARSED_ARGUMENTS}'. Known keywords: ${known}.")
  endif()
  foreach(kw IN LISTS arg_KEYWORDS_MISSING_VALUES)
    _kopt_fail("the keyword ${kw} needs a value, e.g. ${kw} <value>.")
  endforeach()
  set(previous "")
  foreach(word IN LISTS argv)
    if(word STREQUAL "" AND previous IN_LIST one_value)
      _kopt_fail("the keyword ${previous} has an empty value; give one, e.g. ${previous} <value>.")
    endif()
    set(previous "${word}")
  endforeach()
  foreach(required NAME SPEC)
    if(NOT DEFINED arg_${required})
      _kopt_fail("${required} is required, e.g. optimize_kernel(NAME sgemm SPEC sgemm.json TARGET my_app).")
    endif()
  endforeach()
  if(NOT arg_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    _kopt_fail("NAME '${arg_NAME}' must be a C identifier (letters, digits, underscores), since it names a header "
               "namespace.")
  endif()
  get_property(names GLOBAL PROPERTY _KOPT_KERNEL_NAMES)
  if("${arg_NAME}" IN_LIST names)
    _kopt_fail("NAME '${arg_NAME}' is already used by another optimize_kernel() call; give each kernel its own NAME.")
  endif()
  set_property(GLOBAL APPEND PROPERTY _KOPT_KERNEL_NAMES "${arg_NAME}")
endfunction()

# What the module itself uses: the targets, the keywords that go together,
# the benchmark's tolerance and the CTest slots.
function(_kopt_check_settings)
  if(DEFINED arg_TARGET AND DEFINED arg_OUTPUT_VARIABLE)
    _kopt_fail("give TARGET or OUTPUT_VARIABLE, not both.")
  endif()
  if(DEFINED arg_TARGET AND NOT TARGET "${arg_TARGET}")
    _kopt_fail("TARGET '${arg_TARGET}' is not a target. Create it first (add_executable/add_library) or use "
               "OUTPUT_VARIABLE.")
  endif()
  if(NOT TARGET kopt::kopt)
    _kopt_fail("the kopt tool target (kopt::kopt) is not defined: use find_package(KernelOptimizer) or "
               "add_subdirectory() of KernelOptimizer first.")
  endif()
  if(arg_UPDATE_CACHE AND NOT DEFINED arg_CACHE_FILE)
    _kopt_fail("UPDATE_CACHE needs CACHE_FILE <tuning-cache.json>, the file to update.")
  endif()
  if(DEFINED arg_SEARCH_STRATEGY AND DEFINED arg_STRATEGY AND NOT arg_STRATEGY STREQUAL "search")
    _kopt_fail("SEARCH_STRATEGY applies to STRATEGY search only, not to STRATEGY ${arg_STRATEGY}; drop "
               "SEARCH_STRATEGY, or write STRATEGY ${arg_SEARCH_STRATEGY} alone.")
  endif()
  if(DEFINED arg_BENCHMARK_TOLERANCE AND NOT arg_BENCHMARK_TOLERANCE MATCHES "^[0-9]+([.][0-9]+)?$")
    _kopt_fail("BENCHMARK_TOLERANCE '${arg_BENCHMARK_TOLERANCE}' must be a non-negative number of percent, e.g. "
               "BENCHMARK_TOLERANCE 10.")
  endif()
  if(NOT KOPT_CTEST_GPU_SLOTS MATCHES "^[1-9][0-9]*$")
    _kopt_fail("KOPT_CTEST_GPU_SLOTS '${KOPT_CTEST_GPU_SLOTS}' must be a whole number of 1 or more (the slots per "
               "GPU of the CTest resource spec file), e.g. -DKOPT_CTEST_GPU_SLOTS=4.")
  endif()
endfunction()

# The defaults, and which keyword or variable gave the strategy and the
# budget (for messages): sets strategy, strategy_from, budget, budget_from,
# tolerance and update_cache in the caller. A budget with a ';' is a CMake
# list, which would reach kopt as two arguments.
function(_kopt_apply_defaults)
  if(DEFINED arg_SEARCH_STRATEGY)
    message(DEPRECATION "optimize_kernel(): SEARCH_STRATEGY is deprecated; write STRATEGY ${arg_SEARCH_STRATEGY} "
                        "(STRATEGY takes every strategy of kopt optimize --strategy).")
    set(strategy "${arg_SEARCH_STRATEGY}")
    set(strategy_from SEARCH_STRATEGY)
  elseif(DEFINED arg_STRATEGY)
    set(strategy "${arg_STRATEGY}")
    set(strategy_from STRATEGY)
  else()
    set(strategy "${KOPT_DEFAULT_STRATEGY}")
    set(strategy_from KOPT_DEFAULT_STRATEGY)
  endif()
  if(strategy STREQUAL "")
    set(strategy search)
  endif()
  if(DEFINED arg_BUDGET)
    set(budget "${arg_BUDGET}")
    set(budget_from BUDGET)
  else()
    set(budget "${KOPT_DEFAULT_BUDGET}")
    set(budget_from KOPT_DEFAULT_BUDGET)
  endif()
  if(budget MATCHES ";")
    _kopt_fail("${budget_from} '${budget}' contains ';' (a CMake list): separate the items with commas, e.g. "
               "${budget_from} evals=500,minutes=20.")
  endif()
  set(tolerance 10)
  if(DEFINED arg_BENCHMARK_TOLERANCE)
    set(tolerance "${arg_BENCHMARK_TOLERANCE}")
  endif()
  set(update_cache OFF)
  if(arg_UPDATE_CACHE OR KOPT_UPDATE_CACHE)
    set(update_cache ON)
  endif()
  foreach(var strategy strategy_from budget budget_from tolerance update_cache)
    set(${var} "${${var}}" PARENT_SCOPE)
  endforeach()
endfunction()

# Absolute paths of the file arguments (relative ones are relative to
# CMAKE_CURRENT_SOURCE_DIR), set in the caller. The kernel files must exist
# (the generate command depends on them); CACHE_FILE and CASES_FROM may not
# exist yet, but are no folders.
function(_kopt_resolve_files)
  set(hint " Check the path (relative paths are relative to ${CMAKE_CURRENT_SOURCE_DIR}).")
  foreach(kw SPEC TEMPLATE INITIAL_KERNEL REFERENCE CACHE_FILE CASES_FROM)
    if(NOT DEFINED arg_${kw})
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH arg_${kw} BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    set(arg_${kw} "${arg_${kw}}" PARENT_SCOPE)
    set(path "${arg_${kw}}")
    if(kw STREQUAL "CACHE_FILE" AND IS_DIRECTORY "${path}")
      _kopt_fail("CACHE_FILE '${path}' is a directory; name a JSON file (it is created when missing).")
    elseif(kw STREQUAL "CASES_FROM" AND IS_DIRECTORY "${path}")
      _kopt_fail("CASES_FROM '${path}' is a directory; name the capture file (e.g. CASES_FROM "
                 "\${CMAKE_BINARY_DIR}/${arg_NAME}.capture.json).")
    elseif(kw MATCHES "CACHE_FILE|CASES_FROM")
      continue()
    elseif(IS_DIRECTORY "${path}")
      _kopt_fail("${kw} file '${path}' is a directory, not a file.${hint}")
    elseif(NOT EXISTS "${path}")
      _kopt_fail("${kw} file '${path}' does not exist.${hint}")
    endif()
  endforeach()
  if(DEFINED arg_CASES_FROM AND NOT EXISTS "${arg_CASES_FROM}")
    message(STATUS "optimize_kernel(${arg_NAME}): CASES_FROM '${arg_CASES_FROM}' does not exist yet: tuning on the "
                   "spec's cases; run the application with KOPT_CAPTURE=${arg_CASES_FROM} and the next build tunes "
                   "on the shapes it launched.")
  endif()
endfunction()

# The `kopt generate` command line and what it depends on and writes: sets
# generate_cmd, depends, byproducts and bench_cache (the tuning cache the
# benchmark test reads) in the caller. The spec's own files are not listed:
# kopt generate names them in its depfile.
function(_kopt_generate_command)
  set(cmd kopt::kopt generate --spec "${arg_SPEC}" --name "${arg_NAME}" --out-dir "${out_dir}"
          --cache-dir "${CMAKE_BINARY_DIR}/kernel_optimizer/nvrtc-cache" --depfile "${out_dir}/${arg_NAME}.d")
  set(depends "${arg_SPEC}")
  set(byproducts "")
  if(NOT budget STREQUAL "")
    list(APPEND cmd --budget "${budget}")
  endif()
  if(NOT strategy STREQUAL "search")  # search: kopt chooses by the size of the space
    list(APPEND cmd --strategy "${strategy}")
  endif()
  foreach(kw_flag TEMPLATE:--template INITIAL_KERNEL:--initial-kernel REFERENCE:--reference)
    string(REPLACE ":" ";" pair "${kw_flag}")
    list(GET pair 0 kw)
    list(GET pair 1 flag)
    if(DEFINED arg_${kw})
      list(APPEND cmd ${flag} "${arg_${kw}}")
      list(APPEND depends "${arg_${kw}}")
    endif()
  endforeach()
  # Without UPDATE_CACHE the committed cache is only read; the updated one
  # (or a copy) lands in the build tree, where the benchmark test reads it.
  set(bench_cache "")
  if(DEFINED arg_CACHE_FILE)
    list(APPEND cmd --cache-file "${arg_CACHE_FILE}")
    set(bench_cache "${arg_CACHE_FILE}")
    if(EXISTS "${arg_CACHE_FILE}")
      list(APPEND depends "${arg_CACHE_FILE}")
    endif()
    if(NOT update_cache)
      set(bench_cache "${out_dir}/${arg_NAME}.tuning.json")
      list(APPEND cmd --cache-out "${bench_cache}")
      list(APPEND byproducts "${bench_cache}")
    endif()
  endif()
  # CASES_FROM: the tuning depends on the capture's stamp (_kopt_add_generate).
  if(DEFINED arg_CASES_FROM)
    list(APPEND cmd --cases-from "${arg_CASES_FROM}" --cases-out "${out_dir}/${arg_NAME}.cases.json")
    list(APPEND depends "${out_dir}/${arg_NAME}.cases_from.stamp")
    list(APPEND byproducts "${out_dir}/${arg_NAME}.cases.json")
  endif()
  if(KOPT_TARGET_GPU)
    list(APPEND cmd --target-gpu "${KOPT_TARGET_GPU}")
  endif()
  if(KOPT_REQUIRE_GPU)
    list(APPEND cmd --require-gpu)
  endif()
  set(generate_cmd "${cmd}" PARENT_SCOPE)
  set(depends "${depends}" PARENT_SCOPE)
  set(byproducts "${byproducts}" PARENT_SCOPE)
  set(bench_cache "${bench_cache}" PARENT_SCOPE)
endfunction()

# The kopt executable when it exists while configuring (find_package: an
# imported kopt::kopt), else "" (add_subdirectory, FetchContent: this build
# makes it).
function(_kopt_tool_at_configure out)
  set(${out} "" PARENT_SCOPE)
  get_target_property(imported kopt::kopt IMPORTED)
  if(NOT imported)
    return()
  endif()
  get_target_property(location kopt::kopt IMPORTED_LOCATION)
  if(NOT location)
    get_target_property(configs kopt::kopt IMPORTED_CONFIGURATIONS)
    foreach(config IN LISTS configs)
      get_target_property(location kopt::kopt IMPORTED_LOCATION_${config})
      if(location)
        break()
      endif()
    endforeach()
  endif()
  if(location AND EXISTS "${location}")
    set(${out} "${location}" PARENT_SCOPE)
  endif()
endfunction()

# Where kopt exists, the build's own command line runs now with --check, so
# that what it would reject when building (a budget, a strategy, the spec and
# the files it names, a capture) stops the configure step with kopt's
# message, under the keyword that gave the value.
function(_kopt_check_with_tool)
  _kopt_tool_at_configure(kopt)
  if(NOT kopt)
    return()
  endif()
  set(cmd "${generate_cmd}")
  list(POP_FRONT cmd)  # kopt::kopt
  execute_process(COMMAND "${kopt}" ${cmd} --check RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  ERROR_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0)
    if(NOT err STREQUAL "")
      message(WARNING "optimize_kernel(${arg_NAME}): ${err}")
    endif()
    return()
  endif()
  set(what "the arguments")
  foreach(entry "--budget|${budget_from}|${budget}" "--strategy|${strategy_from}|${strategy}"
                "--template|TEMPLATE|${arg_TEMPLATE}" "--initial-kernel|INITIAL_KERNEL|${arg_INITIAL_KERNEL}"
                "--reference|REFERENCE|${arg_REFERENCE}" "--cases-from|CASES_FROM|${arg_CASES_FROM}"
                "--cache-file|CACHE_FILE|${arg_CACHE_FILE}" "--target-gpu|KOPT_TARGET_GPU|${KOPT_TARGET_GPU}"
                "${arg_CASES_FROM}|CASES_FROM|${arg_CASES_FROM}" "${arg_SPEC}|SPEC|${arg_SPEC}")
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 needle)
    list(GET entry 1 keyword)
    list(GET entry 2 value)
    string(FIND "${err}" "${needle}" at)
    if(NOT needle STREQUAL "" AND NOT at EQUAL -1)
      set(what "${keyword} '${value}'")
      break()
    endif()
  endforeach()
  if(what MATCHES "^[A-Z_]*STRATEGY ")
    string(APPEND err "\n(${strategy_from} also takes search: the parameter search, its strategy chosen by kopt.)")
  endif()
  _kopt_fail("${what} of kernel ${arg_NAME} is rejected by kopt (exit ${rc}):\n  ${err}")
endfunction()

# The options NVRTC compiled the tuned kernel with, for the compile of the
# generated source: kopt generate writes them in nvcc's spelling to
# <name>.nvcc_options (they are known when it has run, not when configuring:
# a cached or an agent's kernel brings its own), which nvcc reads with
# --options-file. They come after the target's own flags, so they win where
# both set one option. Source properties are per directory: set in the
# caller's and, with TARGET, in the target's. Appended, so that the caller's
# own COMPILE_OPTIONS on the file stay (and the caller appends to them).
function(_kopt_apply_nvcc_options)
  set(where DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
  if(DEFINED arg_TARGET)
    list(APPEND where TARGET_DIRECTORY "${arg_TARGET}")
  endif()
  set_property(SOURCE "${out_cu}" ${where} APPEND PROPERTY COMPILE_OPTIONS
               "$<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:--options-file=${out_options}>")
  set_property(SOURCE "${out_cu}" ${where} APPEND PROPERTY OBJECT_DEPENDS "${out_options}")
  if(DEFINED CMAKE_CUDA_COMPILER_ID AND NOT CMAKE_CUDA_COMPILER_ID STREQUAL "" AND
     NOT CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA")
    message(WARNING "optimize_kernel(${arg_NAME}): the CUDA compiler is ${CMAKE_CUDA_COMPILER_ID}, not nvcc: the "
                    "NVRTC options the kernel was tuned with (${arg_NAME}.nvcc_options, e.g. --use_fast_math) are "
                    "not applied to ${arg_NAME}.cu. Pass their equivalents to your compiler with "
                    "set_property(SOURCE ... APPEND PROPERTY COMPILE_OPTIONS ...).")
  endif()
endfunction()

# The generate step: the custom command, the target optimize_<name>, and
# CASES_FROM's always-run stamp.
function(_kopt_add_generate)
  set(out_cu "${out_dir}/${arg_NAME}.cu")
  set(out_h "${out_dir}/${arg_NAME}_launch.h")
  set(out_options "${out_dir}/${arg_NAME}.nvcc_options")
  set(notes "")
  if(DEFINED arg_CASES_FROM)
    cmake_path(GET arg_CASES_FROM FILENAME cases_name)
    string(APPEND notes ", on the shapes of ${cases_name} when it exists")
  endif()
  string(APPEND notes ", on a GPU")
  if(update_cache)
    string(APPEND notes ", updating ${arg_CACHE_FILE}")
  endif()
  set(budget_note "${budget}")
  if(budget STREQUAL "")
    set(budget_note "kopt's default")
  endif()
  # USES_TERMINAL puts the command in Ninja's console pool: one tuning at a
  # time. The depfile adds every file the spec names (kernel sources and
  # their #includes, .npy inputs, golden outputs) to DEPENDS.
  add_custom_command(
    OUTPUT "${out_cu}" "${out_h}" "${out_options}"
    BYPRODUCTS ${byproducts}
    COMMAND ${generate_cmd}
    DEPENDS ${depends} kopt::kopt $<TARGET_FILE:kopt::kopt>
    DEPFILE "${out_dir}/${arg_NAME}.d"
    COMMENT "KernelOptimizer: generating ${arg_NAME} (tuned with ${strategy}, budget ${budget_note}${notes}; else from the tuning cache or the initial kernel)"
    USES_TERMINAL
    VERBATIM)
  set_source_files_properties("${out_cu}" "${out_h}" "${out_options}" PROPERTIES GENERATED TRUE)
  _kopt_apply_nvcc_options()
  add_custom_target(optimize_${arg_NAME} DEPENDS "${out_cu}" "${out_h}" "${out_options}")
  if(DEFINED arg_CASES_FROM)
    # The tuning depends on a stamp that this always-run step keeps at the
    # file's SHA-256 or "missing" (rewritten only when that changes); kopt
    # generate --cases-from falls back to the spec's cases while the file is
    # missing, and writes the cases it used to <name>.cases.json for the tests.
    set(stamp "${out_dir}/${arg_NAME}.cases_from.stamp")
    _kopt_update_cases_stamp("${arg_CASES_FROM}" "${stamp}")
    add_custom_target(kopt_cases_from_${arg_NAME}
                      COMMAND "${CMAKE_COMMAND}" "-D_KOPT_CASES_FROM=${arg_CASES_FROM}" "-D_KOPT_CASES_STAMP=${stamp}"
                              -P "${_KOPT_MODULE_DIR}/KernelOptimizer.cmake"
                      BYPRODUCTS "${stamp}"
                      COMMENT "KernelOptimizer: checking ${arg_CASES_FROM} for new shapes of ${arg_NAME}"
                      VERBATIM)
    add_dependencies(optimize_${arg_NAME} kopt_cases_from_${arg_NAME})
  endif()
  if(DEFINED arg_TARGET)
    target_sources(${arg_TARGET} PRIVATE "${out_cu}")
    target_include_directories(${arg_TARGET} PRIVATE "${out_dir}")
    add_dependencies(${arg_TARGET} optimize_${arg_NAME})
  endif()
endfunction()

# The tests: correctness on every case with fresh inputs; benchmark against
# the recorded best. Each runs on the GPU CTest gives it under
# --resource-spec-file (--device-from-ctest), else on GPU 0; exit code 77 (no
# GPU) shows as skipped. A correctness test takes one slot of a GPU, a
# benchmark all of them (the whole GPU): `ctest -j --resource-spec-file` then
# runs one benchmark per GPU at a time, and nothing else beside it there.
function(_kopt_add_tests)
  set(kernel "${out_dir}/${arg_NAME}.cu")
  set(common --spec "${arg_SPEC}" --kernel "${kernel}" --device-from-ctest
             --cache-dir "${CMAKE_BINARY_DIR}/kernel_optimizer/nvrtc-cache")
  if(DEFINED arg_CASES_FROM)
    list(APPEND common --input-cases "${out_dir}/${arg_NAME}.cases.json")
  endif()
  add_test(NAME ${arg_NAME}.correctness COMMAND kopt::kopt evaluate ${common} --no-time --quiet)
  set(bench_cmd kopt::kopt bench ${common} --tolerance "${tolerance}"
                --benchmark_out=${out_dir}/${arg_NAME}.benchmark.json --benchmark_out_format=json)
  if(NOT bench_cache STREQUAL "")
    list(APPEND bench_cmd --cache-file "${bench_cache}")
  endif()
  add_test(NAME ${arg_NAME}.benchmark COMMAND ${bench_cmd})
  set_tests_properties(${arg_NAME}.correctness PROPERTIES
                       SKIP_RETURN_CODE 77 RESOURCE_GROUPS "gpus:1"
                       LABELS "kernel_optimizer;correctness;${arg_LABELS}")
  set_tests_properties(${arg_NAME}.benchmark PROPERTIES
                       SKIP_RETURN_CODE 77 RESOURCE_GROUPS "gpus:${KOPT_CTEST_GPU_SLOTS}"
                       LABELS "kernel_optimizer;benchmark;${arg_LABELS}")
  if(arg_PROPERTIES)
    set_tests_properties(${arg_NAME}.correctness ${arg_NAME}.benchmark PROPERTIES ${arg_PROPERTIES})
  endif()
endfunction()

function(optimize_kernel)
  set(one_value NAME SPEC TEMPLATE INITIAL_KERNEL REFERENCE STRATEGY SEARCH_STRATEGY BUDGET TARGET OUTPUT_VARIABLE
                CACHE_FILE CASES_FROM BENCHMARK_TOLERANCE)
  set(keywords ${one_value} UPDATE_CACHE LABELS PROPERTIES)
  cmake_parse_arguments(PARSE_ARGV 0 arg "UPDATE_CACHE" "${one_value}" "LABELS;PROPERTIES")
  _kopt_check_keywords("${ARGV}")
  _kopt_check_settings()
  _kopt_apply_defaults()
  _kopt_resolve_files()
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/kernel_optimizer/${arg_NAME}")
  _kopt_generate_command()
  _kopt_check_with_tool()
  _kopt_add_generate()
  if(DEFINED arg_OUTPUT_VARIABLE)
    set(${arg_OUTPUT_VARIABLE} "${out_dir}/${arg_NAME}.cu" PARENT_SCOPE)
  endif()
  _kopt_add_tests()
endfunction()

endblock()
