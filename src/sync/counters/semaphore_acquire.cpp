// SPDX-License-Identifier: Apache-2.0
#include "sync/counters/semaphore_acquire.h"

#include <utility>

#include "sync/acquire/acquire_record.h"
#include "sync/client_core.h"
#include "sync/counters/semaphore_gate.h"
#include "sync/identity.h"

namespace redisync::sync {

void start_semaphore_acquire_loop(const std::shared_ptr<detail::ClientCore>& core,
                                  SemaphoreAcquire acquire,
                                  std::function<void(std::exception_ptr, bool acquired)> done) {
  auto gate = SemaphoreGate::of(core.get(), acquire.gate_key, core->io());
  const std::int64_t permits = acquire.permits;
  const auto deadline = acquire.deadline;
  auto cancel = acquire.cancel;
  gate->enqueue(
      permits, deadline,
      [core, acquire = std::move(acquire)](std::optional<Clock::time_point> until,
                                           SemaphoreGate::Done finished) {
        AcquireLoop::Params params;
        params.policy = semaphore_message_policy;
        params.deadline = until;
        params.steps = acquire_record_steps(
            core, semaphore_channel(acquire.name), acquire.attempt,
            acquire.record_prefix + ":" + hash_tag(acquire.name) + ":" + random_request_id(),
            std::to_string(core->release_record_ttl_ms()));
        params.retry_attempts = core->config().retry_attempts;
        params.retry_interval = core->config().retry_interval;
        params.probe = acquire.probe;
        params.cancel = acquire.cancel;
        AcquireLoop::start(core->executor(), std::move(params),
                           [sent = acquire.sent, finished = std::move(finished)](
                               std::exception_ptr error, const AcquireOutcome& outcome) {
                             if (sent && outcome.acquired) *sent = outcome.sent;
                             finished(error, outcome.acquired);
                           });
      },
      std::move(done), std::move(cancel));
}

}  // namespace redisync::sync
