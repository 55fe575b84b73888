// SPDX-License-Identifier: Apache-2.0
// The local gate of semaphores (src/sync/counters/semaphore_gate.h), driven by a plain io_context and
// fake acquisitions: a waiter for n holds back later waiters for fewer, equal counts run side
// by side, no barging, held-back timeouts, independence of keys.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <string>
#include <vector>

#include "sync/counters/semaphore_gate.h"

namespace redisync::sync {
namespace {

using namespace std::chrono_literals;

struct Fake {
  std::string name;
  SemaphoreGate::Done finish;
};

struct Harness {
  asio::io_context io;
  std::vector<std::string> log;
  std::vector<std::shared_ptr<Fake>> running;
  int owner_tag = 0;

  std::shared_ptr<SemaphoreGate> gate(const std::string& key) {
    return SemaphoreGate::of(&owner_tag, key, io);
  }
  void enqueue(const std::shared_ptr<SemaphoreGate>& g, const std::string& name,
               std::int64_t permits, std::optional<Clock::time_point> deadline = std::nullopt) {
    g->enqueue(
        permits, deadline,
        [this, name](std::optional<Clock::time_point>, SemaphoreGate::Done done) {
          log.push_back("start " + name);
          running.push_back(std::make_shared<Fake>(Fake{name, std::move(done)}));
        },
        [this, name](std::exception_ptr, bool acquired) {
          log.push_back((acquired ? "got " : "gave up ") + name);
        });
  }
  void finish(const std::string& name, bool acquired) {
    for (auto it = running.begin(); it != running.end(); ++it) {
      if ((*it)->name == name) {
        auto f = *it;
        running.erase(it);
        return f->finish(nullptr, acquired);
      }
    }
    ADD_FAILURE() << name << " is not running";
  }
  std::vector<std::string> running_names() const {
    std::vector<std::string> out;
    for (auto& f : running) out.push_back(f->name);
    return out;
  }
};

using Names = std::vector<std::string>;

TEST(SemaphoreGateTest, BigWaiterHoldsBackLaterSmallerOnes) {
  Harness h;
  auto g = h.gate("semaphore:a");
  h.enqueue(g, "big", 3);
  h.enqueue(g, "small1", 1);
  h.enqueue(g, "small2", 2);
  h.enqueue(g, "bigger", 4);  // not outbid by anyone earlier: runs alongside
  EXPECT_EQ(h.running_names(), (Names{"big", "bigger"}));
  EXPECT_EQ(g->size(), 4u);
  EXPECT_EQ(g->running(), 2u);
  h.finish("big", true);
  // Only earlier waiters hold back: "bigger" came after the small ones.
  EXPECT_EQ(h.running_names(), (Names{"bigger", "small1", "small2"}));
  h.finish("bigger", false);
  h.finish("small1", true);
  h.enqueue(g, "tiny", 1);  // later than small2 (2), which still waits
  EXPECT_EQ(h.running_names(), (Names{"small2"}));
  h.finish("small2", true);
  EXPECT_EQ(h.running_names(), (Names{"tiny"}));
  h.finish("tiny", true);
  EXPECT_EQ(g->size(), 0u);
  EXPECT_EQ(g->running(), 0u);
}

TEST(SemaphoreGateTest, EqualCountsRunSideBySide) {
  Harness h;
  auto g = h.gate("semaphore:eq");
  for (int i = 0; i < 5; ++i) h.enqueue(g, "w" + std::to_string(i), 1);
  EXPECT_EQ(h.running.size(), 5u);
  for (int i = 0; i < 5; ++i) h.finish("w" + std::to_string(i), true);
  EXPECT_EQ(g->size(), 0u);
}

TEST(SemaphoreGateTest, ZeroWaitTryDoesNotBargePastABiggerWaiter) {
  Harness h;
  auto g = h.gate("semaphore:b");
  h.enqueue(g, "try-idle", 1, Clock::now());  // nobody queued: it runs (one attempt)
  EXPECT_EQ(h.log, (Names{"start try-idle"}));
  h.finish("try-idle", false);
  h.enqueue(g, "big", 2);
  h.enqueue(g, "try-small", 1, Clock::now());  // outbid: fails at once, no attempt
  EXPECT_EQ(h.log.back(), "gave up try-small");
  h.enqueue(g, "try-same", 2, Clock::now());  // same count: one attempt is fine
  EXPECT_EQ(h.running_names(), (Names{"big", "try-same"}));
  h.finish("try-same", false);
  h.finish("big", true);
  EXPECT_EQ(g->size(), 0u);
}

TEST(SemaphoreGateTest, HeldBackWaiterGivesUpAtItsDeadlineWithoutRunning) {
  Harness h;
  auto g = h.gate("semaphore:c");
  h.enqueue(g, "head", 5);
  h.enqueue(g, "short", 1, Clock::now() + 30ms);
  h.enqueue(g, "patient", 1);
  h.io.run_for(200ms);
  EXPECT_EQ(h.log, (Names{"start head", "gave up short"}));
  h.finish("head", true);
  EXPECT_EQ(h.running_names(), (Names{"patient"}));
  h.finish("patient", true);
  h.io.restart();
  h.io.run_for(10ms);
  EXPECT_EQ(g->size(), 0u);
}

TEST(SemaphoreGateTest, StartThatCompletesAtOnceIsNotRunTwice) {
  Harness h;
  auto g = h.gate("semaphore:sync");
  int starts = 0;
  h.enqueue(g, "big", 2);
  for (int i = 0; i < 3; ++i) {
    g->enqueue(
        1, std::nullopt,
        [&starts](std::optional<Clock::time_point>, SemaphoreGate::Done done) {
          ++starts;
          done(nullptr, true);  // completes inside start
        },
        [](std::exception_ptr, bool) {});
  }
  EXPECT_EQ(starts, 0);
  h.finish("big", true);
  EXPECT_EQ(starts, 3);
  EXPECT_EQ(g->size(), 0u);
}

TEST(SemaphoreGateTest, GatesAreSharedPerKeyAndGoneWhenIdle) {
  Harness h;
  auto a1 = h.gate("semaphore:x");
  auto a2 = h.gate("semaphore:x");
  auto b = h.gate("semaphore:y");
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b);
  h.enqueue(a1, "x1", 9);
  h.enqueue(b, "y1", 1);  // another key is independent
  EXPECT_EQ(h.running.size(), 2u);
  h.finish("x1", true);
  h.finish("y1", true);
  std::weak_ptr<SemaphoreGate> weak = a1;
  a1.reset();
  a2.reset();
  EXPECT_TRUE(weak.expired());
  EXPECT_NE(h.gate("semaphore:x"), nullptr);
}

}  // namespace
}  // namespace redisync::sync
