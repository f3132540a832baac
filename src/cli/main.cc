// fgpu: the command-line front end. main() only wires subcommands to their actions; each
// subcommand's flags and work live in its own file (cli/commands.h).
#include "cli/command_line.h"
#include "cli/commands.h"
#ifdef FGPU_HAVE_K8S
#include "cli/k8s_command.h"
#endif

int main(int argc, char** argv) {
  using namespace fgpu::cli;
  CommandLine cli("fgpu: fractional GPU slices with enforced limits");

  CLI::App& sim = cli.AddGroup(cli.root(), "sim", "Run programs on the simulated GPU and inspect it");
  SimRunOptions sim_run;
  const auto run_sim_run = [&] { return RunSimRun(sim_run); };
  cli.AddLeaf(AddSimRunFlags(sim, &sim_run), run_sim_run, kSimRunExtrasHint);
  SimStatusOptions sim_status;
  cli.AddLeaf(AddSimStatusFlags(sim, &sim_status), [&] { return RunSimStatus(sim_status); });
  SimResetOptions sim_reset;
  cli.AddLeaf(AddSimResetFlags(sim, &sim_reset), [&] { return RunSimReset(sim_reset); });

  RunOptions run;
  cli.AddLeaf(AddRunFlags(cli.root(), &run), [&] { return RunRun(run); }, kSimRunExtrasHint);

  DemoOptions demo;
  cli.AddLeaf(AddDemoFlags(cli.root(), &demo), [&] { return RunDemo(demo); });
  SimulateOptions simulate;
  cli.AddLeaf(AddSimulateFlags(cli.root(), &simulate), [&] { return RunSimulate(simulate); });
  StatusOptions status;
  cli.AddLeaf(AddStatusFlags(cli.root(), &status), [&] { return RunStatus(status); });
  TopOptions top;
  cli.AddLeaf(AddTopFlags(cli.root(), &top), [&] { return RunTop(top); });
  ReportOptions report;
  cli.AddLeaf(AddReportFlags(cli.root(), &report), [&] { return RunReport(report); });
  CLI::App& slice = cli.AddGroup(cli.root(), "slice", "List, show, resize and delete the agent's slices");
  SliceOptions slice_options;
  cli.AddLeaf(AddSliceListFlags(slice, &slice_options), [&] { return RunSliceList(slice_options); });
  cli.AddLeaf(AddSliceShowFlags(slice, &slice_options), [&] { return RunSliceShow(slice_options); });
  cli.AddLeaf(AddSliceResizeFlags(slice, &slice_options), [&] { return RunSliceResize(slice_options); });
  cli.AddLeaf(AddSliceDeleteFlags(slice, &slice_options), [&] { return RunSliceDelete(slice_options); });
  AgentOptions agent;
  cli.AddLeaf(AddAgentFlags(cli.root(), &agent), [&] { return RunAgent(agent); });
#ifdef FGPU_HAVE_K8S
  CLI::App& k8s_group = cli.AddGroup(cli.root(), "k8s", "The Kubernetes plugins: DRA kubelet plugin and device plugin");
  K8sDraOptions k8s_dra;
  cli.AddLeaf(AddK8sDraFlags(k8s_group, &k8s_dra), [&] { return RunK8sDra(k8s_dra); });
  fgpu::k8s::DevicePluginOptions k8s_device_plugin;
  cli.AddLeaf(AddK8sDevicePluginFlags(k8s_group, &k8s_device_plugin), [&] { return RunK8sDevicePlugin(k8s_device_plugin); });
#endif
  cli.AddLeaf(AddVersionFlags(cli.root()), [] { return RunVersion(); });
  CompletionOptions completion;
  cli.AddLeaf(AddCompletionFlags(cli.root(), &completion), [&] { return RunCompletion(completion, cli.root()); });
  cli.AddLeaf(AddManFlags(cli.root()), [&] { return RunMan(cli.root()); });

  return cli.Run(argc, argv);
}
