#include "codeact/sandbox/kernel_channel.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

namespace codeact::sandbox {
namespace {

using core::Json;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxFrame = 512u * 1024u * 1024u;
// A frame's body is read in pieces of this size, so the memory a frame holds is what the kernel
// actually sent, not what its length prefix claims.
constexpr size_t kReadChunk = 1u << 20;

// Why a connection attempt failed: retry (the kernel is starting) or give up.
enum class Attempt { kConnected, kRetry, kUntrusted, kFailed };

// Opens `path` without following a symbolic link, checks that it is a socket owned by the owner
// of its directory (the host user who made the directory; the kernel creates the socket as that
// user), and connects to exactly that inode through /proc/self/fd (no second lookup of the path,
// so nothing can be swapped in between; also free of sun_path's 108-byte limit).
Attempt connect_once(const std::string& path, int* out_fd, int* err, std::string* why) {
  int opath = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (opath < 0) {
    *err = errno;
    return errno == ENOENT ? Attempt::kRetry : Attempt::kFailed;
  }
  struct stat st {};
  struct stat dir {};
  std::string parent = std::filesystem::path(path).parent_path().string();
  if (::fstat(opath, &st) != 0 || ::lstat(parent.empty() ? "." : parent.c_str(), &dir) != 0) {
    *err = errno;
    ::close(opath);
    return Attempt::kFailed;
  }
  if (!S_ISSOCK(st.st_mode)) {
    ::close(opath);
    *why = S_ISLNK(st.st_mode) ? "is a symbolic link, not the kernel's socket; it was not followed"
                               : "is not a socket";
    return Attempt::kUntrusted;
  }
  if (st.st_uid != dir.st_uid) {
    ::close(opath);
    *why = fmt::format("is owned by uid {}, not by uid {} who owns its directory", st.st_uid,
                       dir.st_uid);
    return Attempt::kUntrusted;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    ::close(opath);
    return Attempt::kFailed;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string via = fmt::format("/proc/self/fd/{}", opath);
  std::memcpy(addr.sun_path, via.c_str(), via.size() + 1);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  *err = rc == 0 ? 0 : errno;
  ::close(opath);
  if (rc != 0) {
    ::close(fd);
    return (*err == ECONNREFUSED || *err == EAGAIN) ? Attempt::kRetry : Attempt::kFailed;
  }
  *out_fd = fd;
  return Attempt::kConnected;
}

std::string hex(const unsigned char* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(digits[data[i] >> 4]);
    out.push_back(digits[data[i] & 15]);
  }
  return out;
}

core::Result<std::string> unhex(const std::string& text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (text.size() % 2 != 0) return core::invalid_argument("a kernel token must be hex digits");
  std::string out;
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return core::invalid_argument("a kernel token must be hex digits");
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

core::Result<std::string> kernel_mac(const KernelAuth& auth, const std::string& nonce) {
  CODEACT_TRY(std::string key, unhex(auth.token_hex));
  std::string msg = std::string("codeact-kernel-auth") + '\0' + auth.sandbox_id + '\0' + nonce;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), md, &len)) {
    return core::internal_error("HMAC-SHA256 failed");
  }
  return hex(md, len);
}

core::Code code_for_kernel_error(const std::string& type) {
  auto code = core::code_from_name(type);
  if (code != core::Code::kUnknown || type == "Unknown") return code;
  if (type == "ValueError" || type == "TypeError") return core::Code::kInvalidArgument;
  if (type == "FileNotFoundError" || type == "KeyError") return core::Code::kNotFound;
  if (type == "PermissionError") return core::Code::kPermissionDenied;
  return core::Code::kInternal;
}

}  // namespace

core::Result<std::unique_ptr<KernelChannel>> KernelChannel::connect(
    const std::string& socket_path, std::chrono::milliseconds timeout,
    const std::optional<KernelAuth>& auth) {
  auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(500);
  int err = 0;
  std::string why;
  int fd = -1;
  while (true) {
    Attempt a = connect_once(socket_path, &fd, &err, &why);
    if (a == Attempt::kConnected) break;
    if (a == Attempt::kUntrusted) {
      return core::permission_denied(fmt::format("the kernel socket {} {}", socket_path, why));
    }
    if (a == Attempt::kFailed || Clock::now() >= deadline) {
      return core::unavailable(
          fmt::format("cannot connect to the kernel at {}: {}", socket_path, std::strerror(err)));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
  auto channel = std::unique_ptr<KernelChannel>(new KernelChannel(fd, socket_path));
  if (auth) {
    unsigned char raw[32];
    if (::getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw)) {
      return core::internal_error(fmt::format("getrandom failed: {}", std::strerror(errno)));
    }
    std::string nonce = hex(raw, sizeof raw);
    CODEACT_TRY(channel->expected_mac_, kernel_mac(*auth, nonce));
    // Sent now, checked by the first call(): the request it pipelines with reaches only a kernel
    // that accepted this frame as meant for it.
    CODEACT_TRY_STATUS(channel->write_frame(
        Json{{"id", 0}, {"op", "auth"}, {"sandbox_id", auth->sandbox_id}, {"nonce", nonce}},
        Clock::now() + std::max(timeout, std::chrono::milliseconds(1000)), true, nullptr));
    channel->pending_auth_ = auth;
  }
  return channel;
}

KernelChannel::SocketState KernelChannel::probe(const std::string& socket_path) {
  int fd = -1, err = 0;
  std::string why;
  switch (connect_once(socket_path, &fd, &err, &why)) {
    case Attempt::kConnected:
      ::close(fd);
      return SocketState::kListening;
    case Attempt::kUntrusted:
      return SocketState::kUntrusted;
    case Attempt::kRetry:
      return err == ENOENT ? SocketState::kMissing : SocketState::kNotListening;
    case Attempt::kFailed:
      break;
  }
  return err == ENOENT ? SocketState::kMissing : SocketState::kNotListening;
}

core::Status KernelChannel::verify_auth(Clock::time_point deadline, bool has_deadline,
                                        const core::CancelToken* cancel) {
  const KernelAuth auth = *pending_auth_;
  pending_auth_.reset();
  CODEACT_TRY(Json frame, read_frame(deadline, has_deadline, cancel));
  const Json& err = frame.value("error", Json::object());
  if (core::json_string(frame, "type") != "reply" || frame.value("id", Json()) != Json(0) ||
      !core::json_bool(frame, "ok", false)) {
    auth_failed_ = true;
    close();
    return core::permission_denied(
        fmt::format("the process behind {} is not the kernel of sandbox \"{}\" (it refused the "
                    "authentication: {}); "
                    "nothing was run",
                    path_, auth.sandbox_id, core::json_string(err, "message", "no answer")));
  }
  std::string mac = core::json_string(frame, "mac");
  if (mac.size() != expected_mac_.size() ||
      CRYPTO_memcmp(mac.data(), expected_mac_.data(), mac.size()) != 0) {
    auth_failed_ = true;
    close();
    return core::permission_denied(fmt::format(
        "the process behind {} could not prove it is the kernel of sandbox \"{}\" (wrong "
        "authentication code); its answers were ignored",
        path_, auth.sandbox_id));
  }
  return core::ok_status();
}

KernelChannel::~KernelChannel() { close(); }

void KernelChannel::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

core::Status KernelChannel::write_frame(const Json& frame, Clock::time_point deadline,
                                        bool has_deadline, const core::CancelToken* cancel) {
  std::string body = core::dump_json(frame);
  uint32_t n = static_cast<uint32_t>(body.size());
  std::string out;
  out.reserve(body.size() + 4);
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out += body;
  size_t off = 0;
  while (off < out.size()) {
    ssize_t w = ::send(fd_, out.data() + off, out.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w >= 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      int e = errno;
      close();
      return core::unavailable(
          fmt::format("the kernel connection broke while sending: {}", std::strerror(e)));
    }
    // The kernel is not reading (busy, stopped, or refusing to): wait, but only as long as
    // the call may take.
    int wait_ms = 200;
    if (has_deadline) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        close();
        return core::deadline_exceeded(fmt::format(
            "the kernel did not take the request in time (it stopped reading after {} of {} "
            "bytes)",
            off, out.size()));
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left, 200));
    }
    if (cancel && cancel->cancelled()) {
      close();
      return core::cancelled("the kernel call was cancelled");
    }
    pollfd p{fd_, POLLOUT, 0};
    (void)::poll(&p, 1, wait_ms);
  }
  return core::ok_status();
}

core::Result<Json> KernelChannel::read_frame(Clock::time_point deadline, bool has_deadline,
                                             const core::CancelToken* cancel) {
  auto read_exact = [&](char* buf, size_t len) -> core::Status {
    size_t off = 0;
    while (off < len) {
      int wait_ms = 200;
      if (has_deadline) {
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
          close();
          return core::deadline_exceeded("the kernel did not answer in time");
        }
        wait_ms = static_cast<int>(std::min<int64_t>(left, 200));
      }
      if (cancel && cancel->cancelled()) {
        close();
        return core::cancelled("the kernel call was cancelled");
      }
      pollfd p{fd_, POLLIN, 0};
      int pr = ::poll(&p, 1, wait_ms);
      if (pr == 0) continue;
      if (pr < 0) {
        if (errno == EINTR) continue;
        close();
        return core::unavailable(
            fmt::format("poll on the kernel socket failed: {}", std::strerror(errno)));
      }
      ssize_t r = ::recv(fd_, buf + off, len - off, 0);
      if (r == 0) {
        close();
        return core::unavailable("the kernel closed the connection (it exited or was killed)");
      }
      if (r < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        int e = errno;
        close();
        return core::unavailable(fmt::format("the kernel connection broke: {}", std::strerror(e)));
      }
      off += static_cast<size_t>(r);
    }
    return core::ok_status();
  };
  unsigned char hdr[4];
  CODEACT_TRY_STATUS(read_exact(reinterpret_cast<char*>(hdr), 4));
  uint32_t n = (uint32_t(hdr[0]) << 24) | (uint32_t(hdr[1]) << 16) | (uint32_t(hdr[2]) << 8) |
               uint32_t(hdr[3]);
  if (n > kMaxFrame) {
    close();
    return core::data_loss(
        fmt::format("the kernel sent a frame of {} bytes (limit {})", n, kMaxFrame));
  }
  std::string body;
  while (body.size() < n) {
    size_t have = body.size();
    body.resize(have + std::min<size_t>(kReadChunk, n - have));
    CODEACT_TRY_STATUS(read_exact(body.data() + have, body.size() - have));
  }
  auto j = core::parse_json(body, "the kernel's frame");  // nested too deep: refused unparsed
  if (!j.ok()) {
    close();
    return core::data_loss(j.error().message());
  }
  if (!j->is_object()) {
    close();
    return core::data_loss(fmt::format("the kernel sent a frame that is not a JSON object: {}",
                                       core::json_preview(*j)));
  }
  return std::move(j).value();
}

core::Result<Json> KernelChannel::call(const std::string& op, Json fields,
                                       const KernelCallOptions& options) {
  std::lock_guard lock(mu_);
  if (fd_ < 0)
    return core::unavailable(fmt::format("the kernel connection at {} is closed", path_));
  int64_t id = next_id_++;
  Json request = fields.is_object() ? std::move(fields) : Json::object();
  request["id"] = id;
  request["op"] = op;
  bool has_deadline = options.timeout.count() > 0;
  auto deadline = Clock::now() + options.timeout;
  CODEACT_TRY_STATUS(write_frame(request, deadline, has_deadline, options.cancel));
  if (pending_auth_) CODEACT_TRY_STATUS(verify_auth(deadline, has_deadline, options.cancel));
  while (true) {
    CODEACT_TRY(Json frame, read_frame(deadline, has_deadline, options.cancel));
    std::string type = core::json_string(frame, "type");
    if (type == "bridge_call") {
      Json answer = {{"type", "bridge_result"}, {"call_id", frame.value("call_id", Json())}};
      if (!options.bridge) {
        answer["ok"] = false;
        answer["error"] = {
            {"type", "Unimplemented"},
            {"message", fmt::format("no host functions are available to this cell (called {})",
                                    core::json_string(frame, "name"))}};
      } else {
        auto r =
            options.bridge(core::json_string(frame, "name"), frame.value("args", Json::array()),
                           frame.value("kwargs", Json::object()));
        if (r.ok()) {
          answer["ok"] = true;
          answer["value"] = std::move(r).value();
        } else {
          answer["ok"] = false;
          answer["error"] = {{"type", std::string(core::code_name(r.error().code()))},
                             {"message", r.error().message()}};
        }
      }
      CODEACT_TRY_STATUS(write_frame(answer, deadline, has_deadline, options.cancel));
      continue;
    }
    if (type != "reply") {
      // Events ("stream", "queued", "started", and kinds a newer kernel may add).
      if (options.on_event) {
        if (auto extend = options.on_event(frame)) {
          deadline = Clock::now() + *extend;
          has_deadline = true;
        }
      }
      continue;
    }
    if (frame.value("id", Json()) != Json(id)) continue;
    if (!core::json_bool(frame, "ok", false)) {
      const Json& err = frame.value("error", Json::object());
      std::string etype = core::json_string(err, "type", "Internal");
      return core::Error(code_for_kernel_error(etype),
                         core::json_string(err, "message", "kernel error"));
    }
    frame.erase("id");
    frame.erase("type");
    return frame;
  }
}

}  // namespace codeact::sandbox
