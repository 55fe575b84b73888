// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/cancel_signal.h"

#include <string>

#include "redisync/async.h"
#include "redisync/errors.h"
#include "sync/client_core.h"

namespace redisync::detail {

void CancelSignal::request() noexcept {
  auto core = core_.lock();
  if (!core) return;
  try {
    core->post_from_outside([self = shared_from_this()] { self->fire(); });
  } catch (...) {
    // Out of memory on the emitting thread: the wait goes on as if never cancelled.
  }
}

void CancelSignal::attach(std::function<void()> on_cancel) {
  if (requested_) return on_cancel();
  on_cancel_ = std::move(on_cancel);
}

void CancelSignal::fire() {
  requested_ = true;
  if (!on_cancel_) return;
  auto on_cancel = std::move(on_cancel_);
  on_cancel_ = nullptr;
  on_cancel();
}

std::shared_ptr<CancelSignal> make_cancel_signal(const std::shared_ptr<ClientCore>& core) {
  return std::make_shared<CancelSignal>(core);
}

void request_cancel(const std::shared_ptr<CancelSignal>& signal) noexcept {
  if (signal) signal->request();
}

std::exception_ptr cancelled_error(std::string_view before, std::string_view outcome) {
  std::string text =
      "redisync: the wait was cancelled (its completion handler's cancellation slot) before ";
  text.append(before);
  text += "; ";
  text.append(outcome);
  return std::make_exception_ptr(CancelledError(text));
}

}  // namespace redisync::detail
