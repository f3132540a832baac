# Warnings as errors on our own targets only: fgpu_target_defaults(<target>).
function(fgpu_target_defaults target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion
    -Wimplicit-fallthrough -Werror)
  # GCC 12 reports -Wrestrict false positives inside libstdc++'s std::string at -O2/-O3 (GCC bug
  # 105329: `"literal" + std::string(...)`, `str = "x"`). The code avoids those forms where they
  # fired (the release build is warning-free: scripts/demo counts them); this keeps a new one a
  # warning, not a failed build of correct code, since only optimised builds see it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-error=restrict)
  endif()
  # A unity build (CMAKE_UNITY_BUILD: the dev and tsan presets, one unit per target) compiles a
  # target's sources as includes of one file, where GCC takes a class with a member of an anonymous-namespace type
  # for a header's: -Wsubobject-linkage is a false alarm there.
  if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

if(FGPU_SANITIZE)
  add_compile_options(-fsanitize=${FGPU_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${FGPU_SANITIZE})
endif()
