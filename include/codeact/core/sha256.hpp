// SHA-256 digests, written once: of a string, of a stream of pieces, of a file. Lower-case hex.
// A Sha256 is used from one thread; the free functions are thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "codeact/core/result.hpp"

namespace codeact::core {

// A digest fed piece by piece: update(...)* then hex() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view data);
  // `data` length-prefixed ("3:abc"), so the fields ("ab","c") and ("a","bc") digest differently.
  void field(std::string_view data);
  // The digest of everything fed so far (64 hex digits). Ends the digest: call it once.
  std::string hex();

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

// The digest of `data`, 64 hex digits.
std::string sha256_hex(std::string_view data);
// The digest of the file at `path`, read in pieces. NotFound/Internal when it cannot be read.
Result<std::string> sha256_file(const std::string& path);

}  // namespace codeact::core
