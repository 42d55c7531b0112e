// KernelChannel: the host end of the framed JSON channel to a sandbox's kernel.
//
// Frames are a 4-byte big-endian length followed by a UTF-8 JSON object, over the unix socket the
// kernel listens on (bind-mounted from the host). A call sends {"id", "op", ...fields} and reads
// frames until the reply with that id: "stream" events go to the caller's callback, "bridge_call"
// frames are answered through the caller's bridge handler (the kernel calling host functions).
// The protocol itself is documented at the top of src/sandbox/kernel/codeact_kernel.py.
//
// One call at a time per channel (calls are serialized by a mutex); a channel is cheap to open,
// so concurrent users open their own. A broken connection (the kernel died) gives Unavailable and
// leaves the channel closed; the caller decides how to recover.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_types.hpp"

namespace codeact::sandbox {


struct KernelCallOptions {
  // How long to wait for the reply. 0 = forever. A DeadlineExceeded leaves the kernel running
  // whatever it was doing and closes the channel.
  std::chrono::milliseconds timeout{0};
  // Receives "stream" events ({"name": "stdout"|"stderr", "text": ...}).
  std::function<void(const core::Json& event)> on_event;
  BridgeHandler bridge;
  const core::CancelToken* cancel = nullptr;
};

class KernelChannel {
 public:
  // Connects to the kernel's socket, retrying until `timeout` while the socket does not exist
  // or refuses connections (a kernel that is still starting). Unavailable after that.
  static core::Result<std::unique_ptr<KernelChannel>> connect(const std::string& socket_path,
                                                              std::chrono::milliseconds timeout);
  ~KernelChannel();
  KernelChannel(const KernelChannel&) = delete;
  KernelChannel& operator=(const KernelChannel&) = delete;

  // Sends op with `fields` (a JSON object) and returns the reply object (without "id"/"type").
  // A reply with ok:false becomes an Error with the kernel's error type mapped to a code
  // (InvalidArgument, NotFound, PermissionDenied, FailedPrecondition, ...).
  core::Result<core::Json> call(const std::string& op, core::Json fields = core::Json::object(),
                                const KernelCallOptions& options = {});

  bool connected() const { return fd_ >= 0; }
  const std::string& socket_path() const { return path_; }

 private:
  KernelChannel(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  core::Status write_frame(const core::Json& frame);
  core::Result<core::Json> read_frame(std::chrono::steady_clock::time_point deadline, bool has_deadline,
                                      const core::CancelToken* cancel);
  void close();

  std::mutex mu_;
  int fd_ = -1;  // GUARDED_BY(mu_)
  std::string path_;
  int64_t next_id_ = 1;  // GUARDED_BY(mu_)
};

}  // namespace codeact::sandbox
