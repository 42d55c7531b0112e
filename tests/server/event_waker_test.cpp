#include "event_waker.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using namespace ::codeact::server;
using codeact::core::Json;
using Clock = std::chrono::steady_clock;

namespace {
std::string wire(const std::string& type, Json data = Json::object()) {
  return SseEvent{"run.1.0", type, std::move(data)}.wire();
}
}  // namespace

TEST(EventWaker, WakesForTheEventsItsPredicatePicks) {
  std::vector<std::string> seen;
  EventWaker w([&](const SseEvent& e) {
    seen.push_back(e.type);
    return e.type == "status" && e.data.value("status", "") == "idle";
  });
  EXPECT_TRUE(w.send(wire("text", {{"text", "event: status\ndata: {\"status\":\"idle\"}"}})));
  EXPECT_TRUE(w.send(": keepalive\n\n"));
  EXPECT_TRUE(w.send(wire("status", {{"status", "running"}})));
  EXPECT_FALSE(w.wait(Clock::now() + std::chrono::milliseconds(20)))
      << "an event named inside data, a comment, an event the predicate refuses: no wake";
  EXPECT_EQ(seen, (std::vector<std::string>{"text", "status"}));

  EXPECT_TRUE(w.send(wire("cell") + wire("status", {{"status", "idle"}})));
  EXPECT_TRUE(w.wait(Clock::now() + std::chrono::seconds(5))) << "the second event of a chunk";
  EXPECT_FALSE(w.wait(Clock::now())) << "one wake per arrival: the flag was cleared";
}

TEST(EventWaker, AWaiterIsWokenFromAnotherThreadAndByClose) {
  EventWaker w([](const SseEvent& e) { return e.type == "final"; });
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    w.send(wire("final", {{"text", "42"}}));
  });
  const auto t0 = Clock::now();
  EXPECT_TRUE(w.wait(t0 + std::chrono::seconds(10)));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "woken, not timed out";
  sender.join();

  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    w.close();
  });
  const auto t1 = Clock::now();
  EXPECT_FALSE(w.wait(t1 + std::chrono::seconds(10))) << "closed, nothing arrived";
  EXPECT_LT(Clock::now() - t1, std::chrono::seconds(5));
  closer.join();
  EXPECT_TRUE(w.closed());
  EXPECT_FALSE(w.send(wire("final"))) << "the hub drops a closed stream";
}
