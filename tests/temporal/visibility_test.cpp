// Memo, describe and list against a real Temporal dev server: a memo given at start (or
// signal-with-start) is read back by describe_workflow and list_workflows, start and close times
// are RFC 3339, list filters by WorkflowType, WorkflowId and ExecutionStatus, pages through
// next_page_token, and shows every run of a workflow that continued as new.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <regex>
#include <set>
#include <thread>

#include "temporal_test_fixture.hpp"

namespace codeact::temporal::testing {
namespace {

using namespace std::chrono_literals;

const std::regex kRfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");

// Every run matching `query`, all pages read with `page_size`.
std::vector<WorkflowExecutionInfo> list_all(Client& client, const std::string& query,
                                            int page_size = 100, int* pages = nullptr) {
  std::vector<WorkflowExecutionInfo> out;
  std::string token;
  int n = 0;
  do {
    auto page = client.list_workflows(query, page_size, token);
    EXPECT_TRUE(page.ok()) << page.error().to_string();
    if (!page.ok()) break;
    ++n;
    for (auto& e : page->executions) out.push_back(std::move(e));
    token = page->next_page_token;
  } while (!token.empty() && n < 100);
  if (pages) *pages = n;
  return out;
}

// Lists `query` until `done` holds for the runs (visibility lags the start a little), at most
// 15 s; returns the last listing.
std::vector<WorkflowExecutionInfo> list_until(
    Client& client, const std::string& query,
    const std::function<bool(const std::vector<WorkflowExecutionInfo>&)>& done,
    int page_size = 100) {
  std::vector<WorkflowExecutionInfo> runs;
  for (int i = 0; i < 150; ++i) {
    runs = list_all(client, query, page_size);
    if (done(runs)) break;
    std::this_thread::sleep_for(100ms);
  }
  return runs;
}

std::function<bool(const std::vector<WorkflowExecutionInfo>&)> has_size(size_t n) {
  return [n](const std::vector<WorkflowExecutionInfo>& runs) { return runs.size() == n; };
}

TEST_F(TemporalTest, MemoGivenAtStartIsReadBackByDescribeAndList) {
  // No worker: the run stays open with its first workflow task pending.
  auto opts = start_options("memo");
  opts.memo = Json{{"owner", "alice"}, {"n", 3}, {"tags", {"a", "b"}}, {"none", nullptr}};
  std::string type = unique_name("Owned");
  auto run = client_->start_workflow(type, {Json("x")}, opts);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  opts.memo.erase("none");  // the server drops a null field, as the header says

  auto d = client_->describe_workflow(opts.id);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->memo, opts.memo);
  EXPECT_EQ(d->status, "Running");
  EXPECT_EQ(d->workflow_type, type);
  EXPECT_EQ(d->task_queue, queue_);
  EXPECT_EQ(d->run_id, run->run_id);
  EXPECT_TRUE(std::regex_match(d->start_time, kRfc3339)) << d->start_time;
  EXPECT_EQ(d->close_time, "") << "the run is open";
  EXPECT_GE(d->history_length, 2);

  auto runs = list_until(*client_, "WorkflowId = '" + opts.id + "'", has_size(1));
  ASSERT_EQ(runs.size(), 1u) << "not visible in the list within 15 s";
  EXPECT_EQ(runs[0].memo, opts.memo);
  EXPECT_EQ(runs[0].workflow_id, opts.id);
  EXPECT_EQ(runs[0].run_id, run->run_id);
  EXPECT_EQ(runs[0].workflow_type, type);
  EXPECT_EQ(runs[0].task_queue, queue_);
  EXPECT_EQ(runs[0].status, "Running");
  EXPECT_EQ(runs[0].start_time, d->start_time);
  EXPECT_EQ(runs[0].close_time, "");

  ASSERT_TRUE(client_->terminate_workflow(opts.id, "", "test done").ok());
  auto closed = client_->describe_workflow(opts.id);
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->status, "Terminated");
  EXPECT_TRUE(std::regex_match(closed->close_time, kRfc3339)) << closed->close_time;
  EXPECT_GE(closed->close_time, closed->start_time);
  EXPECT_EQ(closed->memo, opts.memo) << "a closed run keeps its memo";
  runs = list_until(*client_, "WorkflowId = '" + opts.id + "'",
                    [](const auto& r) { return r.size() == 1 && r[0].status == "Terminated"; });
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "Terminated");
  EXPECT_EQ(runs[0].close_time, closed->close_time);
  EXPECT_EQ(runs[0].memo, opts.memo);
}

TEST_F(TemporalTest, NoMemoIsAnEmptyObjectInDescribeAndList) {
  auto opts = start_options("no-memo");
  ASSERT_TRUE(client_->start_workflow(unique_name("Plain"), {}, opts).ok());
  auto d = client_->describe_workflow(opts.id);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->memo, Json::object());
  auto runs = list_until(*client_, "WorkflowId = '" + opts.id + "'", has_size(1));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].memo, Json::object());
  // A null memo means none too.
  auto null_memo = start_options("null-memo");
  null_memo.memo = nullptr;
  ASSERT_TRUE(client_->start_workflow(unique_name("Plain"), {}, null_memo).ok());
  EXPECT_EQ(client_->describe_workflow(null_memo.id)->memo, Json::object());
  (void)client_->terminate_workflow(opts.id);
  (void)client_->terminate_workflow(null_memo.id);
}

TEST_F(TemporalTest, MemoThatIsNotAnObjectIsRefusedAndNothingStarts) {
  auto opts = start_options("bad-memo");
  opts.memo = Json::array({"owner", "alice"});
  auto run = client_->start_workflow("Owned", {}, opts);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(run.error().message().find("memo must be a JSON object"), std::string::npos)
      << run.error().message();
  auto sws = client_->signal_with_start("Owned", {}, opts, "hello");
  ASSERT_FALSE(sws.ok());
  EXPECT_EQ(sws.error().code(), core::Code::kInvalidArgument);
  auto d = client_->describe_workflow(opts.id);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), core::Code::kNotFound);
}

TEST_F(TemporalTest, SignalWithStartRecordsTheMemo) {
  auto opts = start_options("sws-memo");
  opts.memo = Json{{"owner", "bob"}};
  auto run = client_->signal_with_start(unique_name("Owned"), {}, opts, "hello", {Json(1)});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  auto d = client_->describe_workflow(opts.id);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->memo, (Json{{"owner", "bob"}}));
  (void)client_->terminate_workflow(opts.id);
}

TEST_F(TemporalTest, ListFiltersByTypeAndStatusAndPagesThroughTheRuns) {
  std::string type = unique_name("Listed");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto opts = start_options("listed");
    opts.memo = Json{{"i", i}};
    ASSERT_TRUE(client_->start_workflow(type, {}, opts).ok());
    ids.push_back(opts.id);
  }
  std::string by_type = "WorkflowType = '" + type + "'";
  auto runs = list_until(*client_, by_type, has_size(3));
  ASSERT_EQ(runs.size(), 3u);
  std::set<std::string> seen;
  for (const auto& r : runs) {
    EXPECT_EQ(r.workflow_type, type);
    seen.insert(r.workflow_id);
    int i = static_cast<int>(std::find(ids.begin(), ids.end(), r.workflow_id) - ids.begin());
    EXPECT_EQ(r.memo, (Json{{"i", i}})) << r.workflow_id;
  }
  EXPECT_EQ(seen, std::set<std::string>(ids.begin(), ids.end()));

  // Pages of two: all three runs, each once, over two pages (or a third, empty one).
  int pages = 0;
  auto paged = list_all(*client_, by_type, 2, &pages);
  EXPECT_EQ(paged.size(), 3u);
  EXPECT_GE(pages, 2);
  std::set<std::string> paged_ids;
  for (const auto& r : paged) paged_ids.insert(r.workflow_id);
  EXPECT_EQ(paged_ids, seen);
  auto first = client_->list_workflows(by_type, 2);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->executions.size(), 2u);
  EXPECT_FALSE(first->next_page_token.empty());

  ASSERT_TRUE(client_->terminate_workflow(ids[1]).ok());
  auto running = list_until(*client_, by_type + " AND ExecutionStatus = 'Running'", has_size(2));
  ASSERT_EQ(running.size(), 2u);
  for (const auto& r : running) EXPECT_NE(r.workflow_id, ids[1]);
  auto terminated =
      list_until(*client_, by_type + " AND ExecutionStatus = 'Terminated'", has_size(1));
  ASSERT_EQ(terminated.size(), 1u);
  EXPECT_EQ(terminated[0].workflow_id, ids[1]);
  EXPECT_EQ(terminated[0].status, "Terminated");
  EXPECT_FALSE(terminated[0].close_time.empty());

  (void)client_->terminate_workflow(ids[0]);
  (void)client_->terminate_workflow(ids[2]);
}

TEST_F(TemporalTest, ListByWorkflowIdShowsEveryContinueAsNewRunWithTheMemo) {
  start_worker();
  auto opts = start_options("countdown-memo");
  opts.memo = Json{{"owner", "carol"}};
  auto run = client_->start_workflow("Countdown", {2}, opts);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  auto result = client_->get_result(opts.id, run->run_id, 30s);
  ASSERT_TRUE(result.ok()) << result.failure().to_string();

  auto last = client_->describe_workflow(opts.id);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->status, "Completed");
  EXPECT_EQ(last->memo, opts.memo) << "continue-as-new carries the memo to the new run";

  auto runs = list_until(*client_, "WorkflowId = '" + opts.id + "'", [](const auto& r) {
    return r.size() == 3 &&
           std::all_of(r.begin(), r.end(), [](const auto& e) { return e.status != "Running"; });
  });
  ASSERT_EQ(runs.size(), 3u);
  std::set<std::string> run_ids;
  int continued = 0;
  for (const auto& r : runs) {
    run_ids.insert(r.run_id);
    EXPECT_EQ(r.workflow_type, "Countdown");
    EXPECT_EQ(r.memo, opts.memo) << r.run_id;
    EXPECT_FALSE(r.close_time.empty());
    if (r.status == "ContinuedAsNew") ++continued;
  }
  EXPECT_EQ(run_ids.size(), 3u);
  EXPECT_EQ(continued, 2);
  EXPECT_TRUE(run_ids.count(run->run_id));
  EXPECT_TRUE(run_ids.count(last->run_id));
  EXPECT_EQ(runs[0].run_id, last->run_id) << "the newest run comes first";
}

TEST_F(TemporalTest, ListRefusesABadPageSizeAndAQueryTheServerCannotParse) {
  auto zero = client_->list_workflows("", 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().code(), core::Code::kInvalidArgument);
  auto bad = client_->list_workflows("WorkflowType = = 'x'");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), core::Code::kInvalidArgument) << bad.error().to_string();
  EXPECT_NE(bad.error().message().find("list workflows"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace codeact::temporal::testing
