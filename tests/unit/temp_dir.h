// A temporary directory for one unit test, removed with all it holds.
#pragma once

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

namespace husk_test {

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "husk-unit-") {
    std::string tmpl = "/tmp/" + prefix + "XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace husk_test
