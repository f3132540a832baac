# Run at install time (cmake -DFGPU=<fgpu binary> -DOUT=<dir> -P FgpuGenerateDocs.cmake): the
# shell completion and the man page, printed by the CLI from its own definitions.
set(ENV{ASAN_OPTIONS} "detect_leaks=0")  # an AddressSanitizer build's exit must not fail the install
file(MAKE_DIRECTORY "${OUT}")
foreach(pair "completion bash=fgpu.bash" "completion zsh=_fgpu" "man=fgpu.1")
  string(REPLACE "=" ";" pair "${pair}")
  list(GET pair 0 words)
  list(GET pair 1 output)
  separate_arguments(words UNIX_COMMAND "${words}")
  execute_process(COMMAND "${FGPU}" ${words} OUTPUT_FILE "${OUT}/${output}" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${FGPU} ${words} failed: ${status}")
  endif()
endforeach()
