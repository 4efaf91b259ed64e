#include "base/error.h"

#include <cstring>

namespace husk {

Error sys_error(const std::string& what, int err) {
  return Error(what + ": " + std::strerror(err), err);
}

void rethrow_with(const std::string& context, const Error& e) {
  throw Error(context + ": " + e.what(), e.err());
}

}  // namespace husk
