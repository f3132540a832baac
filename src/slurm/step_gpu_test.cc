#include "slurm/step_gpu.h"

#include <gtest/gtest.h>

namespace fgpu::slurm {
namespace {

TEST(StepGpu, StepGpusComeFirstThenTheJobsThenCuda) {
  EXPECT_EQ(*ChooseStepGpu({.step_gpus = "1", .job_gpus = "0", .cuda_visible_devices = "0"}), "1");
  // The batch step has only SLURM_JOB_GPUS.
  EXPECT_EQ(*ChooseStepGpu({.step_gpus = std::nullopt, .job_gpus = "3", .cuda_visible_devices = "0"}), "3");
  EXPECT_EQ(*ChooseStepGpu({.step_gpus = "", .job_gpus = "2", .cuda_visible_devices = std::nullopt}), "2");
  EXPECT_EQ(*ChooseStepGpu({.step_gpus = std::nullopt, .job_gpus = std::nullopt, .cuda_visible_devices = "0"}), "0");
  EXPECT_EQ(*ChooseStepGpu({.step_gpus = std::nullopt,
                            .job_gpus = std::nullopt,
                            .cuda_visible_devices = "GPU-2f0e1d3c-aaaa-bbbb-cccc-000000000001"}),
            "GPU-2f0e1d3c-aaaa-bbbb-cccc-000000000001");
}

TEST(StepGpu, NoGpuTellsWhatToAskFor) {
  Result<std::string> gpu = ChooseStepGpu({});
  ASSERT_FALSE(gpu.ok());
  EXPECT_NE(gpu.status().message().find("no GPU from Slurm"), std::string::npos);
  EXPECT_NE(gpu.status().message().find("--gres=shard:N"), std::string::npos);
  EXPECT_FALSE(ChooseStepGpu({.step_gpus = "", .job_gpus = "", .cuda_visible_devices = ""}).ok());
}

TEST(StepGpu, SeveralGpusAreRefusedBecauseASliceIsOneGpu) {
  Result<std::string> gpu = ChooseStepGpu({.step_gpus = "0,1", .job_gpus = std::nullopt, .cuda_visible_devices = "0,1"});
  ASSERT_FALSE(gpu.ok());
  EXPECT_NE(gpu.status().message().find("this step has 2 GPUs (SLURM_STEP_GPUS=0,1)"), std::string::npos)
      << gpu.status().message();
  EXPECT_NE(gpu.status().message().find("an fgpu slice is on one GPU"), std::string::npos);
}

TEST(StepGpu, MalformedListsAreRefused) {
  for (const char* bad : {"x", "0,", ",1", "NoDevFiles", "-1", "123456"}) {
    Result<std::string> gpu = ChooseStepGpu({.step_gpus = bad, .job_gpus = std::nullopt, .cuda_visible_devices = std::nullopt});
    ASSERT_FALSE(gpu.ok()) << bad;
    EXPECT_NE(gpu.status().message().find("is not a list of GPUs"), std::string::npos) << gpu.status().message();
  }
  EXPECT_EQ(*ChooseStepGpu({.step_gpus = " 1 ", .job_gpus = std::nullopt, .cuda_visible_devices = std::nullopt}), "1");
}

}  // namespace
}  // namespace fgpu::slurm
