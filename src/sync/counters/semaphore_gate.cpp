// SPDX-License-Identifier: Apache-2.0
#include "sync/counters/semaphore_gate.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>
#include <vector>

#include "net/server_text.h"
#include "redisync/errors.h"
#include "sync/acquire/cancel_signal.h"
#include "sync/identity.h"

namespace redisync::sync {

long long semaphore_wakeups(std::string_view payload) {
  long long value = 0;
  if (!net::parse_decimal(payload, value)) return -1;
  return value > 0 ? value : 0;
}

void semaphore_message_policy(net::Channel& channel, const std::string& payload,
                              net::PublishedAfter) {
  const long long n = semaphore_wakeups(payload);
  if (n < 0) return channel.wake_all();
  // min(v, local waiters): never more than the channel's local users (also keeps the
  // count small for Channel::wake's int arithmetic).
  const long long users = std::max(channel.references(), 0);
  if (n > 0 && users > 0) channel.wake(static_cast<int>(std::min(n, users)));
}

std::string semaphore_channel(const std::string& name) { return "redisson_sc:" + hash_tag(name); }

namespace {

// The live gates of every Client: (Client internals, key) -> gate. Gates are created and used
// on their Client's io thread; the mutex only protects the map shared between Clients.
struct Registry {
  std::mutex mutex;
  std::map<std::pair<const void*, std::string>, std::weak_ptr<SemaphoreGate>> gates;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: gates may die during static teardown
  return *r;
}

}  // namespace

std::shared_ptr<SemaphoreGate> SemaphoreGate::of(const void* owner, const std::string& key,
                                                 asio::io_context& io) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto& slot = r.gates[{owner, key}];
  if (auto gate = slot.lock()) return gate;
  auto gate = std::make_shared<SemaphoreGate>(owner, key, io);
  slot = gate;
  return gate;
}

SemaphoreGate::SemaphoreGate(const void* owner, std::string key, asio::io_context& io)
    : owner_(owner), key_(std::move(key)), io_(io) {}

SemaphoreGate::~SemaphoreGate() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.gates.find({owner_, key_});
  if (it != r.gates.end() && it->second.expired()) r.gates.erase(it);
}

bool SemaphoreGate::may_run(std::int64_t permits, std::size_t position) const {
  for (std::size_t i = 0; i < position && i < queue_.size(); ++i) {
    if (queue_[i]->permits > permits) return false;
  }
  return true;
}

void SemaphoreGate::enqueue(std::int64_t permits, std::optional<Clock::time_point> deadline,
                            Start start, Done done, std::shared_ptr<detail::CancelSignal> cancel) {
  const bool can_run = may_run(permits, queue_.size());
  if (!can_run && deadline && Clock::now() >= *deadline) {
    // A zero-wait try (or a wait already over) does not overtake a bigger local waiter.
    return done(nullptr, false);
  }
  auto entry = std::make_shared<Entry>();
  entry->permits = permits;
  entry->deadline = deadline;
  entry->start = std::move(start);
  entry->done = std::move(done);
  entry->cancel = std::move(cancel);
  queue_.push_back(entry);
  if (can_run) return run(entry);
  std::weak_ptr<Entry> weak = entry;
  if (deadline) {
    // Held back: give up at the deadline unless it gets to run before.
    entry->timer = std::make_unique<asio::steady_timer>(io_, *deadline);
    entry->timer->async_wait([self = shared_from_this(), weak](std::error_code ec) {
      auto e = weak.lock();
      if (!ec && e) self->give_up_queued(e, nullptr);
    });
  }
  if (entry->cancel) {
    // At once when the cancellation came before: the entry is queued, so it is found.
    entry->cancel->attach([self = shared_from_this(), weak] {
      auto e = weak.lock();
      if (!e) return;
      self->give_up_queued(e, detail::cancelled_error("the permits were acquired",
                                                      "nothing of it is left on the server"));
    });
  }
}

void SemaphoreGate::give_up_queued(const std::shared_ptr<Entry>& entry,
                                   std::exception_ptr error) {
  if (entry->started || !entry->done) return;
  auto it = std::find(queue_.begin(), queue_.end(), entry);
  if (it == queue_.end()) return;
  queue_.erase(it);
  if (entry->timer) entry->timer->cancel();
  if (entry->cancel) entry->cancel->detach();
  auto cb = std::move(entry->done);
  entry->done = nullptr;
  auto self = shared_from_this();  // `cb` may drop the last other reference
  advance();
  cb(std::move(error), false);
}

void SemaphoreGate::advance() {
  // Start every held-back entry that no earlier entry outbids any more.
  std::vector<std::shared_ptr<Entry>> ready;
  std::int64_t highest = 0;
  for (const auto& e : queue_) {
    if (!e->started && e->permits >= highest) ready.push_back(e);
    highest = std::max(highest, e->permits);
  }
  for (const auto& e : ready) run(e);
}

void SemaphoreGate::run(const std::shared_ptr<Entry>& entry) {
  // A start that completes at once re-enters advance(); never start an entry twice.
  if (entry->started || !entry->done) return;
  entry->started = true;
  ++running_;
  if (entry->timer) entry->timer->cancel();
  // From now on the acquire loop listens to the cancellation (the Start captured it).
  if (entry->cancel) entry->cancel->detach();
  auto self = shared_from_this();
  auto start = std::move(entry->start);
  entry->start = nullptr;
  try {
    start(entry->deadline, [self, entry](std::exception_ptr error, bool acquired) {
      self->finished(entry, error, acquired);
    });
  } catch (...) {
    finished(entry, std::current_exception(), false);
  }
}

void SemaphoreGate::finished(const std::shared_ptr<Entry>& entry, std::exception_ptr error,
                             bool acquired) {
  if (!entry->done) return;  // reported already
  auto it = std::find(queue_.begin(), queue_.end(), entry);
  if (it != queue_.end()) queue_.erase(it);
  --running_;
  auto done = std::move(entry->done);
  entry->done = nullptr;
  // Let held-back waiters try at once: this one may have left permits for them.
  auto self = shared_from_this();  // `done` may drop the last other reference
  advance();
  done(error, acquired);
}

}  // namespace redisync::sync
