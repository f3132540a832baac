#include "agent/dashboard.h"

#include <string>

namespace fgpu::agent {

net::HttpResponse DashboardPage() {
  net::HttpResponse response;
  response.content_type = "text/html; charset=utf-8";
  response.body = std::string(DashboardHtml());
  // The page's own inline style and script, fetches to this origin only, nothing else: even a
  // tenant name that somehow reached the DOM as markup could not load or send anything.
  response.headers["Content-Security-Policy"] =
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
      "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
  // Polled data is what changes; the page itself only with the binary. Not caching it means an
  // upgraded agent serves its new page on the next reload.
  response.headers["Cache-Control"] = "no-cache";
  response.headers["X-Content-Type-Options"] = "nosniff";
  return response;
}

}  // namespace fgpu::agent
