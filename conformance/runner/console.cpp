#include "console.h"

#include <unistd.h>

namespace conformance {

Console::Console(const fs::path& path) : listener_(husk_test::listen_unix(path)) {
  reader_ = std::thread([this] { serve(); });
}

Console::~Console() {
  stop_ = true;
  reader_.join();
}

std::string Console::output() {
  std::lock_guard<std::mutex> l(mu_);
  return buf_;
}

// Short polls, so the destructor stops a reader whose runtime never connected.
bool Console::wait_readable(int fd) {
  while (!stop_)
    if (husk_test::readable(fd, 100)) return true;
  return false;
}

void Console::serve() {
  if (!wait_readable(listener_.get())) return;
  master_ = husk_test::receive_fd(listener_.get());
  if (!master_) return;
  char b[4096];
  while (wait_readable(master_.get())) {
    ssize_t n = ::read(master_.get(), b, sizeof b);
    if (n <= 0) break;  // EIO once every slave fd is closed
    std::lock_guard<std::mutex> l(mu_);
    buf_.append(b, static_cast<size_t>(n));
  }
}

}  // namespace conformance
