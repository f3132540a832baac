#include "simulate/trace.h"

#include <gtest/gtest.h>

#include "simulate/testing.h"

namespace fgpu::simulate {
namespace {

constexpr const char* kNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "node-a,96000,393216,8,G2\n"
    "node-b,104000,524288,2,T4\n"
    "node-c,64000,262144,0,\n";

std::string ErrorOf(const std::string& nodes, const std::string& pods) {
  testing::TempFile node_file("nodes.csv", nodes);
  testing::TempFile pod_file("pods.csv", pods);
  Result<NodeList> node_list = LoadNodes(node_file.path());
  if (!node_list.ok()) return node_list.status().message();
  Result<PodList> pod_list = LoadPods(pod_file.path(), *node_list);
  return pod_list.ok() ? "" : pod_list.status().message();
}

TEST(LoadTraceTest, ReadsNodesAndPodsWithModelConstraints) {
  testing::TempFile node_file("nodes.csv", kNodes);
  testing::TempFile pod_file("pods.csv",
                             "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"
                             "p0,4000,1024,1,500,,LS\n"
                             "p1,8000,2048,2,1000,T4|V100,BE\n"
                             "p2,12000,0,0,0,,BE\n");
  Result<NodeList> nodes = LoadNodes(node_file.path());
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->nodes.size(), 3u);
  EXPECT_EQ(nodes->models.Name(nodes->nodes[1].model), "T4");
  EXPECT_EQ(nodes->nodes[2].model, sched::kNoModel);
  Result<PodList> pods = LoadPods(pod_file.path(), *nodes);
  ASSERT_TRUE(pods.ok()) << pods.status().message();
  ASSERT_EQ(pods->pods.size(), 3u);
  EXPECT_EQ(pods->pods[0].request.gpu_milli, 500);
  EXPECT_EQ(pods->pods[0].request.models, sched::kAnyModel);
  EXPECT_EQ(pods->pods[1].request.models, sched::ModelSet{1} << 1);  // T4 only: V100 is unknown
  EXPECT_EQ(pods->pods[1].line, 3);
  EXPECT_EQ(pods->never_fit, 0);
}

TEST(LoadTraceTest, MalformedRowsAreErrorsWithFileAndLine) {
  const std::string pods_header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  EXPECT_NE(ErrorOf("sn,cpu_milli,memory_mib,gpu,model\nx,0,1,1,T4\n", pods_header + "p,1,1,0,0\n")
                .find("nodes.csv:2: column cpu_milli '0' is outside 1.."),
            std::string::npos);
  EXPECT_NE(ErrorOf("sn,cpu_milli,memory_mib,gpu,model\nx,1000,-4,1,T4\n", pods_header + "p,1,1,0,0\n")
                .find("nodes.csv:2: column memory_mib '-4'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("sn,cpu_milli,memory_mib,gpu,model\nx,1000,1024,2,\n", pods_header + "p,1,1,0,0\n")
                .find("nodes.csv:2: a node with GPUs needs a model"),
            std::string::npos);
  EXPECT_NE(ErrorOf("sn,cpu_milli,memory_mib,gpu,model\nx,1000,1024,2,T4\nx,1000,1024,2,T4\n", pods_header)
                .find("nodes.csv:3: node 'x' is listed twice"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf("sn,cpu_milli,memory_mib\nx,1,1\n", pods_header).find("nodes.csv:1: missing column 'gpu'"),
      std::string::npos);
  EXPECT_NE(ErrorOf(kNodes, pods_header + "p,1000,1024,1,abc\n")
                .find("pods.csv:2: column gpu_milli 'abc' is not an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kNodes, pods_header + "p,-5,1024,1,100\n").find("pods.csv:2: column cpu_milli '-5'"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(kNodes, pods_header + "p,5,1024,1,0\n").find("pods.csv:2: gpu_milli 0 is outside 1..1000"),
      std::string::npos);
  EXPECT_NE(ErrorOf(kNodes, pods_header + "p,5,1024,1,1500\n").find("pods.csv:2: column gpu_milli '1500'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kNodes, pods_header + "p,5,1024\n").find("pods.csv:2: expected 5 fields"),
            std::string::npos);
}

TEST(LoadTraceTest, PodsNoNodeCouldHostAreCountedWithTheirLine) {
  testing::TempFile node_file("nodes.csv", kNodes);
  testing::TempFile pod_file("pods.csv",
                             "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                             "fine,1000,1024,1,500,\n"
                             "huge,999000,1024,1,500,\n"
                             "sixteen,1000,1024,16,1000,\n"
                             "h100,1000,1024,1,1000,H100\n");
  Result<NodeList> nodes = LoadNodes(node_file.path());
  Result<PodList> pods = LoadPods(pod_file.path(), *nodes);
  ASSERT_TRUE(pods.ok()) << pods.status().message();
  EXPECT_EQ(pods->pods.size(), 4u);  // kept: they arrive and fail, as in the FGD protocol
  EXPECT_EQ(pods->never_fit, 3);
  ASSERT_EQ(pods->warnings.size(), 3u);
  EXPECT_NE(pods->warnings[0].find("pods.csv:3: pod 'huge' is larger than every node"), std::string::npos);
  EXPECT_NE(pods->warnings[2].find("pods.csv:5: pod 'h100' accepts only GPU models no node has (H100)"),
            std::string::npos);
}

}  // namespace
}  // namespace fgpu::simulate
