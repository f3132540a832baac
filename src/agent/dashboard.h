// The dashboard (docs/agent.md "Dashboard"): one self-contained HTML page, served by the agent at
// GET / and GET /dashboard, that polls the JSON API and draws GPUs, slices, live usage and
// chargeback. The page is src/agent/dashboard.html, compiled in at build time (dashboard.cmake).
#pragma once

#include <string_view>

#include "net/http_message.h"

namespace fgpu::agent {

// The page as written in dashboard.html (defined in the generated dashboard_html.cc).
std::string_view DashboardHtml();

// 200 text/html with the page, and a Content-Security-Policy that lets it talk only to the
// agent it came from.
net::HttpResponse DashboardPage();

}  // namespace fgpu::agent
