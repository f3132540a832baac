# Embeds dashboard.html in the agent: writes a C++ source defining fgpu::agent::DashboardHtml()
# (dashboard.h) as one raw string literal. Run at build time by src/agent/CMakeLists.txt, so
# editing the page rebuilds the agent without a re-configure:
#
#   cmake -DINPUT=dashboard.html -DOUTPUT=dashboard_html.cc -P dashboard.cmake
#
# The page stays an ordinary HTML file that an editor and a browser can open as it is.
if(NOT DEFINED INPUT OR NOT DEFINED OUTPUT)
  message(FATAL_ERROR "dashboard.cmake: pass -DINPUT=<page.html> -DOUTPUT=<source.cc>")
endif()
file(READ "${INPUT}" page)
# The raw string ends at the first )fgpu_page" — the page must not contain it.
set(delimiter "fgpu_page")
string(FIND "${page}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains \")${delimiter}\"\", which would end the embedded string early")
endif()
set(source "// Generated from ${INPUT} by dashboard.cmake; edit the page, not this file.\n")
string(APPEND source "#include \"agent/dashboard.h\"\n\n")
string(APPEND source "namespace fgpu::agent {\n\n")
string(APPEND source "std::string_view DashboardHtml() {\n")
string(APPEND source "  static constexpr char kPage[] = R\"${delimiter}(${page})${delimiter}\";\n")
string(APPEND source "  return {kPage, sizeof(kPage) - 1};\n")
string(APPEND source "}\n\n}  // namespace fgpu::agent\n")
# Only rewrite when the text changed, so an unchanged page does not recompile.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" previous)
  if(previous STREQUAL source)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${source}")
