// The dashboard page: served at / and /dashboard as HTML, self-contained (no URL but the agent's
// own API, by relative path), and with every element its script looks up. What it renders is
// checked in headless Chromium by tests/e2e/dashboard_test.sh.
#include "agent/dashboard.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "agent/api.h"

namespace fgpu::agent {
namespace {

// The page routes never touch the slices, so the API needs no SliceService here.
net::HttpResponse Get(const std::string& method, const std::string& path) {
  Api api(/*slices=*/nullptr);
  net::HttpRequest request;
  request.method = method;
  request.path = path;
  return api.Handle(request);
}

TEST(DashboardTest, RootAndDashboardServeThePageAsHtml) {
  for (const char* path : {"/", "/dashboard"}) {
    const net::HttpResponse response = Get("GET", path);
    EXPECT_EQ(response.status, 200) << path;
    EXPECT_EQ(response.content_type, "text/html; charset=utf-8") << path;
    EXPECT_EQ(response.body, std::string(DashboardHtml())) << path;
    EXPECT_EQ(response.body.rfind("<!doctype html>", 0), 0u) << path;
  }
}

TEST(DashboardTest, OnlyGetIsAllowed) {
  for (const char* method : {"POST", "PUT", "DELETE"}) {
    const net::HttpResponse response = Get(method, "/");
    EXPECT_EQ(response.status, 405) << method;
    EXPECT_NE(response.body.find("use GET"), std::string::npos);
  }
}

TEST(DashboardTest, HasTheElementsTheE2eTestAndTheScriptRelyOn) {
  const std::string page(DashboardHtml());
  for (const char* id : {"status", "error", "gpus", "slices-table", "slices-body", "slices-empty", "queue-body",
                         "queue-empty", "quotas-section", "quotas-body", "plots",
                         "plots-empty", "tenants-table", "tenants-body", "tenants-empty"}) {
    EXPECT_NE(page.find("id=\"" + std::string(id) + "\""), std::string::npos) << id;
  }
  // Every byId("...") in the script names an element of the page (a typo would only show in a
  // browser as a silent TypeError).
  const std::regex lookup(R"re(byId\("([A-Za-z0-9_-]+)"\))re");
  std::set<std::string> looked_up;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), lookup); it != std::sregex_iterator(); ++it) {
    looked_up.insert((*it)[1]);
  }
  EXPECT_GE(looked_up.size(), 8u);
  for (const std::string& id : looked_up) {
    EXPECT_NE(page.find("id=\"" + id + "\""), std::string::npos) << "byId(\"" << id << "\") has no element";
  }
}

TEST(DashboardTest, IsSelfContainedAndReadsOnlyTheAgentsOwnApiByRelativeUrl) {
  const std::string page(DashboardHtml());
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos) << "no external script, image or frame";
  EXPECT_EQ(page.find("rel=\"stylesheet\""), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
  // Relative (no leading '/'), so the page also works behind a proxy that mounts the agent
  // under a path.
  for (const char* endpoint : {"\"v1/gpus\"", "\"v1/slices?usage=1\"", "\"v1/usage?by=tenant&since=\""}) {
    EXPECT_NE(page.find(endpoint), std::string::npos) << endpoint;
  }
  EXPECT_EQ(page.find("fetch(\"/"), std::string::npos);
}

TEST(DashboardTest, PolicyLetsThePageTalkOnlyToItsOrigin) {
  const net::HttpResponse response = Get("GET", "/");
  const auto policy = response.headers.find("Content-Security-Policy");
  ASSERT_NE(policy, response.headers.end());
  EXPECT_NE(policy->second.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(policy->second.find("connect-src 'self'"), std::string::npos);
}

}  // namespace
}  // namespace fgpu::agent
