// File names in husk's messages: what the sandboxed command named them must
// not reach the caller's terminal as control sequences.
#pragma once

#include <string>
#include <string_view>

namespace husk::base {

// `name` with each byte below 0x20, 0x7f, each UTF-8-encoded C1 control
// (U+0080-U+009F, which some terminals obey) and each byte that is not part
// of valid UTF-8 written as \xNN; the rest, valid UTF-8 included, as it is.
std::string printable(std::string_view name);

}  // namespace husk::base
