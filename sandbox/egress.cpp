#include "sandbox/egress.h"

#include <algorithm>

#include "sandbox/proxy.h"

namespace husk::rt {

void proxy_environment(std::map<std::string, std::string>& env, const SandboxOptions& o, bool husk_inside) {
  const std::string http = "http://127.0.0.1:" + std::to_string(kProxyPort);
  // curl, wget, git, pip (requests), Go, gRPC (grpc_proxy first), npm (HTTPS_PROXY when no npm_config_*).
  for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "grpc_proxy", "npm_config_proxy",
                        "npm_config_https_proxy"})
    env[k] = http;
  const std::string direct = no_proxy_list(o.allow_hosts, o.allow_host_loopback);
  env["NO_PROXY"] = env["no_proxy"] = direct;
  // curl and git for other schemes. The HTTP proxy, not socks5h:// on
  // socks::kPort: httpx (the OpenAI and Anthropic SDKs) builds a transport
  // for ALL_PROXY whatever the URL, and refuses socks5h (0.23: "Unknown
  // scheme for proxy URL") or lacks socksio for socks5: every client fails.
  // SOCKS5 is for who asks for it (curl --socks5-hostname, nc -X 5, proxychains).
  env["ALL_PROXY"] = env["all_proxy"] = http;
  env["RSYNC_PROXY"] = "127.0.0.1:" + std::to_string(kProxyPort);  // rsync:// by CONNECT
  // The JVM reads no variable: system properties, after the user's own
  // options (the JVM says "Picked up JAVA_TOOL_OPTIONS" on stderr).
  std::string non_proxy;
  for (size_t at = 0; at <= direct.size();) {
    size_t comma = std::min(direct.find(',', at), direct.size());
    const std::string name = direct.substr(at, comma - at);
    if (!name.empty()) non_proxy += (non_proxy.empty() ? "" : "|") + (name == "::1" ? "[::1]" : name);
    at = comma + 1;
  }
  std::string java;
  for (const char* scheme : {"http", "https"})
    java +=
        std::string(" -D") + scheme + ".proxyHost=127.0.0.1 -D" + scheme + ".proxyPort=" + std::to_string(kProxyPort);
  // Set even when empty: unset, the JVM's default list bypasses loopback names --allow-host-loopback allowed.
  java += " -Dhttp.nonProxyHosts=" + non_proxy;
  std::string& tool = env["JAVA_TOOL_OPTIONS"];
  tool = tool.empty() ? java.substr(1) : tool + java;
  // git over ssh: ssh reaches the name through the proxy. git prefers
  // GIT_SSH_COMMAND to GIT_SSH: either one the user set stays.
  if (husk_inside && !env.count("GIT_SSH_COMMAND") && !env.count("GIT_SSH"))
    env["GIT_SSH_COMMAND"] = std::string("ssh -o 'ProxyCommand ") + kHuskInside + " connect %h %p'";
}

}  // namespace husk::rt
