#include "sync/watchdog.h"

#include <memory>

#include "lua/scripts.h"
#include "redisync/errors.h"

namespace redisync::sync {

std::vector<std::vector<RenewalKey>> plan_batches(const std::vector<RenewalKey>& keys,
                                                  std::size_t batch_size) {
  std::vector<std::vector<RenewalKey>> batches;
  if (batch_size == 0) batch_size = 1;
  for (std::size_t i = 0; i < keys.size(); i += batch_size) {
    const auto end = std::min(keys.size(), i + batch_size);
    batches.emplace_back(keys.begin() + static_cast<std::ptrdiff_t>(i),
                         keys.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return batches;
}

bool lease_ran_out(Clock::time_point last_renewed, Clock::time_point now, Duration lease) {
  return now - last_renewed >= lease;
}

Watchdog::Watchdog(net::Executor& executor, Duration lease, std::size_t batch_size,
                   LostHandler lost)
    : executor_(executor),
      lease_(lease),
      batch_size_(batch_size),
      lost_(std::move(lost)),
      timer_(executor.io()) {}

void Watchdog::add(const std::string& key, const std::string& field) {
  auto& e = entries_[RenewalKey{key, field}];
  if (e.count++ == 0) e.last_renewed = Clock::now();
  schedule();
}

void Watchdog::remove(const std::string& key, const std::string& field) {
  auto it = entries_.find(RenewalKey{key, field});
  if (it == entries_.end()) return;
  if (--it->second.count <= 0) entries_.erase(it);
}

void Watchdog::forget(const std::string& key, const std::string& field) {
  entries_.erase(RenewalKey{key, field});
}

void Watchdog::remove_all(const std::string& key) {
  auto it = entries_.lower_bound(RenewalKey{key, ""});
  while (it != entries_.end() && it->first.key == key) it = entries_.erase(it);
}

void Watchdog::stop() {
  stopped_ = true;
  timer_.cancel();
}

void Watchdog::schedule() {
  if (scheduled_ || round_in_flight_ || stopped_ || entries_.empty()) return;
  scheduled_ = true;
  // The next round starts a third of the lease after the previous one ended (spec §3.1).
  timer_.expires_after(std::max(lease_ / 3, Duration{1}));
  timer_.async_wait([this](std::error_code ec) {
    scheduled_ = false;
    if (ec || stopped_) return;
    renew_round();
  });
}

void Watchdog::renew_round() {
  if (entries_.empty()) return;
  ++rounds_;
  std::vector<RenewalKey> keys;
  keys.reserve(entries_.size());
  for (const auto& [k, e] : entries_) keys.push_back(k);
  auto batches = plan_batches(keys, batch_size_);
  round_in_flight_ = true;
  auto remaining = std::make_shared<std::size_t>(batches.size());
  const auto started = Clock::now();
  for (auto& batch : batches) {
    std::vector<std::string> script_keys;
    std::vector<std::string> args{std::to_string(lease_.count())};
    for (const auto& k : batch) {
      script_keys.push_back(k.key);
      args.push_back(k.field);
    }
    ++calls_sent_;
    executor_.eval(
        lua::lock_renew, std::move(script_keys), std::move(args),
        [this, batch, remaining, started](std::exception_ptr error, net::Reply reply) {
          const bool ok = !error && reply.is_array() && reply.elements.size() == batch.size();
          for (std::size_t i = 0; i < batch.size(); ++i) {
            auto it = entries_.find(batch[i]);
            if (it == entries_.end()) continue;  // released meanwhile
            if (ok) {
              if (reply.elements[i].integer == 1) {
                it->second.last_renewed = started;
              } else {
                entries_.erase(it);
                lost_(batch[i], "the lock key or its owner field is gone (expired or deleted)");
              }
            } else if (lease_ran_out(it->second.last_renewed, Clock::now(), lease_)) {
              // Errors keep the schedule (spec §3.2) until the lease itself has run out.
              std::string why = "lease ran out without a confirmed renewal";
              if (error) {
                try {
                  std::rethrow_exception(error);
                } catch (const std::exception& e) {
                  why += ": " + std::string(e.what());
                }
              } else if (reply.is_error()) {
                why += ": " + reply.str;
              }
              entries_.erase(it);
              lost_(batch[i], why);
            }
          }
          if (--*remaining == 0) {
            round_in_flight_ = false;
            schedule();
          }
        },
        net::Retry::never);
  }
}

}  // namespace redisync::sync
