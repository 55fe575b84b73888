// SPDX-License-Identifier: Apache-2.0
// A one-shot timer on some Client's I/O thread that any thread may cancel: the multi-lock's
// members live on different Clients, so its attempt arms timers from whichever thread
// answered last. The timer object itself is only touched on that thread; it lives as long
// as its pending wait.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <system_error>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include "redisync/config.h"

namespace redisync::detail {

class TimerSlot {
 public:
  static std::shared_ptr<TimerSlot> arm(asio::io_context& io, Duration delay,
                                        std::function<void()> fn) {
    auto slot = std::make_shared<TimerSlot>();
    asio::post(io, [slot, &io, delay, fn = std::move(fn)] {
      std::lock_guard lock(slot->mutex_);
      if (slot->cancelled_) return;
      auto timer = std::make_shared<asio::steady_timer>(io, delay);
      slot->timer_ = timer;
      slot->io_ = &io;
      timer->async_wait([timer, fn](std::error_code ec) {
        if (!ec) fn();
      });
    });
    return slot;
  }

  void cancel() {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    if (auto timer = timer_.lock()) asio::post(*io_, [timer] { timer->cancel(); });
  }

 private:
  std::mutex mutex_;
  bool cancelled_ = false;
  std::weak_ptr<asio::steady_timer> timer_;
  asio::io_context* io_ = nullptr;
};

}  // namespace redisync::detail
