#include "cli/version.h"

#include <seccomp.h>

#include "build_commit.h"
#include "spec/spec.h"

namespace husk::rt {

const char* build_commit() { return HUSK_COMMIT; }

std::string version_text() {
  // In a static husk this is the libseccomp linked in; in a dynamic one the
  // library loaded now, which is what filters are compiled with.
  const scmp_version* v = seccomp_version();
  return std::string("husk version ") + HUSK_VERSION + "\ncommit: " + HUSK_COMMIT + "\nspec: " + spec::kOciVersionMax +
         "\nbuild: " + HUSK_BUILD_TYPE + (HUSK_LINKED_STATIC ? ", static" : ", dynamic") +
         "\nlibseccomp: " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->micro);
}

}  // namespace husk::rt
