# kopt_require_new_identifier(<name> <seen_var> <bad_message> <twice_message>)
#   A FATAL_ERROR with <bad_message> unless <name> is an identifier (letters,
#   digits and _, not starting with a digit), then one with <twice_message>
#   when <name> is in the list variable <seen_var> already. The names the
#   build reads from files, layer table parts (KoptLayers.cmake) and embedded
#   regions (embed_regions.cmake), become CMake variables and C++ names.
include_guard(GLOBAL)
# if(... IN_LIST ...) also where the includer set no policies (cmake -P).
cmake_policy(PUSH)
cmake_policy(SET CMP0057 NEW)

function(kopt_require_new_identifier name seen_var bad_message twice_message)
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${bad_message}")
  endif()
  if(name IN_LIST ${seen_var})
    message(FATAL_ERROR "${twice_message}")
  endif()
endfunction()

cmake_policy(POP)
