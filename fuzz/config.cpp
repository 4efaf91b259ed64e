// config.json as `husk create` reads it: spec::parse, then spec::validate
// (what spec::load_bundle does after reading the file), then the policy
// rules an operator's policy or `husk check` apply to it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "policy/policy.h"
#include "spec/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    husk::spec::Spec s = husk::spec::parse(std::string(reinterpret_cast<const char*>(data), size));
    husk::spec::validate(s, true);
    static const husk::policy::Policy restricted = husk::policy::builtin("restricted");
    husk::policy::findings_table(husk::policy::evaluate(s, restricted, "/bundle"));
  } catch (const husk::Error&) {
    // A rejected config; any other exception escapes and is a finding.
  }
  return 0;
}
