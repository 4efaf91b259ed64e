// Byte moving shared by the sandbox's proxies (HTTP and SOCKS5) and `husk connect`.
#pragma once

#include <cstddef>

namespace husk::rt {

// All of p[0..n) to a socket or pipe; false when it is closed or fails.
bool write_all(int fd, const char* p, size_t n);
// Bytes both ways between a and b; an end that closes its side is passed on
// as a half close, until both have. `a_to`: where what is read from a goes
// when not to b (`husk connect`: the socket's bytes to stdout, stdin's to it);
// `b_to` likewise.
void relay(int a, int b, int a_to = -1, int b_to = -1);

}  // namespace husk::rt
