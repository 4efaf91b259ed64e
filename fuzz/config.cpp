// config.json as `husk create` reads it: spec::parse, then spec::validate
// (what spec::load_bundle does after reading the file).
#include <cstddef>
#include <cstdint>
#include <string>

#include "spec/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    husk::spec::Spec s = husk::spec::parse(std::string(reinterpret_cast<const char*>(data), size));
    husk::spec::validate(s, true);
  } catch (const husk::Error&) {
    // A rejected config; any other exception escapes and is a finding.
  }
  return 0;
}
