// `husk update --resources FILE`: spec::parse_resources (which validates),
// then the pure steps before the cgroup writes: the cpuset check against an
// online list and the v1/v2 translation, including the v2 device program.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cgroups/cgroups.h"
#include "spec/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cg = husk::cgroups;
  try {
    husk::spec::Resources r = husk::spec::parse_resources(std::string(reinterpret_cast<const char*>(data), size));
    cg::check_cpuset(r, "0-3", "0");
    cg::v1_writes(r);
    cg::v2_writes(r, false);
    cg::v2_writes(r, true);
    cg::device_filter_program(cg::effective_device_rules(r.devices, {}));
  } catch (const husk::Error&) {
    // Rejected resources; any other exception escapes and is a finding.
  }
  return 0;
}
