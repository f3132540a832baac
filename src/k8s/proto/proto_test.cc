// Our .proto files against the kubelet's wire contract: every gRPC method path, and every
// message's field numbers, names, types and labels, read at test time from the table in
// shared/reference/kubernetes/kubelet-grpc.md (the facts the files were written from), so a
// drift between the two fails here rather than against a real kubelet.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"
#include "pluginregistration.grpc.pb.h"

namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;

constexpr const char* kDraV1 = "k8s.io.kubelet.pkg.apis.dra.v1";
constexpr const char* kDraV1beta1 = "k8s.io.kubelet.pkg.apis.dra.v1beta1";

const DescriptorPool& Pool() {
  // Naming one message of each file links its generated code, which fills the generated pool.
  (void)v1beta1::RegisterRequest::descriptor();
  (void)k8s::io::kubelet::pkg::apis::dra::v1::Claim::descriptor();
  (void)k8s::io::kubelet::pkg::apis::dra::v1beta1::Claim::descriptor();
  (void)pluginregistration::PluginInfo::descriptor();
  return *DescriptorPool::generated_pool();
}

struct FieldRow {
  std::string message;
  int number = 0;
  std::string name;
  std::string type;  // "string", "bool", "int64", a message name, or "map<K,V>"
  bool repeated = false;
};

struct Contract {
  std::vector<std::string> method_paths;
  std::map<std::string, std::vector<FieldRow>> fields;  // full message name → rows
  std::vector<std::string> empty_messages;               // full names of messages with no fields
};

std::string Unquote(std::string s) {
  std::string out;
  for (char c : s) {
    if (c != '`') out += c;
  }
  size_t b = out.find_first_not_of(' ');
  size_t e = out.find_last_not_of(' ');
  return b == std::string::npos ? "" : out.substr(b, e - b + 1);
}

std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line.substr(1));
  std::string cell;
  while (std::getline(in, cell, '|')) cells.push_back(Unquote(cell));
  return cells;
}

// The reference's type cell: "string (max 63 chars)", "`Device`", "map<string, `X`>".
std::string NormaliseType(const std::string& cell) {
  std::string t;
  for (char c : cell) {
    if (c != ' ') t += c;
  }
  if (t.rfind("map<", 0) == 0) return t.substr(0, t.find('>') + 1);
  return t.substr(0, t.find('('));
}

// Reads the message and service tables of each section of kubelet-grpc.md. Section 1 is package
// v1beta1, section 2 both DRA packages, section 3 pluginregistration.
Contract ReadContract(std::istream& in) {
  Contract c;
  std::vector<std::string> packages;
  std::string line, message;
  const std::regex path(R"(`(/[A-Za-z0-9_.]+/[A-Za-z]+)`)");
  while (std::getline(in, line)) {
    if (line.rfind("## 1.", 0) == 0) packages = {"v1beta1"};
    if (line.rfind("## 2.", 0) == 0) packages = {kDraV1, kDraV1beta1};
    if (line.rfind("## 3.", 0) == 0) packages = {"pluginregistration"};
    if (packages.empty() || line.empty() || line[0] != '|') continue;
    for (std::sregex_iterator m(line.begin(), line.end(), path), end; m != end; ++m) {
      std::string p = (*m)[1];
      c.method_paths.push_back(p);
      // The DRA table gives v1 paths, "replace v1 by v1beta1 for v1beta1".
      std::string v1 = std::string("/") + kDraV1 + ".";
      if (p.rfind(v1, 0) == 0) c.method_paths.push_back("/" + std::string(kDraV1beta1) + p.substr(v1.size() - 1));
    }
    std::vector<std::string> cells = Cells(line);
    if (cells.size() < 4) continue;
    if (!cells[0].empty()) message = cells[0];
    if (cells[1] == "–" && cells[2] == "(no fields)") {
      for (const auto& pkg : packages) c.empty_messages.push_back(pkg + "." + message);
      continue;
    }
    if (cells[1].empty() || cells[1].find_first_not_of("0123456789") != std::string::npos) continue;
    for (const auto& pkg : packages) {
      FieldRow row{pkg + "." + message, std::stoi(cells[1]), cells[2], NormaliseType(cells[3]),
                   cells.size() > 4 && cells[4].rfind("repeated", 0) == 0};
      c.fields[row.message].push_back(row);
    }
  }
  return c;
}

std::string TypeOf(const FieldDescriptor& f) {
  if (f.is_map()) {
    const FieldDescriptor* k = f.message_type()->map_key();
    const FieldDescriptor* v = f.message_type()->map_value();
    return "map<" + TypeOf(*k) + "," + TypeOf(*v) + ">";
  }
  if (f.type() == FieldDescriptor::TYPE_MESSAGE) return f.message_type()->name();
  return f.type_name();
}

class KubeletContract : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(FGPU_K8S_REFERENCE_DIR) + "/kubelet-grpc.md");
    if (!in) GTEST_SKIP() << "no " FGPU_K8S_REFERENCE_DIR "/kubelet-grpc.md on this machine";
    contract_ = ReadContract(in);
  }
  Contract contract_;
};

TEST_F(KubeletContract, EveryMethodPathOfTheReferenceExists) {
  // 6 device plugin and registration paths, 2 DRA v1 (+2 v1beta1), 2 plugin registration.
  ASSERT_EQ(contract_.method_paths.size(), 12u);
  for (const std::string& p : contract_.method_paths) {
    size_t slash = p.rfind('/');
    std::string service = p.substr(1, slash - 1), method = p.substr(slash + 1);
    const auto* s = Pool().FindServiceByName(service);
    ASSERT_NE(s, nullptr) << p;
    EXPECT_NE(s->FindMethodByName(method), nullptr) << p;
  }
}

TEST_F(KubeletContract, EveryFieldMatchesTheReference) {
  ASSERT_EQ(contract_.fields.size(), 36u);  // 18 device plugin + 2 × 8 DRA + 2 registration
  for (const auto& [name, rows] : contract_.fields) {
    const Descriptor* d = Pool().FindMessageTypeByName(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_EQ(d->field_count(), static_cast<int>(rows.size())) << name << " has fields the reference lacks";
    for (const FieldRow& row : rows) {
      const FieldDescriptor* f = d->FindFieldByNumber(row.number);
      ASSERT_NE(f, nullptr) << name << " field " << row.number;
      EXPECT_EQ(f->name(), row.name) << name << " field " << row.number;
      EXPECT_EQ(TypeOf(*f), row.type) << name << "." << row.name;
      // A map is a repeated entry on the wire; the reference marks only plain repeated fields.
      EXPECT_EQ(f->is_repeated() && !f->is_map(), row.repeated) << name << "." << row.name;
    }
  }
}

TEST_F(KubeletContract, MessagesWithoutFieldsHaveNone) {
  ASSERT_EQ(contract_.empty_messages.size(), 4u);  // Empty, PreStartContainerResponse, 2 registration
  for (const std::string& name : contract_.empty_messages) {
    const Descriptor* d = Pool().FindMessageTypeByName(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_EQ(d->field_count(), 0) << name;
  }
}

// What the table's columns do not say the parser reads, checked by hand: streaming, the
// request/response types, and the few fields the issue names.
TEST(KubeletProto, ShapesTheKubeletDependsOn) {
  const auto& pool = Pool();
  const auto* law = pool.FindMethodByName("v1beta1.DevicePlugin.ListAndWatch");
  ASSERT_NE(law, nullptr);
  EXPECT_TRUE(law->server_streaming());
  EXPECT_FALSE(law->client_streaming());
  EXPECT_EQ(law->output_type()->full_name(), "v1beta1.ListAndWatchResponse");
  for (const char* pkg : {kDraV1, kDraV1beta1}) {
    std::string p = pkg;
    const auto* prep = pool.FindMethodByName(p + ".DRAPlugin.NodePrepareResources");
    ASSERT_NE(prep, nullptr) << p;
    EXPECT_FALSE(prep->server_streaming());
    EXPECT_EQ(prep->input_type()->full_name(), p + ".NodePrepareResourcesRequest");
    EXPECT_EQ(prep->output_type()->full_name(), p + ".NodePrepareResourcesResponse");
    const auto* claims = prep->output_type()->FindFieldByNumber(1);
    ASSERT_TRUE(claims != nullptr && claims->is_map());
    EXPECT_EQ(claims->message_type()->map_value()->message_type()->full_name(),
              p + ".NodePrepareResourceResponse");
  }
  EXPECT_EQ(v1beta1::ContainerAllocateResponse::descriptor()->FindFieldByName("cdi_devices")->number(), 5);
  EXPECT_EQ(pool.FindMethodByName("pluginregistration.Registration.GetInfo")->output_type()->full_name(),
            "pluginregistration.PluginInfo");
}

// The generated stubs name the same paths the kubelet dials.
TEST(KubeletProto, GeneratedStubsUseTheKubeletsPaths) {
  namespace dra1 = k8s::io::kubelet::pkg::apis::dra::v1;
  namespace dra1b1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
  EXPECT_STREQ(dra1::DRAPlugin::service_full_name(), "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin");
  EXPECT_STREQ(dra1b1::DRAPlugin::service_full_name(), "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin");
  EXPECT_STREQ(v1beta1::Registration::service_full_name(), "v1beta1.Registration");
  EXPECT_STREQ(v1beta1::DevicePlugin::service_full_name(), "v1beta1.DevicePlugin");
  EXPECT_STREQ(pluginregistration::Registration::service_full_name(), "pluginregistration.Registration");
}

}  // namespace
