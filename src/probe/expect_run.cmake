# Runs PROBE with ARGS (a ;-list); checks its exit status against EXPECT_EXIT and,
# when EXPECT_STDOUT is not empty, its stdout against that regular expression.
# SEGMENT, if set, names the simulator's shared-memory segment (under /dev/shm),
# removed before the run (a crashed earlier run leaves state behind) and after it.
if(SEGMENT)
  file(REMOVE /dev/shm/${SEGMENT})
endif()
execute_process(COMMAND ${PROBE} ${ARGS}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(SEGMENT)
  file(REMOVE /dev/shm/${SEGMENT})
endif()
message("${out}")
if(NOT err STREQUAL "")
  message("stderr: ${err}")
endif()
if(NOT status STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "fgpu-probe ${ARGS}: exit status ${status}, expected ${EXPECT_EXIT}")
endif()
if(NOT EXPECT_STDOUT STREQUAL "" AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "fgpu-probe ${ARGS}: stdout does not match ${EXPECT_STDOUT}")
endif()
