// state.json as every command that opens a container reads it:
// rt::parse_record (Handle::load without the file read). A planted or
// corrupt state.json must be an Error, never a crash or another exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "container/state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    husk::rt::parse_record(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const husk::Error&) {
    // A rejected state.json; any other exception escapes and is a finding.
  }
  return 0;
}
