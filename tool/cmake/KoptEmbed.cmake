# Text of shipped headers, embedded in the tool at build time.
#
#   kopt_embed_regions(<target> OUTPUT <file.cpp> HEADER <include> NAMESPACE <ns>
#                      SOURCES <file>...)
#     Adds <file.cpp> to <target>: for each region of the SOURCES, the lines
#     between a line `// kopt:embed-begin NAME` and a line
#     `// kopt:embed-end NAME`, a definition
#       const char* const NAME = R"...(the region's text)...";
#     in namespace <ns>, after #include "<include>" (which declares each NAME
#     extern). The file is made again when a source changes, so the shipped
#     headers stay real C++ that the tool and its tests compile, and the text
#     the tool writes is theirs. A begin marker without its end, a region name
#     used twice or text that would end the raw string literal is a build error
#     naming the file.
include_guard(GLOBAL)
set(_KOPT_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/embed_regions.cmake" CACHE INTERNAL "")
set(_KOPT_EMBED_NAMES "${CMAKE_CURRENT_LIST_DIR}/KoptNames.cmake" CACHE INTERNAL "")  # included by the script

function(kopt_embed_regions target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT;HEADER;NAMESPACE" "SOURCES")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_OUTPUT OR NOT arg_HEADER OR NOT arg_NAMESPACE OR NOT arg_SOURCES)
    message(FATAL_ERROR "kopt_embed_regions(${target}): expected OUTPUT, HEADER, NAMESPACE and SOURCES "
                        "(got ${ARGN})")
  endif()
  string(JOIN "|" sources ${arg_SOURCES})
  add_custom_command(
    OUTPUT "${arg_OUTPUT}"
    COMMAND "${CMAKE_COMMAND}" "-DOUTPUT=${arg_OUTPUT}" "-DHEADER=${arg_HEADER}" "-DNAMESPACE=${arg_NAMESPACE}"
            "-DSOURCES=${sources}" -P "${_KOPT_EMBED_SCRIPT}"
    DEPENDS ${arg_SOURCES} "${_KOPT_EMBED_SCRIPT}" "${_KOPT_EMBED_NAMES}"
    COMMENT "Embedding the shipped headers' text in ${arg_OUTPUT}"
    VERBATIM)
  target_sources(${target} PRIVATE "${arg_OUTPUT}")
endfunction()
