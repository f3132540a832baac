#include "k8s/client/kube_config.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace fgpu::k8s {
namespace {

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fgpu-kubeconfig-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

constexpr const char* kTwoContexts = R"(apiVersion: v1
kind: Config
clusters:
- name: a
  cluster:
    server: https://a.example:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
- name: b
  cluster:
    server: https://b.example
    certificate-authority: certs/ca.crt
users:
- name: alice
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: bob
  user:
    tokenFile: token
contexts:
- name: ctx-a
  context: {cluster: a, user: alice}
- name: ctx-b
  context:
    cluster: b
    user: bob
    namespace: gpu
current-context: ctx-b
)";

TEST_F(KubeConfigTest, CurrentContextWithRelativeFilesResolvedAgainstTheKubeconfig) {
  std::string text = kTwoContexts;
  text.replace(text.find("  context: {cluster: a, user: alice}"), 36, "  context:\n    cluster: a\n    user: alice");
  auto config = LoadKubeconfig(Write("config", text));
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->server, "https://b.example");
  EXPECT_EQ(config->ca_file, dir_ + "/certs/ca.crt");
  EXPECT_EQ(config->token_file, dir_ + "/token");
  EXPECT_EQ(config->default_namespace, "gpu");

  auto a = LoadKubeconfig(dir_ + "/config", "ctx-a");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->server, "https://a.example:6443");
  EXPECT_EQ(a->ca_data_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(a->client_cert_data_pem, "cert");
  EXPECT_EQ(a->client_key_data_pem, "key");
  EXPECT_TRUE(a->ca_file.empty());

  EXPECT_EQ(LoadKubeconfig(dir_ + "/config", "nope").status().code(), StatusCode::kNotFound);
}

TEST_F(KubeConfigTest, FlowMappingsAreOutsideTheSubsetAndSaySo) {
  auto config = LoadKubeconfig(Write("config", kTwoContexts));
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("line 22"), std::string::npos) << config.status().message();
}

TEST_F(KubeConfigTest, JsonKubeconfig) {
  auto config = LoadKubeconfig(Write("config.json", R"({"apiVersion": "v1", "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority": "/etc/ca.crt"}}],
    "users": [{"name": "u", "user": {"token": "sekrit"}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x"})"));
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->token, "sekrit");
  EXPECT_EQ(config->ca_file, "/etc/ca.crt");
}

TEST_F(KubeConfigTest, RefusesInsecureSkipVerifyPlainHttpAndExecPlugins) {
  const std::string base = R"(clusters:
- name: c
  cluster:
    server: SERVER
EXTRA
users:
- name: u
  user:
    USER
contexts:
- name: x
  context:
    cluster: c
    user: u
current-context: x
)";
  auto make = [&](const std::string& server, const std::string& extra, const std::string& user) {
    std::string t = base;
    t.replace(t.find("SERVER"), 6, server);
    t.replace(t.find("EXTRA"), 5, extra);
    t.replace(t.find("USER"), 4, user);
    return LoadKubeconfig(Write("config", t));
  };
  auto ok = make("https://h", "    certificate-authority: /ca", "token: t");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  auto insecure = make("https://h", "    insecure-skip-tls-verify: true", "token: t");
  ASSERT_FALSE(insecure.ok());
  EXPECT_NE(insecure.status().message().find("insecure-skip-tls-verify"), std::string::npos);
  EXPECT_FALSE(make("http://h", "    certificate-authority: /ca", "token: t").ok());
  auto exec = make("https://h", "    certificate-authority: /ca", "exec:\n      command: aws");
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.status().message().find("exec"), std::string::npos);
  EXPECT_FALSE(make("https://h", "    certificate-authority-data: '!!!'", "token: t").ok());
  EXPECT_FALSE(make("https://h", "    certificate-authority: /ca", "client-certificate: /c").ok());
}

TEST_F(KubeConfigTest, InClusterFromTheServiceAccountFiles) {
  InClusterPaths paths{.token_file = Write("token", "tok\n"), .ca_file = Write("ca.crt", "pem"),
                       .namespace_file = Write("namespace", "fgpu-system\n")};
  unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(InClusterConfig(paths).status().code(), StatusCode::kNotFound);
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto config = InClusterConfig(paths);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
  EXPECT_EQ(config->token_file, paths.token_file);
  EXPECT_EQ(config->ca_file, paths.ca_file);
  EXPECT_EQ(config->default_namespace, "fgpu-system");
  paths.token_file = dir_ + "/missing";
  EXPECT_EQ(InClusterConfig(paths).status().code(), StatusCode::kUnavailable);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST(Base64, DecodesPaddedUnpaddedAndWrapped) {
  EXPECT_EQ(*DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(*DecodeBase64("aGVsbG8"), "hello");
  EXPECT_EQ(*DecodeBase64("aGVs\nbG8="), "hello");
  EXPECT_FALSE(DecodeBase64("aGVsbG8=x").ok());
  EXPECT_FALSE(DecodeBase64("a").ok());
}

}  // namespace
}  // namespace fgpu::k8s
