// KernelChannel against a fake kernel on a real unix socket: what the host does with frames a
// kernel (or a cell writing to the kernel's socket) should never send.
#include "codeact/sandbox/kernel_channel.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>

namespace codeact::sandbox {
namespace {

using core::Json;
using namespace std::chrono_literals;

std::string frame(std::string_view body) {
  std::string out;
  auto n = static_cast<uint32_t>(body.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
  return out.append(body);
}

// Listens on <tmp>/kernel.sock; serve() answers one connection with fixed bytes, then reads
// whatever the host sends until it hangs up.
class FakeKernel {
 public:
  FakeKernel() {
    char dir[] = "/tmp/codeact-kernel-channel-test-XXXXXX";
    dir_ = ::mkdtemp(dir);
    path_ = dir_ + "/kernel.sock";
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
  }
  ~FakeKernel() {
    if (server_.joinable()) server_.join();
    ::close(fd_);
    std::filesystem::remove_all(dir_);
  }
  const std::string& path() const { return path_; }

  void serve(std::string bytes) {
    server_ = std::thread([this, bytes = std::move(bytes)] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      (void)::send(c, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      ::shutdown(c, SHUT_WR);
      char sink[4096];
      while (::recv(c, sink, sizeof sink, 0) > 0) {
      }
      ::close(c);
    });
  }

 private:
  std::string dir_, path_;
  int fd_ = -1;
  std::thread server_;
};

// Found by tests/fuzz (kernel_frame_reader, input corpus/kernel_frame_reader/
// regression-frame-not-an-object): a frame holding a number made the host call .value() on it,
// which throws, so a cell writing "123" to the kernel's socket threw out of KernelChannel::call.
TEST(KernelChannelTest, AFrameThatIsNotAnObjectIsRefused) {
  for (const char* body : {"123", "[1, 2]", "\"reply\"", "null"}) {
    FakeKernel kernel;
    kernel.serve(frame(body) + frame(R"({"type": "reply", "id": 1, "ok": true})"));
    auto channel = KernelChannel::connect(kernel.path(), 5s);
    ASSERT_TRUE(channel.ok()) << channel.error().to_string();
    auto reply = (*channel)->call("execute", Json{{"code", "1"}}, {.timeout = 5s});
    ASSERT_FALSE(reply.ok()) << body;
    EXPECT_EQ(reply.error().code(), core::Code::kDataLoss) << body;
    EXPECT_NE(reply.error().message().find("not a JSON object"), std::string::npos)
        << reply.error().message();
    EXPECT_FALSE((*channel)->connected());
  }
}

TEST(KernelChannelTest, AnAuthAnswerThatIsNotAnObjectIsRefused) {
  FakeKernel kernel;
  kernel.serve(frame("99999999999999"));
  auto channel = KernelChannel::connect(kernel.path(), 5s, KernelAuth{"sbx-1", "00112233"});
  ASSERT_TRUE(channel.ok()) << channel.error().to_string();
  auto reply = (*channel)->call("execute", Json{{"code", "1"}}, {.timeout = 5s});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code(), core::Code::kDataLoss) << reply.error().to_string();
  EXPECT_FALSE((*channel)->connected());
}

TEST(KernelChannelTest, AFrameWithANumberBeyondADoubleIsRefused) {
  FakeKernel kernel;
  kernel.serve(frame(R"({"type": "stream", "id": 1, "n": 1e400})"));
  auto channel = KernelChannel::connect(kernel.path(), 5s);
  ASSERT_TRUE(channel.ok()) << channel.error().to_string();
  auto reply = (*channel)->call("execute", Json{{"code", "1"}}, {.timeout = 5s});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code(), core::Code::kDataLoss) << reply.error().to_string();
}

}  // namespace
}  // namespace codeact::sandbox
