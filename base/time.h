// Timestamps as the state and the log write them.
#pragma once

#include <string>

namespace husk::base {

std::string now_rfc3339();  // UTC with nanoseconds, as runc's state "created"

}  // namespace husk::base
