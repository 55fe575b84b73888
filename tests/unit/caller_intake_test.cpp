// SPDX-License-Identifier: Apache-2.0
// CallerIntake (src/sync/caller_intake.h) on an io_context run by the test thread: the calls
// handed over keep their order, and a burst of them leaves the rest of the loop (here: a
// handler posted after the burst, as a reply or timer would be) a turn every kPerTurn calls.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <stdexcept>
#include <vector>

#include "sync/caller_intake.h"

using redisync::detail::CallerIntake;

TEST(CallerIntake, ABurstKeepsItsOrderAndLeavesTheLoopATurnBetweenBatches) {
  asio::io_context io;
  CallerIntake intake(io);
  std::vector<int> ran;
  constexpr int kBurst = 10 * static_cast<int>(CallerIntake::kPerTurn);
  for (int i = 0; i < kBurst; ++i) intake.push([&ran, i] { ran.push_back(i); });
  // Posted after the whole burst, as the reactor's next turn is.
  int calls_before_other_work = -1;
  asio::post(io, [&] { calls_before_other_work = static_cast<int>(ran.size()); });
  io.run();
  ASSERT_EQ(ran.size(), static_cast<std::size_t>(kBurst));
  for (int i = 0; i < kBurst; ++i) EXPECT_EQ(ran[static_cast<std::size_t>(i)], i);
  // One posted handler per call ran the whole burst first (kBurst).
  EXPECT_EQ(calls_before_other_work, static_cast<int>(CallerIntake::kPerTurn));
}

TEST(CallerIntake, CallsHandedOverWhileATurnRunsAreRunToo) {
  asio::io_context io;
  CallerIntake intake(io);
  std::vector<int> ran;
  intake.push([&] {
    ran.push_back(0);
    for (int i = 1; i <= 200; ++i) intake.push([&ran, i] { ran.push_back(i); });
  });
  io.run();
  ASSERT_EQ(ran.size(), 201u);
  for (int i = 0; i <= 200; ++i) EXPECT_EQ(ran[static_cast<std::size_t>(i)], i);
}

TEST(CallerIntake, ACallThatThrowsLeavesTheRestToRun) {
  asio::io_context io;
  CallerIntake intake(io);
  std::vector<int> ran;
  intake.push([] { throw std::runtime_error("start failed"); });
  for (int i = 0; i < 3; ++i) intake.push([&ran, i] { ran.push_back(i); });
  EXPECT_THROW(io.run(), std::runtime_error);  // as a posted handler's exception leaves run()
  io.restart();
  io.run();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
}

TEST(CallerIntake, RunAllRunsWhatIsQueuedAtOnce) {
  asio::io_context io;
  CallerIntake intake(io);
  int ran = 0;
  for (int i = 0; i < 1000; ++i) intake.push([&] { ++ran; });
  intake.run_all();  // the close: everything admitted before it, whatever the batch size
  EXPECT_EQ(ran, 1000);
  io.run();  // the turn posted for them finds nothing left
  EXPECT_EQ(ran, 1000);
}

// Admission (issue 34): a burst waits while the server has kMaxInFlight requests to answer
// and is answering them; it goes on, in order, once the backlog is under the bound.
TEST(CallerIntake, ABurstWaitsWhileTooManyRequestsAreUnanswered) {
  asio::io_context io;
  redisync::detail::Backlog backlog{CallerIntake::kMaxInFlight, std::chrono::milliseconds(10)};
  CallerIntake intake(io, [&] { return backlog; });
  std::vector<int> ran;
  for (int i = 0; i < 100; ++i) intake.push([&ran, i] { ran.push_back(i); });
  io.run_for(std::chrono::milliseconds(30));
  EXPECT_TRUE(ran.empty()) << ran.size() << " calls started over a full backlog";
  backlog.in_flight = CallerIntake::kMaxInFlight - 1;
  io.restart();
  io.run();  // returns once nothing is queued: no timer is left armed
  ASSERT_EQ(ran.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ran[static_cast<std::size_t>(i)], i);
}

// A backlog whose oldest reply is kStalledReplies late is a stalled server, not a burst: the
// calls start (and time out as their own timeouts say) instead of waiting here.
TEST(CallerIntake, AStalledServerHoldsNoCallBack) {
  asio::io_context io;
  const redisync::detail::Backlog stalled{10 * CallerIntake::kMaxInFlight,
                                          CallerIntake::kStalledReplies};
  CallerIntake intake(io, [&] { return stalled; });
  int ran = 0;
  for (int i = 0; i < 100; ++i) intake.push([&] { ++ran; });
  io.run();
  EXPECT_EQ(ran, 100);
}

TEST(CallerIntake, AdmissionEdges) {
  using redisync::detail::Backlog;
  constexpr auto bound = CallerIntake::kMaxInFlight;
  constexpr auto stall = CallerIntake::kStalledReplies;
  EXPECT_TRUE(CallerIntake::admit_more(Backlog{}));
  EXPECT_TRUE(CallerIntake::admit_more(Backlog{bound - 1, stall - std::chrono::milliseconds(1)}));
  EXPECT_FALSE(CallerIntake::admit_more(Backlog{bound, stall - std::chrono::milliseconds(1)}));
  EXPECT_TRUE(CallerIntake::admit_more(Backlog{bound, stall}));
}
