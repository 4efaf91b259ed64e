// `husk exec --process FILE`: the file's text as rt::parse_process reads it
// (wrapped into a config, spec::parse, spec::validate_process).
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "container/commands.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    husk::rt::parse_process(std::string(reinterpret_cast<const char*>(data), size), "1.3.0");
  } catch (const husk::Error&) {
    // A rejected process.json; any other exception escapes and is a finding.
  }
  return 0;
}
