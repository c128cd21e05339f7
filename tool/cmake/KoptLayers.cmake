# One static library per part of tool/src, linked as tool/layers.txt says.
#
#   kopt_read_layer_table(<file> <prefix>)
#     Reads a layer table (format: the header comment of tool/layers.txt) and
#     sets, in the caller's scope:
#       <prefix>_PARTS         the parts, in file order
#       <prefix>_DEPS_<part>   the parts <part> may use (`*` expanded)
#     A malformed line, a bad name, a part listed twice, a part listing
#     itself or a dep twice, `*` next to other deps, a dep without a line of
#     its own and a cycle are fatal errors naming the file (and line).
#
#   kopt_add_layer_libraries(TABLE <file> SRC <dir>
#                            [PREFIX <p>]          (default kopt_)
#                            [NAMESPACE <ns>]      (default kopt::)
#                            [SKIP <part>...]      (parts to leave out, e.g. cli)
#                            [TARGETS_VAR <var>])  (set to the targets made)
#     For each part (not skipped): <p><part>, a STATIC library of the .cpp
#     files under <dir>/<part> (recursively), or an INTERFACE library when
#     there is none (a header-only part, or a part without a folder yet: a
#     warning); with <dir> as its include directory (#include "part/x.h")
#     and target_link_libraries(<p><part> PUBLIC <p><dep>...) (INTERFACE for
#     an INTERFACE library), and an alias <ns><part>. A folder under <dir>
#     that is no part of the table, or a part that uses a skipped one, is a
#     fatal error. The caller adds what the table does not say (compile
#     options, third-party libraries) to the targets.
#
# The same table is checked against the includes by the CTest test
# layers.includes (tests/layers/, kopt_check_layers); both read the same
# format.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/KoptNames.cmake)
# if(... IN_LIST ...) also where the includer set no policies (cmake -P); the
# functions keep the policies they were defined with.
cmake_policy(PUSH)
cmake_policy(SET CMP0057 NEW)

function(kopt_read_layer_table file prefix)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "kopt_read_layer_table: ${file} does not exist")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  file(READ "${file}" text)
  # One list element a line; `;`, `[` and `]` (list syntax) only in comments,
  # which go: neutralise them first.
  string(REPLACE ";" " " text "${text}")
  string(REPLACE "[" " " text "${text}")
  string(REPLACE "]" " " text "${text}")
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")

  set(parts "")
  set(n 0)
  foreach(raw IN LISTS lines)
    math(EXPR n "${n} + 1")
    string(REGEX REPLACE "#.*$" "" l "${raw}")
    string(STRIP "${l}" l)
    if(l STREQUAL "")
      continue()
    endif()
    if(NOT l MATCHES "^([^:]*):(.*)$")
      message(FATAL_ERROR "${file}:${n}: expected 'part: dep dep ...', got '${l}'")
    endif()
    string(STRIP "${CMAKE_MATCH_1}" part)
    set(rest "${CMAKE_MATCH_2}")
    kopt_require_new_identifier("${part}" parts "${file}:${n}: bad part name '${part}' (letters, digits and _)"
                                "${file}:${n}: part '${part}' listed twice (first at line ${line_${part}})")
    string(REGEX MATCHALL "[^ \t]+" deps "${rest}")
    set(seen "")
    foreach(d IN LISTS deps)
      if(d STREQUAL "*")
        list(LENGTH deps nd)
        if(NOT nd EQUAL 1)
          message(FATAL_ERROR "${file}:${n}: '*' (every other part) must be alone after the colon")
        endif()
      elseif(NOT d MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
        message(FATAL_ERROR "${file}:${n}: bad dependency '${d}' "
                            "(names are letters, digits and _, separated by spaces)")
      elseif(d STREQUAL part)
        message(FATAL_ERROR "${file}:${n}: part '${part}' lists itself")
      elseif(d IN_LIST seen)
        message(FATAL_ERROR "${file}:${n}: part '${part}' lists '${d}' twice")
      endif()
      list(APPEND seen "${d}")
    endforeach()
    list(APPEND parts "${part}")
    set(line_${part} ${n})
    set(deps_${part} "${deps}")
  endforeach()
  if(NOT parts)
    message(FATAL_ERROR "${file}: no parts")
  endif()

  # Deps without a line of their own; `*` becomes every other part.
  foreach(part IN LISTS parts)
    if(deps_${part} STREQUAL "*")
      set(deps_${part} "${parts}")
      list(REMOVE_ITEM deps_${part} "${part}")
    else()
      foreach(d IN LISTS deps_${part})
        if(NOT d IN_LIST parts)
          message(FATAL_ERROR "${file}:${line_${part}}: part '${part}' uses '${d}', which has no line of its own")
        endif()
      endforeach()
    endif()
  endforeach()

  # A cycle: peel off parts whose deps are all peeled; what stays is on or
  # above a cycle.
  set(left "${parts}")
  set(progress TRUE)
  while(left AND progress)
    set(progress FALSE)
    foreach(part IN LISTS left)
      set(ready TRUE)
      foreach(d IN LISTS deps_${part})
        if(d IN_LIST left)
          set(ready FALSE)
          break()
        endif()
      endforeach()
      if(ready)
        list(REMOVE_ITEM left "${part}")
        set(progress TRUE)
      endif()
    endforeach()
  endwhile()
  if(left)
    # Each part left uses one that is left too: walk those edges until a part
    # comes round again; from there on it is the cycle.
    list(GET left 0 part)
    set(path "")
    while(NOT part IN_LIST path)
      list(APPEND path "${part}")
      foreach(d IN LISTS deps_${part})
        if(d IN_LIST left)
          set(part "${d}")
          break()
        endif()
      endforeach()
    endwhile()
    list(FIND path "${part}" from)
    list(SUBLIST path ${from} -1 cycle)
    set(lines "")
    foreach(c IN LISTS cycle)
      list(APPEND lines ${line_${c}})
    endforeach()
    list(APPEND cycle "${part}")
    list(JOIN cycle " -> " cycle)
    list(JOIN lines ", " lines)
    message(FATAL_ERROR "${file}: cycle: ${cycle} (lines ${lines})")
  endif()

  set(${prefix}_PARTS "${parts}" PARENT_SCOPE)
  foreach(part IN LISTS parts)
    set(${prefix}_DEPS_${part} "${deps_${part}}" PARENT_SCOPE)
  endforeach()
endfunction()

function(kopt_add_layer_libraries)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TABLE;SRC;PREFIX;NAMESPACE;TARGETS_VAR" "SKIP")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kopt_add_layer_libraries: unexpected arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_TABLE OR NOT arg_SRC)
    message(FATAL_ERROR "kopt_add_layer_libraries: TABLE and SRC are required")
  endif()
  if(NOT DEFINED arg_PREFIX)
    set(arg_PREFIX kopt_)
  endif()
  if(NOT DEFINED arg_NAMESPACE)
    set(arg_NAMESPACE kopt::)
  endif()
  get_filename_component(table "${arg_TABLE}" ABSOLUTE)
  get_filename_component(src "${arg_SRC}" ABSOLUTE)

  kopt_read_layer_table("${table}" layer)

  # Every folder under SRC is a part: otherwise its sources build nowhere.
  file(GLOB entries LIST_DIRECTORIES true RELATIVE "${src}" "${src}/*")
  foreach(e IN LISTS entries)
    if(IS_DIRECTORY "${src}/${e}" AND NOT e MATCHES "^\\." AND NOT e IN_LIST layer_PARTS)
      message(FATAL_ERROR "${src}/${e}/: folder '${e}' is not a part in ${table}")
    endif()
  endforeach()

  set(made "")
  foreach(part IN LISTS layer_PARTS)
    if(part IN_LIST arg_SKIP)
      continue()
    endif()
    set(target ${arg_PREFIX}${part})
    file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${src}/${part}/*.cpp")
    if(sources)
      add_library(${target} STATIC ${sources})
      set(scope PUBLIC)
    else()
      if(NOT IS_DIRECTORY "${src}/${part}")
        message(WARNING "kopt_add_layer_libraries: part '${part}' of ${table} has no folder under ${src}: "
                        "${target} is an empty INTERFACE library")
      endif()
      add_library(${target} INTERFACE)
      set(scope INTERFACE)
    endif()
    target_include_directories(${target} ${scope} "$<BUILD_INTERFACE:${src}>")
    set(links "")
    foreach(d IN LISTS layer_DEPS_${part})
      if(d IN_LIST arg_SKIP)
        message(FATAL_ERROR "kopt_add_layer_libraries: part '${part}' uses '${d}', which SKIP leaves out")
      endif()
      list(APPEND links ${arg_PREFIX}${d})
    endforeach()
    if(links)
      target_link_libraries(${target} ${scope} ${links})
    endif()
    if(arg_NAMESPACE)
      add_library(${arg_NAMESPACE}${part} ALIAS ${target})
    endif()
    list(APPEND made ${target})
  endforeach()
  if(arg_TARGETS_VAR)
    set(${arg_TARGETS_VAR} "${made}" PARENT_SCOPE)
  endif()
endfunction()

cmake_policy(POP)
