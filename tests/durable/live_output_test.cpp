// The live-output hub (durable/live_output.hpp) as a server in the worker's process would use it:
// each subscriber gets its workflow's chunks in order and nothing else, a subscription that ends
// gets nothing more (not even from a callback still running when it ended), a slow subscriber
// neither blocks the publisher nor makes the hub hold more than its bound, and the offsets of a
// call's sink let a subscriber show a retried activity's output once.
#include "codeact/durable/live_output.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace codeact::durable {
namespace {

using namespace std::chrono_literals;

LiveChunk chunk(const std::string& workflow, const std::string& text, int64_t offset = 0) {
  LiveChunk c;
  c.workflow_id = workflow;
  c.run_id = workflow + "/run-1";
  c.run_step = 1;
  c.tool_call_id = "call_1";
  c.stream = "stdout";
  c.text = text;
  c.offset = offset;
  return c;
}

// What one subscriber received, and a way to wait for it.
class Received {
 public:
  LiveOutput::Callback callback() {
    return [this](const LiveChunk& c) {
      std::lock_guard lock(mu_);
      chunks_.push_back(c);
      cv_.notify_all();
    };
  }
  // The chunks once there are at least `n` (or after 5 s).
  std::vector<LiveChunk> wait_for(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 5s, [&] { return chunks_.size() >= n; });
    return chunks_;
  }
  std::vector<LiveChunk> now() {
    std::lock_guard lock(mu_);
    return chunks_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<LiveChunk> chunks_;
};

std::vector<std::string> texts(const std::vector<LiveChunk>& chunks) {
  std::vector<std::string> out;
  for (const auto& c : chunks) out.push_back(c.text);
  return out;
}

TEST(LiveOutput, ASubscriberGetsItsWorkflowsChunksInTheOrderPublished) {
  LiveOutput hub;
  Received mine, other;
  auto a = hub.subscribe("wf-a", mine.callback());
  auto b = hub.subscribe("wf-b", other.callback());
  std::vector<std::string> expected;
  for (int i = 0; i < 200; ++i) {
    expected.push_back("line " + std::to_string(i) + "\n");
    hub.publish(chunk("wf-a", expected.back()));
    if (i % 50 == 0) hub.publish(chunk("wf-b", "other " + std::to_string(i) + "\n"));
  }
  hub.publish(chunk("wf-nobody", "dropped: nobody watches\n"));
  EXPECT_EQ(texts(mine.wait_for(200)), expected);
  EXPECT_EQ(texts(other.wait_for(4)),
            (std::vector<std::string>{"other 0\n", "other 50\n", "other 100\n", "other 150\n"}));
  EXPECT_EQ(hub.dropped(), 0);
}

TEST(LiveOutput, ManySubscribersOfOneWorkflowEachGetEveryChunk) {
  LiveOutput hub;
  std::vector<std::unique_ptr<Received>> received;
  std::vector<LiveOutput::Subscription> subs;
  for (int i = 0; i < 16; ++i) {
    received.push_back(std::make_unique<Received>());
    subs.push_back(hub.subscribe("wf", received.back()->callback()));
  }
  // Published from several threads at once: each subscriber sees the same order.
  std::vector<std::thread> publishers;
  for (int t = 0; t < 4; ++t) {
    publishers.emplace_back([&hub, t] {
      for (int i = 0; i < 100; ++i)
        hub.publish(chunk("wf", std::to_string(t) + ":" + std::to_string(i)));
    });
  }
  for (auto& t : publishers) t.join();
  const auto first = texts(received[0]->wait_for(400));
  ASSERT_EQ(first.size(), 400u);
  for (const auto& r : received) EXPECT_EQ(texts(r->wait_for(400)), first);
}

TEST(LiveOutput, AnEndedSubscriptionGetsNothingMoreEvenFromACallbackRunningThen) {
  LiveOutput hub;
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> calls{0};
  std::atomic<bool> returned{false};
  auto sub = hub.subscribe("wf", [&](const LiveChunk&) {
    if (calls.fetch_add(1) == 0) {
      entered.set_value();
      released.wait();
    }
    returned = true;
  });
  hub.publish(chunk("wf", "first"));
  hub.publish(chunk("wf", "queued behind the first"));
  entered.get_future().wait();
  // reset() waits for the running callback to return, and the queued chunk is never delivered.
  std::thread releaser([&] {
    std::this_thread::sleep_for(200ms);
    release.set_value();
  });
  sub.reset();
  EXPECT_TRUE(returned) << "reset() returned while the callback was still running";
  releaser.join();
  hub.publish(chunk("wf", "after the end"));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(sub);
  sub.reset();  // idempotent
}

TEST(LiveOutput, ACallbackMayEndItsOwnSubscription) {
  LiveOutput hub;
  std::atomic<int> calls{0};
  LiveOutput::Subscription sub;
  std::promise<void> done;
  sub = hub.subscribe("wf", [&](const LiveChunk&) {
    ++calls;
    sub.reset();
    done.set_value();
  });
  hub.publish(chunk("wf", "one"));
  hub.publish(chunk("wf", "two"));
  ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(calls.load(), 1);
}

TEST(LiveOutput, ASlowSubscriberNeverBlocksThePublisherAndWhatWaitsForItIsBounded) {
  LiveOutputOptions options;
  options.max_queued_bytes = 64 * 1024;
  LiveOutput hub(options);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int64_t> bytes{0};
  std::atomic<int> calls{0};
  auto sub = hub.subscribe("wf", [&](const LiveChunk& c) {
    if (calls.fetch_add(1) == 0) released.wait();  // stuck until the cell has printed it all
    bytes += static_cast<int64_t>(c.text.size());
  });
  const std::string kilobyte(1024, 'x');
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) hub.publish(chunk("wf", kilobyte, int64_t{i} * 1024));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 2s) << "10 MB published while the subscriber was stuck";
  EXPECT_GT(hub.dropped(), 9000) << "what did not fit was dropped, not kept";
  release.set_value();
  // Every chunk was either delivered or dropped; what reached it is the chunk it was stuck on and
  // at most the bound queued behind it.
  const int64_t total = int64_t{10000} * 1024;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (bytes.load() + hub.dropped() * 1024 < total && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(bytes.load() + hub.dropped() * 1024, total);
  EXPECT_LE(bytes.load(), options.max_queued_bytes + 1024);
}

TEST(LiveOutput, ASlowSubscriberNeverSlowsACell) {
  LiveOutput hub;
  auto sub = hub.subscribe("wf", [](const LiveChunk&) { std::this_thread::sleep_for(50ms); });
  agent::RunContext ctx;
  ctx.run_id = "wf/run-1";
  ctx.run_step = 2;
  ctx.tool_call_id = "call_7";
  agent::ToolOutputSink sink = hub.call_sink("wf", ctx);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) sink("stdout", "line\n");  // 5 s of callbacks
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(LiveOutput, ACallsSinkCountsOffsetsPerStreamAndACursorShowsARetryOnce) {
  LiveOutput hub;
  Received got;
  auto sub = hub.subscribe("wf", got.callback());
  agent::RunContext ctx;
  ctx.run_id = "wf/run-1";
  ctx.run_step = 3;
  ctx.tool_call_id = "call_9";
  {
    agent::ToolOutputSink attempt1 = hub.call_sink("wf", ctx);
    attempt1("stdout", "ab");
    attempt1("stderr", "warn\n");
    attempt1("stdout", "cd\n");
  }
  // The worker died; the retried activity ran the cell again and printed it all again, and more.
  agent::ToolOutputSink attempt2 = hub.call_sink("wf", ctx);
  attempt2("stdout", "abcd\n");
  attempt2("stdout", "ef\n");
  attempt2("stderr", "warn\n");
  const auto chunks = got.wait_for(6);
  ASSERT_EQ(chunks.size(), 6u);
  EXPECT_EQ(chunks[0].workflow_id, "wf");
  EXPECT_EQ(chunks[0].run_id, "wf/run-1");
  EXPECT_EQ(chunks[0].run_step, 3);
  EXPECT_EQ(chunks[0].tool_call_id, "call_9");
  std::vector<std::pair<std::string, int64_t>> offsets;
  for (const auto& c : chunks) offsets.emplace_back(c.stream, c.offset);
  EXPECT_EQ(offsets, (std::vector<std::pair<std::string, int64_t>>{{"stdout", 0},
                                                                   {"stderr", 0},
                                                                   {"stdout", 2},
                                                                   {"stdout", 0},
                                                                   {"stdout", 5},
                                                                   {"stderr", 0}}));
  LiveOutputCursor cursor;
  std::string out, err;
  for (const auto& c : chunks) (c.stream == "stdout" ? out : err) += cursor.unseen(c);
  EXPECT_EQ(out, "abcd\nef\n");
  EXPECT_EQ(err, "warn\n");
}

TEST(LiveOutputCursor, ARepeatIsEmptyAnOverlapGivesItsTailAGapGivesTheWholeText) {
  LiveOutputCursor cursor;
  EXPECT_EQ(cursor.unseen(chunk("wf", "hello ", 0)), "hello ");
  EXPECT_EQ(cursor.unseen(chunk("wf", "hello ", 0)), "");
  EXPECT_EQ(cursor.unseen(chunk("wf", "lo world", 3)), "world");
  EXPECT_EQ(cursor.unseen(chunk("wf", "!", 20)), "!") << "after chunks dropped";
  LiveChunk other_call = chunk("wf", "hello ", 0);
  other_call.tool_call_id = "call_2";
  EXPECT_EQ(cursor.unseen(other_call), "hello ") << "offsets are per call";
}

TEST(LiveOutput, ASubscriptionMayOutliveTheHub) {
  LiveOutput::Subscription sub;
  agent::ToolOutputSink sink;
  {
    LiveOutput hub;
    Received got;
    sub = hub.subscribe("wf", got.callback());
    agent::RunContext ctx;
    sink = hub.call_sink("wf", ctx);
  }
  sink("stdout", "after the hub");  // nothing to deliver to, no crash
  sub.reset();
  EXPECT_FALSE(sub);
}

}  // namespace
}  // namespace codeact::durable
