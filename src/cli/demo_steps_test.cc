#include "cli/demo_steps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "cli/test_scratch_dir.h"

namespace fgpu::cli {
namespace {

// A stand-in for fgpu-probe that behaves like a healthy shared device: `alloc` holders
// leave a file named by their pid, which `info` lists as NVML's processes; concurrent
// `spin`s split the device between them. A word in the file `mode` breaks one behaviour.
constexpr const char* kFakeProbe = R"(#!/bin/sh
dir=$(dirname "$0")
mode=$(cat "$dir/mode" 2>/dev/null)
GiB=1073741824
case "$1" in
info)
  processes=""
  if [ "$mode" != hidden-processes ]; then
    for holder in "$dir"/holder.*; do
      [ -e "$holder" ] && processes="$processes{\"pid\":${holder##*.},\"used\":$((20 * GiB + 524288000))},"
    done
  fi
  echo "{\"event\":\"info\",\"driver_version\":13000,\"device\":0,\"name\":\"Fake GPU\",\"uuid\":\"GPU-fake\",\"total_mem\":$((80 * GiB)),\"mem_get_info\":{\"free\":$((79 * GiB)),\"total\":$((80 * GiB))},\"sm_count\":132,\"cc\":\"9.0\",\"nvml\":{\"available\":true,\"memory\":{\"total\":$((80 * GiB)),\"free\":0,\"used\":$((41 * GiB))},\"processes\":[${processes%,}],\"utilization_gpu\":0}}"
  ;;
alloc)
  if [ "$mode" = alloc-fails ]; then
    echo '{"event":"alloc","api":"mem_alloc","bytes":1,"result":"CUDA_ERROR_OUT_OF_MEMORY","code":2}'
    exit 1
  fi
  echo '{"event":"alloc","api":"mem_alloc","bytes":21474836480,"result":"CUDA_SUCCESS","code":0}'
  : >"$dir/holder.$$"
  echo "{\"event\":\"mem_get_info\",\"free\":$((39 * GiB)),\"total\":$((80 * GiB))}"
  sleep 1
  rm "$dir/holder.$$"
  ;;
fill)
  allocated=$((79 * GiB - 100 * 1048576))
  stop=CUDA_ERROR_OUT_OF_MEMORY
  [ "$mode" = memory-not-returned ] && allocated=$((59 * GiB))
  [ "$mode" = fill-stops-early ] && stop=CUDA_ERROR_INVALID_VALUE
  echo "{\"event\":\"fill\",\"api\":\"mem_alloc\",\"chunk\":268435456,\"allocations\":3,\"allocated_bytes\":$allocated,\"stop_code\":2,\"stop_error\":\"$stop\"}"
  ;;
spin)
  # Healthy: 0.4 s of kernels in all, within the 0.5 s the spinners take. Unshared: each
  # claims 2 s of kernels, more than one device could run in that time.
  : >"$dir/spinner.$$"
  sleep 0.5
  spinners=$(ls "$dir" | grep -c '^spinner\.')
  kernels=$((400 / spinners))
  [ "$mode" = unshared-spin ] && kernels=2000
  echo "{\"event\":\"spin\",\"target_duty\":100,\"elapsed_s\":0.5,\"kernels\":$kernels,\"kernel_us\":1000,\"achieved_duty\":$((99 / spinners)),\"throughput_kps\":1,\"latency_us\":{\"p50\":1000,\"p90\":1000,\"p99\":1000,\"max\":1000}}"
  sleep 0.5
  rm "$dir/spinner.$$"
  ;;
*) exit 2 ;;
esac
)";

class DemoStepsTest : public ::testing::Test {
 protected:
  DemoStepsTest() {
    const std::string probe = dir_.Write("fgpu-probe", kFakeProbe);
    chmod(probe.c_str(), 0755);
    target_.config = sim::DefaultSimConfig();
    target_.segment = "/fgpu-cli-demo-test-" + std::to_string(getpid());
    target_.segment_is_default = false;
  }
  ~DemoStepsTest() override { (void)sim::SharedDevices::Remove(target_.segment); }

  void SetMode(const std::string& mode) { dir_.Write("mode", mode); }
  DemoContext Context() { return {ProbeClient((dir_.path() / "fgpu-probe").string()), target_, &out_}; }

  ScratchDir dir_;
  SimTarget target_;
  std::ostringstream out_;
};

TEST_F(DemoStepsTest, EveryStepPassesOnADeviceThatBehaves) {
  const DemoContext demo = Context();
  Result<DeviceFacts> device = ShowDevice(demo);
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_EQ(device->total_mem, 80ull << 30);
  EXPECT_EQ(device->idle_free, 79ull << 30);
  Status step = ShareMemory(demo, *device);
  ASSERT_TRUE(step.ok()) << step.message() << "\n" << out_.str();
  step = FillToOutOfMemory(demo, *device);
  ASSERT_TRUE(step.ok()) << step.message() << "\n" << out_.str();
  step = ShareCompute(demo);
  ASSERT_TRUE(step.ok()) << step.message() << "\n" << out_.str();
  for (const char* expected :
       {"[1/5]", "Fake GPU", "GPU-fake", "compute capability 9.0", "[2/5]", "allocated 20 GiB", "[3/5]",
        "CUDA_ERROR_OUT_OF_MEMORY", "[4/5]", "alone:    achieved 99.0%", "together:", "49.0%", "sum 98.0%",
        "0.40 s of device time"}) {
    EXPECT_NE(out_.str().find(expected), std::string::npos) << expected << " missing from:\n" << out_.str();
  }
}

TEST_F(DemoStepsTest, ShareMemoryFailsWhenNvmlDoesNotListTheHolders) {
  SetMode("hidden-processes");
  Status step = ShareMemory(Context(), {80ull << 30, 79ull << 30});
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.message().find("NVML's process list does not show pid"), std::string::npos)
      << step.message();
}

TEST_F(DemoStepsTest, ShareMemoryReportsAFailedAllocation) {
  SetMode("alloc-fails");
  Status step = ShareMemory(Context(), {80ull << 30, 79ull << 30});
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.message().find("exit status 1"), std::string::npos) << step.message();
  EXPECT_NE(step.message().find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << step.message();
}

TEST_F(DemoStepsTest, ASmallDeviceGetsAQuarterOfItsMemoryPerHolder) {
  SetMode("hidden-processes");  // fails after printing the size it chose
  (void)ShareMemory(Context(), {16ull << 30, 15ull << 30});
  EXPECT_NE(out_.str().find("hold 4 GiB each"), std::string::npos) << out_.str();
}

TEST_F(DemoStepsTest, FillMustEndInOutOfMemory) {
  SetMode("fill-stops-early");
  Status step = FillToOutOfMemory(Context(), {80ull << 30, 79ull << 30});
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.message().find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << step.message();
}

TEST_F(DemoStepsTest, FillMustReachWhatAnIdleDeviceOffered) {
  SetMode("memory-not-returned");
  Status step = FillToOutOfMemory(Context(), {80ull << 30, 79ull << 30});
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.message().find("an idle device offered"), std::string::npos) << step.message();
}

TEST_F(DemoStepsTest, ShareComputeFailsWhenEachProcessGetsTheWholeDevice) {
  SetMode("unshared-spin");
  Status step = ShareCompute(Context());
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.message().find("did not share its timeline"), std::string::npos) << step.message();
}

}  // namespace
}  // namespace fgpu::cli
