#include "sync/watchdog.h"

#include <memory>

#include "lua/scripts.h"
#include "net/cluster_slot.h"
#include "net/io_thread.h"
#include "redisync/errors.h"
#include "sync/identity.h"

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

std::vector<std::vector<RenewalKey>> plan_read_batches(const std::vector<RenewalKey>& regs,
                                                       std::size_t batch_size) {
  std::vector<std::vector<RenewalKey>> batches;
  if (batch_size == 0) batch_size = 1;
  std::size_t hashes = 0;
  for (std::size_t i = 0; i < regs.size(); ++i) {
    const bool new_hash = i == 0 || regs[i].key != regs[i - 1].key;
    if (new_hash && (batches.empty() || hashes == batch_size)) {
      batches.emplace_back();
      hashes = 0;
    }
    if (new_hash) ++hashes;
    batches.back().push_back(regs[i]);
  }
  return batches;
}

std::vector<std::vector<RenewalKey>> group_by_slot(const std::vector<RenewalKey>& regs) {
  std::map<std::uint16_t, std::vector<RenewalKey>> by_slot;
  for (const auto& r : regs) by_slot[net::key_slot(r.key)].push_back(r);
  std::vector<std::vector<RenewalKey>> groups;
  groups.reserve(by_slot.size());
  for (auto& [slot, group] : by_slot) groups.push_back(std::move(group));
  return groups;
}

Duration loss_margin(Duration lease) { return std::max(lease / 10, Duration{1}); }

Clock::time_point local_deadline(Clock::time_point sent, Duration lease) {
  return sent + (lease - loss_margin(lease));
}

bool lease_ran_out(Clock::time_point last_renewed, Clock::time_point now, Duration lease) {
  return now >= local_deadline(last_renewed, lease);
}

Watchdog::Watchdog(net::Executor& executor, Duration lease, std::size_t batch_size,
                   LostHandler lost)
    : executor_(executor),
      lease_(lease),
      batch_size_(batch_size),
      lost_(std::move(lost)),
      timer_(executor.io()),
      deadline_timer_(executor.io()) {}

void Watchdog::add(const std::string& key, const std::string& field) {
  add(RenewalKey{key, field}, RenewalKey{key, field});
}

void Watchdog::add(const RenewalKey& reg, RenewalKey report, Clock::time_point sent) {
  net::assert_io_thread(executor_.io());
  auto& e = entries_[reg];
  if (e.count++ == 0 || !e.renew) {
    // New, or a fixed-lease hold now re-entered in watchdog mode: renewed from now on.
    if (e.count == 1 || sent > e.last_renewed) e.last_renewed = sent;
    e.renew = true;
  }
  e.lease = lease_;
  e.report = std::move(report);
  schedule();
  if (!deadline_armed_) arm_deadline();
}

void Watchdog::watch(const RenewalKey& reg, RenewalKey report, Duration lease,
                     Clock::time_point sent) {
  net::assert_io_thread(executor_.io());
  auto& e = entries_[reg];
  if (e.count++ == 0) {
    e.renew = false;
    e.lease = lease;
    e.last_renewed = sent;
    e.report = std::move(report);
  } else if (!e.renew) {
    // A re-entry sets the key's expiry to its own lease (PEXPIRE) from its send time.
    e.lease = lease;
    e.last_renewed = sent;
  }
  if (!deadline_armed_) arm_deadline();
}

void Watchdog::arm_deadline() {
  if (stopped_ || entries_.empty()) return;
  auto earliest = Clock::time_point::max();
  for (const auto& [k, e] : entries_) {
    earliest = std::min(earliest, local_deadline(e.last_renewed, e.lease));
  }
  deadline_armed_ = true;
  const auto generation = ++deadline_generation_;
  deadline_timer_.expires_at(earliest);
  deadline_timer_.async_wait([this, generation](std::error_code ec) {
    if (ec || stopped_ || generation != deadline_generation_) return;
    deadline_armed_ = false;
    expire_overdue();
  });
}

void Watchdog::expire_overdue() {
  const auto now = Clock::now();
  std::vector<RenewalKey> overdue;
  for (const auto& [k, e] : entries_) {
    if (lease_ran_out(e.last_renewed, now, e.lease)) overdue.push_back(k);
  }
  for (const auto& k : overdue) {
    auto it = entries_.find(k);
    if (it == entries_.end()) continue;
    const Entry e = it->second;
    entries_.erase(it);
    if (metrics_) metrics_->increment({"watchdog", e.report.key}, Counter::lost_locks, 1);
    lost_(e.report, e.renew ? "no renewal was confirmed in time: the lease (" +
                                  std::to_string(e.lease.count()) +
                                  " ms) may end on the server within " +
                                  std::to_string(loss_margin(e.lease).count()) + " ms"
                            : "its fixed lease (" + std::to_string(e.lease.count()) +
                                  " ms) is ending on the server (within " +
                                  std::to_string(loss_margin(e.lease).count()) + " ms)");
  }
  arm_deadline();
}

void Watchdog::fix(const RenewalKey& reg, Duration lease, Clock::time_point sent) {
  net::assert_io_thread(executor_.io());
  auto it = entries_.find(reg);
  if (it == entries_.end()) return;
  it->second.renew = false;
  it->second.lease = lease;
  it->second.last_renewed = sent;
  arm_deadline();
}

void Watchdog::remove(const std::string& key, const std::string& field) {
  remove(RenewalKey{key, field});
}

void Watchdog::remove(const RenewalKey& reg) {
  net::assert_io_thread(executor_.io());
  auto it = entries_.find(reg);
  if (it == entries_.end()) return;
  if (--it->second.count <= 0) entries_.erase(it);
}

void Watchdog::forget(const std::string& key, const std::string& field) {
  forget(RenewalKey{key, field});
}

void Watchdog::forget(const RenewalKey& reg) { entries_.erase(reg); }

void Watchdog::remove_all(const std::string& key) {
  auto it = entries_.lower_bound(RenewalKey{key, ""});
  while (it != entries_.end() && it->first.key == key) it = entries_.erase(it);
}

void Watchdog::stop() {
  stopped_ = true;
  timer_.cancel();
  deadline_timer_.cancel();
}

void Watchdog::schedule() {
  if (scheduled_ || round_in_flight_ || stopped_ || entries_.empty()) return;
  scheduled_ = true;
  // The next round starts a third of the lease after the previous one ended (docs/wire-format.md §3.1).
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
  std::vector<RenewalKey> hash_regs;
  std::vector<RenewalKey> read_regs;  // sorted by key, as the map is
  for (const auto& [k, e] : entries_) {
    if (!e.renew) continue;  // fixed leases: only their deadline is watched
    (k.kind == RenewalKind::rwlock_read ? read_regs : hash_regs).push_back(k);
  }
  std::vector<Call> calls;
  // One server: batches mix any keys. Cluster: each batch stays within one slot (docs/wire-format.md §3.2).
  const bool per_slot = executor_.cluster() != nullptr;
  auto groups = [per_slot](std::vector<RenewalKey> regs) {
    if (per_slot) return group_by_slot(regs);
    std::vector<std::vector<RenewalKey>> one;
    if (!regs.empty()) one.push_back(std::move(regs));
    return one;
  };
  for (const auto& group : groups(std::move(hash_regs))) {
    for (const auto& batch : plan_batches(group, batch_size_)) calls.push_back(hash_call(batch));
  }
  for (const auto& group : groups(std::move(read_regs))) {
    for (const auto& batch : plan_read_batches(group, batch_size_)) {
      calls.push_back(read_call(batch));
    }
  }
  if (calls.empty()) return;  // only fixed leases: nothing to renew
  round_in_flight_ = true;
  auto remaining = std::make_shared<std::size_t>(calls.size());
  const auto started = Clock::now();
  for (auto& call : calls) send(std::move(call), remaining, started);
}

// §3.2: KEYS[i] hash i, ARGV[1] lease, ARGV[1 + i] owner field of hash i.
Watchdog::Call Watchdog::hash_call(const std::vector<RenewalKey>& batch) const {
  Call call{&lua::lock_renew, {}, {std::to_string(lease_.count())}, batch};
  for (const auto& k : batch) {
    call.keys.push_back(k.key);
    call.args.push_back(k.field);
  }
  return call;
}

// §5.7: per hash, its marker prefix TAG(N), the number of listed reader fields, the fields.
// The reply has one element per listed field, in order.
Watchdog::Call Watchdog::read_call(const std::vector<RenewalKey>& batch) const {
  Call call{&lua::rwlock_read_renew, {}, {std::to_string(lease_.count())}, batch};
  for (std::size_t i = 0; i < batch.size();) {
    std::size_t j = i;
    while (j < batch.size() && batch[j].key == batch[i].key) ++j;
    call.keys.push_back(batch[i].key);
    call.args.push_back(hash_tag(batch[i].key));
    call.args.push_back(std::to_string(j - i));
    for (std::size_t f = i; f < j; ++f) call.args.push_back(batch[f].field);
    i = j;
  }
  return call;
}

void Watchdog::count_renewals(bool ok, const net::Reply& reply) {
  if (!ok) {
    metrics_->increment({"watchdog", {}}, Counter::renewal_failures, 1);
    return;
  }
  std::uint64_t renewed = 0;
  for (const auto& e : reply.elements) renewed += e.integer == 1 ? 1 : 0;
  if (renewed > 0) metrics_->increment({"watchdog", {}}, Counter::renewals, renewed);
}

void Watchdog::send(Call call, const std::shared_ptr<std::size_t>& remaining,
                    Clock::time_point started) {
  ++calls_sent_;
  auto regs = std::move(call.regs);
  executor_.eval(
      *call.script, std::move(call.keys), std::move(call.args),
      [this, regs = std::move(regs), remaining, started](std::exception_ptr error,
                                                         net::Reply reply) {
        const bool ok = !error && reply.is_array() && reply.elements.size() == regs.size();
        if (metrics_) count_renewals(ok, reply);
        for (std::size_t i = 0; i < regs.size(); ++i) {
          auto it = entries_.find(regs[i]);
          if (it == entries_.end()) continue;  // released meanwhile
          if (ok) {
            if (reply.elements[i].integer == 1) {
              it->second.last_renewed = started;
            } else {
              const RenewalKey report = it->second.report;
              entries_.erase(it);
              if (metrics_) metrics_->increment({"watchdog", report.key}, Counter::lost_locks, 1);
              lost_(report, "the lock key or its owner field is gone (expired or deleted)");
            }
          } else if (lease_ran_out(it->second.last_renewed, Clock::now(), it->second.lease)) {
            // Errors keep the schedule (docs/wire-format.md §3.2) until the lease itself has run out.
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
            const RenewalKey report = it->second.report;
            entries_.erase(it);
            if (metrics_) metrics_->increment({"watchdog", report.key}, Counter::lost_locks, 1);
            lost_(report, why);
          }
        }
        if (--*remaining == 0) {
          round_in_flight_ = false;
          schedule();
        }
      },
      net::Retry::never);
}

}  // namespace redisync::sync
