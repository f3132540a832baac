# Warnings as errors on our own targets only: fgpu_target_defaults(<target>).
function(fgpu_target_defaults target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion
    -Wimplicit-fallthrough -Werror)
endfunction()

if(FGPU_SANITIZE)
  add_compile_options(-fsanitize=${FGPU_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${FGPU_SANITIZE})
endif()
