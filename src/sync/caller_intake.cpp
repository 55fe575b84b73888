// SPDX-License-Identifier: Apache-2.0
#include "sync/caller_intake.h"

#include <asio/post.hpp>

namespace redisync::detail {

void CallerIntake::post_turn() {
  asio::post(io_, [this] { run_turn(); });
}

std::unique_ptr<CallerIntake::Work> CallerIntake::take() {
  std::lock_guard lock(mutex_);
  if (queue_.empty()) return nullptr;
  auto work = std::move(queue_.front());
  queue_.pop_front();
  return work;
}

bool CallerIntake::wait_for_backlog() {
  if (!backlog_ || admit_more(backlog_())) return false;
  if (!recheck_) recheck_ = std::make_unique<asio::steady_timer>(io_);
  recheck_->expires_after(kRecheck);
  recheck_->async_wait([this](const std::error_code& error) {
    if (!error) run_turn();
  });
  return true;
}

void CallerIntake::run_turn() {
  if (wait_for_backlog()) return;
  {
    std::lock_guard lock(mutex_);
    turn_posted_ = false;
  }
  // What is left after this turn (or after work that threw out of it, as a posted handler's
  // exception leaves the io_context's run) gets its turn after the reactor's.
  struct NextTurn {
    CallerIntake& intake;
    ~NextTurn() {
      std::lock_guard lock(intake.mutex_);
      if (!intake.queue_.empty() && !intake.turn_posted_) {
        intake.turn_posted_ = true;
        intake.post_turn();
      }
    }
  } next_turn{*this};
  for (std::size_t i = 0; i < kPerTurn; ++i) {
    auto work = take();
    if (!work) return;
    work->run();
  }
}

void CallerIntake::run_all() {
  while (auto work = take()) work->run();
}

}  // namespace redisync::detail
