# Fails unless the dynamic symbols LIBRARY defines are exactly the globals of EXPORTS_MAP.
# Usage: cmake -DNM=<nm> -DLIBRARY=<lib> -DEXPORTS_MAP=<map> -P check_exports.cmake
execute_process(COMMAND ${NM} -D --defined-only --format=posix ${LIBRARY}
  OUTPUT_VARIABLE nm_output RESULT_VARIABLE nm_result)
if(NOT nm_result EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIBRARY}")
endif()
string(REGEX MATCHALL "[^\n]+" nm_lines "${nm_output}")
set(exported "")
foreach(line IN LISTS nm_lines)
  string(REGEX MATCH "^[^ ]+" name "${line}")
  list(APPEND exported "${name}")
endforeach()

file(READ ${EXPORTS_MAP} map_text)
string(REGEX MATCH "global:([^}]*)local:" global_block "${map_text}")
string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*" declared "${CMAKE_MATCH_1}")

list(SORT exported)
list(SORT declared)
if(NOT exported STREQUAL declared)
  set(extra ${exported})
  list(REMOVE_ITEM extra ${declared})
  set(missing ${declared})
  list(REMOVE_ITEM missing ${exported})
  message(FATAL_ERROR "exports of ${LIBRARY} differ from ${EXPORTS_MAP}\n"
                      "  exported but not declared: ${extra}\n  declared but not exported: ${missing}")
endif()
list(LENGTH exported count)
message(STATUS "${count} NVML symbols exported, nothing else")
