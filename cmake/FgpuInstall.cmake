# `cmake --install BUILD [--prefix P]` (docs/operations.md "Install"): the same layout as the build
# tree, so every binary finds its siblings by a path relative to itself —
#   P/bin/fgpu, P/bin/fgpu-probe
#   P/lib/fgpu/libfgpu.so                    the interposer (LD_PRELOAD; fgpu run finds it here)
#   P/lib/fgpu/sim/libcuda.so.1, libnvidia-ml.so.1   the simulated driver (machines without a GPU)
#   P/lib/fgpu/fgpu_spank.so                 the Slurm SPANK plugin, where libslurm-dev built it
#   P/lib/systemd/system/fgpu-agent.service  the node agent's unit (ExecStart under P)
#   P/share/fgpu/examples/{node.conf,agent.json}, slurm/…   example configuration, never active:
#                                            /etc/fgpu/node.conf makes a node managed, so copying
#                                            it there is the administrator's decision
#   P/share/fgpu/agent-demo                  the main job's demo, run from the installed tree
#   P/share/bash-completion/completions/fgpu, P/share/zsh/site-functions/_fgpu, P/share/man/man1/fgpu.1
include(GNUInstallDirs)

if(NOT TARGET fgpu OR NOT TARGET fgpu_hook OR NOT TARGET fgpu_sim_cuda)
  return()  # a partial build (the probe-only or fuzzing configuration) installs nothing
endif()
install(TARGETS fgpu fgpu-probe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS fgpu_hook LIBRARY DESTINATION lib/fgpu)
install(TARGETS fgpu_sim_cuda fgpu_sim_nvml LIBRARY DESTINATION lib/fgpu/sim)
if(TARGET fgpu_spank)
  install(TARGETS fgpu_spank LIBRARY DESTINATION lib/fgpu)
endif()

# The unit names the installed binary: written at install time, when the prefix is known
# (`cmake --install --prefix P` overrides the configured one).
install(CODE "
  set(FGPU_INSTALLED_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/deploy/systemd/fgpu-agent.service.in\"
                 \"${PROJECT_BINARY_DIR}/deploy/fgpu-agent.service\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/deploy/fgpu-agent.service DESTINATION lib/systemd/system)
install(FILES deploy/node.conf deploy/agent.json DESTINATION ${CMAKE_INSTALL_DATADIR}/fgpu/examples)
install(DIRECTORY deploy/slurm/ DESTINATION ${CMAKE_INSTALL_DATADIR}/fgpu/examples/slurm)
install(PROGRAMS scripts/agent-demo DESTINATION ${CMAKE_INSTALL_DATADIR}/fgpu)

# Shell completion and the man page, generated from the CLI's own definitions by the binary just
# built (fgpu completion bash|zsh, fgpu man), so they cannot drift from it.
set(FGPU_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
install(CODE "execute_process(COMMAND \"${CMAKE_COMMAND}\" \"-DFGPU=$<TARGET_FILE:fgpu>\" \"-DOUT=${FGPU_GENERATED_DIR}\"
                                      -P \"${PROJECT_SOURCE_DIR}/cmake/FgpuGenerateDocs.cmake\" RESULT_VARIABLE status)
              if(NOT status EQUAL 0)
                message(FATAL_ERROR \"the completion and man page could not be generated\")
              endif()")
install(FILES ${FGPU_GENERATED_DIR}/fgpu.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME fgpu)
install(FILES ${FGPU_GENERATED_DIR}/_fgpu DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
install(FILES ${FGPU_GENERATED_DIR}/fgpu.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
