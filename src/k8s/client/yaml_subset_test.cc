#include "k8s/client/yaml_subset.h"

#include <gtest/gtest.h>

namespace fgpu::k8s {
namespace {

TEST(YamlSubset, ReadsKubectlStyleKubeconfig) {
  const char* text = R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: QUJD   # a comment
    server: https://10.0.0.1:6443
  name: prod
contexts:
- context:
    cluster: prod
    user: "admin@prod"
    namespace: 'it''s'
  name: prod-ctx
current-context: prod-ctx
kind: Config
preferences: {}
users:
-   name: admin@prod
    user:
      token: "a#b"
      list:
        - one
        -   two
)";
  auto doc = ParseYamlSubset(text);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ((*doc)["clusters"][0]["cluster"]["server"], "https://10.0.0.1:6443");
  EXPECT_EQ((*doc)["clusters"][0]["cluster"]["certificate-authority-data"], "QUJD");
  EXPECT_EQ((*doc)["clusters"][0]["name"], "prod");
  EXPECT_EQ((*doc)["contexts"][0]["context"]["user"], "admin@prod");
  EXPECT_EQ((*doc)["contexts"][0]["context"]["namespace"], "it's");
  EXPECT_EQ((*doc)["current-context"], "prod-ctx");
  EXPECT_TRUE((*doc)["preferences"].is_object());
  EXPECT_EQ((*doc)["users"][0]["user"]["token"], "a#b");
  EXPECT_EQ((*doc)["users"][0]["user"]["list"][1], "two");
}

TEST(YamlSubset, ScalarsKeepTheirKubeconfigMeaning) {
  auto doc = ParseYamlSubset("a: true\nb: 6443\nc: ~\nd: \"x\\ny\"\n");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["a"], true);
  EXPECT_EQ((*doc)["b"], "6443");
  EXPECT_TRUE((*doc)["c"].is_null());
  EXPECT_EQ((*doc)["d"], "x\ny");
}

TEST(YamlSubset, RefusesWhatItDoesNotUnderstandNamingTheLine) {
  struct Case {
    const char* text;
    const char* want;
  };
  for (const Case& c : {Case{"a: &x 1\n", "line 1: unsupported"}, Case{"a:\n\tb: 1\n", "line 2: tab"},
                        Case{"a: 1\na: 2\n", "line 2: duplicate key 'a'"}, Case{"a: |\n  text\n", "line 1: unsupported"},
                        Case{"a: 1\n  b: 2\n", "line 2: unexpected indentation"},
                        Case{"a: {b: 1}\n", "line 1: unsupported"}, Case{"a: 1\n---\nb: 2\n", "line 2: more than one"},
                        Case{"a: 'open\n", "line 1: unterminated"}}) {
    auto doc = ParseYamlSubset(c.text);
    ASSERT_FALSE(doc.ok()) << c.text;
    EXPECT_NE(doc.status().message().find(c.want), std::string::npos) << doc.status().message();
  }
}

}  // namespace
}  // namespace fgpu::k8s
