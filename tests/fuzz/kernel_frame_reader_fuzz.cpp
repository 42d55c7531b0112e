// Fuzzes the host's reader of the sandbox kernel's frames (sandbox::KernelChannel: 4-byte length,
// JSON body; events, bridge calls and the reply to a call), through its public API over a real
// unix socket: the target plays the kernel, takes the request and sends the input back. What the
// kernel sends is untrusted (a cell can write frames of its own), so no input may crash the host.
//
// Input: raw bytes as they come on the socket, or, after a first line "frames", JSON bodies
// separated by "%%" lines that the target frames itself (so mutations keep lengths right). A
// line "auth" before that makes the channel expect the kernel's proof of identity first.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "codeact/sandbox/kernel_channel.hpp"
#include "fuzz_input.hpp"

using codeact::core::Json;

namespace {

// The private directory of the socket, removed when the fuzzer exits.
struct SocketDir {
  std::string path;
  ~SocketDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// A listening socket in a private directory, made once per process.
const std::string& kernel_socket(int* listen_fd) {
  static int fd = -1;
  static SocketDir dir_owner;
  static const std::string path = [] {
    char dir[] = "/tmp/codeact-fuzz-kernel-XXXXXX";
    if (!::mkdtemp(dir)) std::abort();
    dir_owner.path = dir;
    std::string p = std::string(dir) + "/kernel.sock";
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd, 8) != 0)
      std::abort();
    return p;
  }();
  *listen_fd = fd;
  return path;
}

// The bytes the fake kernel sends for `input` (see the file comment).
std::string wire_bytes(std::string_view input, bool* with_auth) {
  *with_auth = false;
  if (input.substr(0, 5) == "auth\n") {
    *with_auth = true;
    input.remove_prefix(5);
  }
  if (input.substr(0, 7) != "frames\n") return std::string(input);
  input.remove_prefix(7);
  std::string out;
  for (std::string_view body : codeact::fuzz::split_parts(input)) {
    uint32_t n = static_cast<uint32_t>(body.size());
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
    out.append(body);
  }
  return out;
}

// Sends `bytes`, ends its side of the stream, then reads (and drops) what the host sends until
// the host closes the connection.
void play_kernel(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t w = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  ::shutdown(fd, SHUT_WR);
  char sink[4096];
  while (::recv(fd, sink, sizeof sink, 0) > 0) {
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  bool with_auth = false;
  std::string bytes = wire_bytes(codeact::fuzz::as_text(data, size), &with_auth);
  int listen_fd = -1;
  const std::string& path = kernel_socket(&listen_fd);
  std::optional<codeact::sandbox::KernelAuth> auth;
  if (with_auth)
    auth = codeact::sandbox::KernelAuth{"sbx-fuzz", "00112233445566778899aabbccddeeff"};

  auto channel = codeact::sandbox::KernelChannel::connect(path, std::chrono::seconds(5), auth);
  if (!channel.ok()) std::abort();  // our own socket: a failure here is the harness's
  int kernel_fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (kernel_fd < 0) std::abort();
  std::thread kernel([&] { play_kernel(kernel_fd, bytes); });

  codeact::sandbox::KernelCallOptions options;
  options.timeout = std::chrono::seconds(5);
  int events = 0;
  options.on_event = [&](const Json& event) -> std::optional<std::chrono::milliseconds> {
    (void)event.dump();
    if (++events % 7 == 0) return std::chrono::seconds(5);
    return std::nullopt;
  };
  options.bridge = [](const std::string& name, const Json& args,
                      const Json& kwargs) -> codeact::core::Result<Json> {
    if (name == "fail") return codeact::core::not_found("no host function fail");
    return Json{{"name", name}, {"args", args}, {"kwargs", kwargs}};
  };
  for (int i = 0; i < 2 && (*channel)->connected(); ++i)
    (void)(*channel)->call("execute", Json{{"code", "x = 1"}, {"execution_id", "e1"}}, options);
  channel->reset();  // closes the host's end: the fake kernel stops reading
  kernel.join();
  return 0;
}
