# codeact_embed_files(<cpp var> NAME <stem> HEADER <h> NAMESPACE <ns> COMMENT <text>
#                     FILES <name>=<path>...)
# Compiles files into the binary: adds a build step that writes <binary dir>/generated/<stem>.cpp
# (through cmake/embed_files.cmake, again whenever a file or the list changes) defining
# embedded_files() of <h> in <ns>, and sets <cpp var> to that source for add_library().
function(codeact_embed_files out_var)
  cmake_parse_arguments(E "" "NAME;HEADER;NAMESPACE;COMMENT" "FILES" ${ARGN})
  set(cpp ${CMAKE_CURRENT_BINARY_DIR}/generated/${E_NAME}.cpp)
  set(manifest ${CMAKE_CURRENT_BINARY_DIR}/generated/${E_NAME}.txt)
  set(paths "")
  foreach(entry IN LISTS E_FILES)
    string(FIND "${entry}" "=" eq)
    math(EXPR start "${eq} + 1")
    string(SUBSTRING "${entry}" ${start} -1 path)
    list(APPEND paths ${path})
  endforeach()
  string(REPLACE ";" "\n" lines "${E_FILES}")
  file(CONFIGURE OUTPUT ${manifest} CONTENT "${lines}\n")
  add_custom_command(
    OUTPUT ${cpp}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${cpp} -DMANIFEST=${manifest} -DHEADER=${E_HEADER}
            -DNAMESPACE=${E_NAMESPACE} -P ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake
    DEPENDS ${paths} ${PROJECT_SOURCE_DIR}/cmake/embed_files.cmake ${manifest}
    COMMENT "${E_COMMENT}"
    VERBATIM)
  set(${out_var} ${cpp} PARENT_SCOPE)
endfunction()
