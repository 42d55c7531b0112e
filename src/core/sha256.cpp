#include "codeact/core/sha256.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace codeact::core {

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr);
}

Sha256::~Sha256() = default;

void Sha256::update(std::string_view data) { EVP_DigestUpdate(ctx_->md, data.data(), data.size()); }

void Sha256::field(std::string_view data) {
  update(std::to_string(data.size()));
  update(":");
  update(data);
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->md, digest, &len);
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 sha;
  sha.update(data);
  return sha.hex();
}

Result<std::string> sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::string what = fmt::format("cannot read {}: {}", path, std::strerror(err));
    return err == ENOENT ? not_found(what) : internal_error(what);
  }
  Sha256 sha;
  std::string buffer(1 << 20, '\0');
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    sha.update(std::string_view(buffer.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return internal_error(fmt::format("cannot read {}", path));
  return sha.hex();
}

}  // namespace codeact::core
