// SPDX-License-Identifier: Apache-2.0
// Per-operation cancellation of an async wait (Asio cancellation slots): the bridge between
// the thread that emits a cancellation and the wait on the Client's I/O thread.
// The slot's handler (include/redisync/async.h, connect_cancellation) calls request() on the
// emitting thread; the wait is told on the I/O thread, where it gives up as a wait whose
// deadline passed does (sync/acquire/acquire_fsm.h, AcquireFsm::cancel).
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string_view>

namespace redisync::detail {

class ClientCore;

class CancelSignal : public std::enable_shared_from_this<CancelSignal> {
 public:
  explicit CancelSignal(std::weak_ptr<ClientCore> core) : core_(std::move(core)) {}

  /// Any thread, any time (also after the wait ended, or the Client closed: then nothing).
  void request() noexcept;

  /// I/O thread: `on_cancel` runs (on the I/O thread) when a cancellation is requested, or at
  /// once when one was requested already. One wait per signal.
  void attach(std::function<void()> on_cancel);
  /// I/O thread: the wait ended; later requests do nothing.
  void detach() { on_cancel_ = nullptr; }

 private:
  void fire();  // I/O thread

  std::weak_ptr<ClientCore> core_;
  bool requested_ = false;            // I/O thread only
  std::function<void()> on_cancel_;   // I/O thread only
};

/// The CancelledError a cancelled wait completes with: "the wait was cancelled (...) before
/// `before`; `outcome`", one shape of text for every kind.
std::exception_ptr cancelled_error(std::string_view before, std::string_view outcome);

}  // namespace redisync::detail
