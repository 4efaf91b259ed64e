// `husk connect HOST PORT`, inside a husk sandbox with --allow-host: a TCP
// connection to HOST:PORT through the sandbox's proxy, on stdin and stdout
// (ssh's ProxyCommand). Errors are one line naming HOST:PORT.
#pragma once

#include <string>

namespace husk::rt {

// The CONNECT request for host:port, or an Error naming what is wrong with them.
std::string connect_head(const std::string& host, const std::string& port);
// What to say when the proxy answered `head` (its status line and headers)
// and `body` instead of a tunnel to `target` (HOST:PORT); "" for a 200.
std::string connect_refusal(const std::string& target, const std::string& head, const std::string& body);

int cmd_connect(const std::string& host, const std::string& port);

}  // namespace husk::rt
