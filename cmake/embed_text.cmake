# Turns a text file into a C++ header holding it as one raw string literal, so assets such as
# the HTML report's JavaScript stay real files in the repository (editable, lintable) and still
# ship inside the binary. Run as a build step:
#   cmake -DINPUT=<file> -DOUTPUT=<header> -DNAME=<constant> [-DNAMESPACE=<ns>] -P embed_text.cmake
# The header declares `inline constexpr std::string_view NAME` in NAMESPACE (default
# tune::embedded). It is rewritten only when its text changes, so an unchanged asset rebuilds
# nothing.
foreach(var INPUT OUTPUT NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_text.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT DEFINED NAMESPACE)
  set(NAMESPACE tune::embedded)
endif()

file(READ "${INPUT}" content)
# The literal ends at the first )TUNE_EMBED" in the text: refuse a file that contains one.
set(delimiter TUNE_EMBED)
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "embed_text.cmake: ${INPUT} contains ')${delimiter}\"', which would end the "
                      "raw string literal early; change the delimiter in this script")
endif()

file(RELATIVE_PATH source_name "${CMAKE_CURRENT_LIST_DIR}/.." "${INPUT}")
set(header "// Generated from ${source_name} by cmake/embed_text.cmake: edit that file, not this one.
#pragma once

#include <string_view>

namespace ${NAMESPACE} {

inline constexpr std::string_view ${NAME} = R\"${delimiter}(${content})${delimiter}\";

}  // namespace ${NAMESPACE}
")
file(WRITE "${OUTPUT}.tmp" "${header}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
