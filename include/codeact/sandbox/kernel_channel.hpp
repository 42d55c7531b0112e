// KernelChannel: the host end of the framed JSON channel to a sandbox's kernel.
//
// Frames are a 4-byte big-endian length followed by a UTF-8 JSON object, over the unix socket the
// kernel listens on (bind-mounted from the host). A call sends {"id", "op", ...fields} and reads
// frames until the reply with that id: events go to the caller's callback, "bridge_call" frames
// are answered through the caller's bridge handler (the kernel calling host functions).
// The protocol itself is documented with the kernel
// (src/sandbox/kernel/codeact_kernel/__init__.py).
//
// The socket lives in a directory the sandbox cannot write, and connect() still trusts nothing
// it finds there: it never follows a symbolic link (the path is opened O_PATH|O_NOFOLLOW, must be a
// socket owned by the directory's owner, and is connected through /proc/self/fd, so what was
// checked is what is connected to), and with a KernelAuth it proves the peer is the kernel of the
// expected sandbox before any reply is accepted: the first frame is
// {"op":"auth","sandbox_id","nonce"} (pipelined with the first request; an honest kernel of another
// sandbox drops the connection unread) and the kernel must answer with
// HMAC-SHA256(token, "codeact-kernel-auth\0" + sandbox_id + "\0" + nonce). A wrong or missing
// answer is PermissionDenied and closes the channel.
//
// What the kernel sends is untrusted too (a cell runs inside the kernel and can write frames of its
// own): a frame that is not a JSON object is refused (DataLoss), one nested more than 256
// arrays/objects deep is refused unparsed (DataLoss), a frame's memory grows only with the bytes
// received, and a kernel that stops reading makes a send fail at the call's deadline or on cancel
// (KernelCallOptions), never block.
//
// One call at a time per channel (calls are serialized by a mutex); a channel is cheap to open,
// so concurrent users open their own. A broken connection (the kernel died) gives Unavailable and
// leaves the channel closed; the caller decides how to recover.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_types.hpp"

namespace codeact::sandbox {

// Who the kernel at the other end must prove to be.
struct KernelAuth {
  std::string sandbox_id;
  std::string token_hex;  // the per-container secret (CODEACT_KERNEL_TOKEN)
};

struct KernelCallOptions {
  // How long to wait for the kernel to take the request and send its reply. 0 = forever. A
  // DeadlineExceeded leaves the kernel running whatever it was doing and closes the channel.
  std::chrono::milliseconds timeout{0};
  // Receives every event before the reply ("stream" {"name": "stdout"|"stderr", "text"},
  // "queued", "started", ...). Returning a duration moves the call's deadline to now + it.
  std::function<std::optional<std::chrono::milliseconds>(const core::Json& event)> on_event;
  BridgeHandler bridge;
  const core::CancelToken* cancel = nullptr;
};

class KernelChannel {
 public:
  // Connects to the kernel's socket, retrying until `timeout` while the socket does not exist
  // or refuses connections (a kernel that is still starting): Unavailable after that.
  // PermissionDenied at once when the path is not a socket (a symbolic link, a file) or is owned
  // by someone other than its directory's owner. With `auth`, the first call() verifies the
  // kernel's identity before anything else (see above).
  static core::Result<std::unique_ptr<KernelChannel>> connect(
      const std::string& socket_path, std::chrono::milliseconds timeout,
      const std::optional<KernelAuth>& auth = std::nullopt);

  // What is at `socket_path` now, without following links: nothing, something that is not a
  // socket we trust, a socket nobody listens on (a kernel that lost it), or a listening socket.
  enum class SocketState { kMissing, kUntrusted, kNotListening, kListening };
  static SocketState probe(const std::string& socket_path);
  ~KernelChannel();
  KernelChannel(const KernelChannel&) = delete;
  KernelChannel& operator=(const KernelChannel&) = delete;

  // Sends op with `fields` (a JSON object) and returns the reply object (without "id"/"type").
  // A reply with ok:false becomes an Error with the kernel's error type mapped to a code
  // (InvalidArgument, NotFound, PermissionDenied, FailedPrecondition, ...).
  core::Result<core::Json> call(const std::string& op, core::Json fields = core::Json::object(),
                                const KernelCallOptions& options = {});

  bool connected() const { return fd_ >= 0; }
  // True when the last call failed because the peer did not prove to be the expected kernel
  // (nothing sent on this channel was accepted by it as ours).
  bool auth_failed() const { return auth_failed_; }
  const std::string& socket_path() const { return path_; }

 private:
  KernelChannel(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  core::Status verify_auth(std::chrono::steady_clock::time_point deadline, bool has_deadline,
                           const core::CancelToken* cancel);
  // Sends one frame; a kernel that stops reading (a stopped process, a full socket buffer) makes
  // it fail at the deadline or on cancel, never block past them.
  core::Status write_frame(const core::Json& frame, std::chrono::steady_clock::time_point deadline,
                           bool has_deadline, const core::CancelToken* cancel);
  core::Result<core::Json> read_frame(std::chrono::steady_clock::time_point deadline,
                                      bool has_deadline, const core::CancelToken* cancel);
  void close();

  std::mutex mu_;
  int fd_ = -1;  // GUARDED_BY(mu_)
  std::string path_;
  int64_t next_id_ = 1;  // GUARDED_BY(mu_)
  // Set while the kernel's answer to the auth frame is still to be read and checked.
  std::optional<KernelAuth> pending_auth_;  // GUARDED_BY(mu_)
  std::string expected_mac_;                // GUARDED_BY(mu_)
  bool auth_failed_ = false;                // GUARDED_BY(mu_)
};

}  // namespace codeact::sandbox
