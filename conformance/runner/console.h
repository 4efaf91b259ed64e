// The receiving end of --console-socket: accepts the runtime's connection,
// takes the pty master passed with SCM_RIGHTS and collects what it prints.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "runner.h"

namespace conformance {

class Console {
 public:
  explicit Console(const fs::path& path);
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;
  std::string output();

 private:
  husk_test::Fd listener_, master_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string buf_;
  std::thread reader_;

  bool wait_readable(int fd);
  void serve();
};

}  // namespace conformance
