// kerneleval devices: the devices an engine (embedded or --server) runs on,
// matched to the peak table.
#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "cli/command.h"
#include "cli/engine_session.h"

namespace kerneleval::cli {
namespace {

struct DevicesFlags {
  bool json = false;
  EngineSessionFlags session;
};

void Run(const DevicesFlags& flags) {
  absl::StatusOr<std::unique_ptr<EngineSession>> session = OpenEngineSession(flags.session);
  auto fail = [&](const absl::Status& status) {
    SetExitCode(FailCommand("devices", flags.json, ExitCodeFor(status),
                            absl::StatusCodeToString(status.code()), status.message(),
                            /*code_on_stderr=*/true));
  };
  if (!session.ok()) return fail(session.status());
  absl::StatusOr<v1::ListDevicesResponse> devices = (*session)->ListDevices();
  if (!devices.ok()) return fail(devices.status());
  if (flags.json) {
    std::printf("%s\n", ToJson(*devices).c_str());
    return SetExitCode(kExitOk);
  }
  // The name column as wide as the longest name (CPU names run long).
  int name_width = 4;
  for (const v1::DeviceInfo& d : devices->devices()) {
    name_width = std::max(name_width, static_cast<int>(d.name().size()));
  }
  absl::PrintF("%-8s %-7s %-*s %-5s %5s %10s %9s %s\n", "id", "backend", name_width, "name", "cc",
               "SMs", "memory", "L2", "roofline");
  for (const v1::DeviceInfo& d : devices->devices()) {
    absl::PrintF("%-8s %-7s %-*s %-5s %5d %7.1f GiB %6.1f MiB %s\n", d.id(), d.backend(),
                 name_width, d.name(),
                 d.backend() == "cuda" ? absl::StrFormat("%d.%d", d.compute_capability_major(),
                                                         d.compute_capability_minor())
                                       : "-",
                 d.sm_count(), d.memory_bytes() / double(1 << 30), d.l2_bytes() / double(1 << 20),
                 d.roofline_known() ? absl::StrFormat("known (%s)", d.peaks().name())
                                    : std::string("unknown"));
  }
  SetExitCode(kExitOk);
}

void AddDevices(CLI::App& root) {
  auto flags = std::make_shared<DevicesFlags>();
  CLI::App* cmd = root.add_subcommand(
      "devices", "List the devices kernels run on and whether their roofline is known");
  cmd->add_flag("--json", flags->json, "Print as JSON (proto field names)");
  AddEngineSessionFlags(cmd, &flags->session);
  cmd->callback([flags] { Run(*flags); });
}

}  // namespace

KERNELEVAL_CLI_COMMAND("devices", AddDevices);

}  // namespace kerneleval::cli
