#pragma once
/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sy::test {

class temp_dir {
 public:
  temp_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/sy-test-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace sy::test
