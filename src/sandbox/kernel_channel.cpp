#include "codeact/sandbox/kernel_channel.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace codeact::sandbox {
namespace {

using core::Json;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxFrame = 512u * 1024u * 1024u;

int connect_once(const std::string& path, int* err) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    ::close(fd);
    *err = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *err = errno;
    ::close(fd);
    return -1;
  }
  return fd;
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

core::Result<std::unique_ptr<KernelChannel>> KernelChannel::connect(const std::string& socket_path,
                                                                    std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(500);
  int err = 0;
  while (true) {
    int fd = connect_once(socket_path, &err);
    if (fd >= 0) return std::unique_ptr<KernelChannel>(new KernelChannel(fd, socket_path));
    if (err != ENOENT && err != ECONNREFUSED && err != EAGAIN) break;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
  return core::unavailable(fmt::format("cannot connect to the kernel at {}: {}", socket_path, std::strerror(err)));
}

KernelChannel::~KernelChannel() { close(); }

void KernelChannel::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

core::Status KernelChannel::write_frame(const Json& frame) {
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
    ssize_t w = ::send(fd_, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close();
      return core::unavailable(fmt::format("the kernel connection broke while sending: {}", std::strerror(e)));
    }
    off += static_cast<size_t>(w);
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
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
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
        return core::unavailable(fmt::format("poll on the kernel socket failed: {}", std::strerror(errno)));
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
  uint32_t n = (uint32_t(hdr[0]) << 24) | (uint32_t(hdr[1]) << 16) | (uint32_t(hdr[2]) << 8) | uint32_t(hdr[3]);
  if (n > kMaxFrame) {
    close();
    return core::data_loss(fmt::format("the kernel sent a frame of {} bytes (limit {})", n, kMaxFrame));
  }
  std::string body(n, '\0');
  CODEACT_TRY_STATUS(read_exact(body.data(), n));
  auto j = core::parse_json(body, "kernel frame");
  if (!j.ok()) {
    close();
    return core::data_loss(j.error().message());
  }
  return std::move(j).value();
}

core::Result<Json> KernelChannel::call(const std::string& op, Json fields, const KernelCallOptions& options) {
  std::lock_guard lock(mu_);
  if (fd_ < 0) return core::unavailable(fmt::format("the kernel connection at {} is closed", path_));
  int64_t id = next_id_++;
  Json request = fields.is_object() ? std::move(fields) : Json::object();
  request["id"] = id;
  request["op"] = op;
  CODEACT_TRY_STATUS(write_frame(request));
  bool has_deadline = options.timeout.count() > 0;
  auto deadline = Clock::now() + options.timeout;
  while (true) {
    CODEACT_TRY(Json frame, read_frame(deadline, has_deadline, options.cancel));
    std::string type = core::json_string(frame, "type");
    if (type == "stream") {
      if (options.on_event) options.on_event(frame);
      continue;
    }
    if (type == "bridge_call") {
      Json answer = {{"type", "bridge_result"}, {"call_id", frame.value("call_id", Json())}};
      if (!options.bridge) {
        answer["ok"] = false;
        answer["error"] = {{"type", "Unimplemented"},
                           {"message", fmt::format("no host functions are available to this cell (called {})",
                                                   core::json_string(frame, "name"))}};
      } else {
        auto r = options.bridge(core::json_string(frame, "name"), frame.value("args", Json::array()),
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
      CODEACT_TRY_STATUS(write_frame(answer));
      continue;
    }
    if (type != "reply") continue;  // unknown event kinds are ignored (forward compatibility)
    if (frame.value("id", Json()) != Json(id)) continue;
    if (!frame.value("ok", false)) {
      const Json& err = frame.value("error", Json::object());
      std::string etype = core::json_string(err, "type", "Internal");
      return core::Error(code_for_kernel_error(etype), core::json_string(err, "message", "kernel error"));
    }
    frame.erase("id");
    frame.erase("type");
    return frame;
  }
}

}  // namespace codeact::sandbox
