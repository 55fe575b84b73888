// SPDX-License-Identifier: Apache-2.0
#include "sync/hold/watchdog.h"

#include <algorithm>
#include <memory>

#include "lua/scripts.h"
#include "net/cluster_slot.h"
#include "net/io_thread.h"
#include "redisync/errors.h"
#include "sync/identity.h"

namespace redisync::sync {

Watchdog::Watchdog(net::Executor& executor, Duration lease, std::size_t batch_size,
                   LostHandler lost)
    : executor_(executor),
      lease_(lease),
      batch_size_(batch_size),
      lost_(std::move(lost)),
      table_(lease),
      timer_(executor.io()),
      deadline_timer_(executor.io()) {}

void Watchdog::add(const std::string& key, const std::string& field) {
  add(RenewalKey{key, field}, RenewalKey{key, field});
}

void Watchdog::add(const RenewalKey& reg, RenewalKey report, Clock::time_point sent) {
  net::assert_io_thread(executor_.io());
  table_.add(reg, std::move(report), sent);
  schedule();
  arm_deadline();
}

void Watchdog::watch(const RenewalKey& reg, RenewalKey report, Duration lease,
                     Clock::time_point sent) {
  net::assert_io_thread(executor_.io());
  table_.watch(reg, std::move(report), lease, sent);
  arm_deadline();
}

void Watchdog::arm_deadline() {
  if (stopped_) return;
  const auto earliest = table_.next_deadline();
  if (!earliest) return;
  // A hold whose deadline comes before the armed one (a short fixed lease taken while a
  // watchdog hold is watched) re-arms the timer; a later one leaves it.
  if (deadline_armed_ && armed_for_ <= *earliest) return;
  deadline_armed_ = true;
  armed_for_ = *earliest;
  const auto generation = ++deadline_generation_;
  deadline_timer_.expires_at(*earliest);
  deadline_timer_.async_wait([this, generation](std::error_code ec) {
    if (ec || stopped_ || generation != deadline_generation_) return;
    deadline_armed_ = false;
    expire_overdue();
  });
}

void Watchdog::report(const LostHold& lost) {
  if (metrics_) metrics_->increment({"watchdog", lost.report.key}, Counter::lost_locks, 1);
  lost_(lost.report, lost.reason);
}

void Watchdog::expire_overdue() {
  for (const auto& lost : table_.take_overdue(Clock::now())) report(lost);
  arm_deadline();
}

void Watchdog::fix(const RenewalKey& reg, Duration lease, Clock::time_point sent) {
  net::assert_io_thread(executor_.io());
  table_.fix(reg, lease, sent);
  arm_deadline();
}

void Watchdog::cap(const RenewalKey& reg, Duration lease, Clock::time_point sent) {
  net::assert_io_thread(executor_.io());
  if (table_.cap(reg, lease, sent)) arm_deadline();
}

void Watchdog::remove(const std::string& key, const std::string& field) {
  remove(RenewalKey{key, field});
}

void Watchdog::remove(const RenewalKey& reg) {
  net::assert_io_thread(executor_.io());
  table_.remove(reg);
}

void Watchdog::forget(const std::string& key, const std::string& field) {
  forget(RenewalKey{key, field});
}

void Watchdog::forget(const RenewalKey& reg) { table_.forget(reg); }

void Watchdog::remove_all(const std::string& key) { table_.remove_all(key); }

void Watchdog::stop() {
  stopped_ = true;
  timer_.cancel();
  deadline_timer_.cancel();
}

void Watchdog::schedule() {
  if (stopped_) return;
  const auto due = table_.next_renewal_due();
  if (!due) return;
  // A renewal due before the armed one (a hold just taken while the next due is later)
  // re-arms the timer; a later one leaves it.
  if (scheduled_ && scheduled_for_ <= *due) return;
  scheduled_ = true;
  scheduled_for_ = *due;
  const auto generation = ++schedule_generation_;
  timer_.expires_at(*due);
  timer_.async_wait([this, generation](std::error_code ec) {
    if (ec || stopped_ || generation != schedule_generation_) return;
    scheduled_ = false;
    renew_due();
  });
}

void Watchdog::renew_due() {
  // Each hold is renewed a third of the lease after its last renewal (or its acquire) was
  // sent (docs/wire-format.md §3.1), some a little earlier to share calls (renewal_tick).
  const auto now = Clock::now();
  // One server: batches mix any keys, so topping the tick up fills its last call. Cluster: a
  // batch's hashes share a node (Redis 7) or a slot (docs/wire-format.md §3.2), and holds
  // taken early would mostly start calls of their own: no top-up.
  auto* router = executor_.cluster();
  const auto tick = renewal_tick(now, lease_);
  auto [hash_regs, read_regs] =
      table_.take_due(now, tick.until, router ? 1 : batch_size_, tick.early_until);
  ++rounds_;
  if (router && node_batches_) {
    send_by_node(*router, std::move(hash_regs), now);
  } else {
    send_by_slot(std::move(hash_regs), now);
  }
  for (auto& group : slot_groups(std::move(read_regs))) {
    for (auto& batch : plan_read_batches(std::move(group), batch_size_)) {
      send(read_call(std::move(batch)), now);
    }
  }
  schedule();
}

std::vector<std::vector<RenewalTable::Ticket>> Watchdog::slot_groups(
    std::vector<RenewalTable::Ticket> regs) const {
  if (executor_.cluster()) return group_by_slot(std::move(regs));
  std::vector<std::vector<RenewalTable::Ticket>> one;  // a braced list would copy regs
  one.push_back(std::move(regs));
  return one;
}

void Watchdog::send_by_slot(std::vector<RenewalTable::Ticket> regs, Clock::time_point started) {
  for (auto& group : slot_groups(std::move(regs))) {
    for (auto& batch : plan_batches(std::move(group), batch_size_)) {
      send(hash_call(std::move(batch)), started);
    }
  }
}

void Watchdog::send_by_node(net::ClusterRouter& router, std::vector<RenewalTable::Ticket> regs,
                            Clock::time_point started) {
  // 100,000 holds spread over 16,384 slots share a slot with hardly any other: batches of one
  // slot were calls of one or two hashes, a call per hold per renewal period.
  std::map<const net::ClusterNode*, std::vector<RenewalTable::Ticket>> by_node;
  std::vector<RenewalTable::Ticket> unrouted;  // no slot map yet
  for (auto& t : regs) {
    const auto node = router.node_for_slot(net::key_slot(t.reg().key));
    (node ? by_node[node.get()] : unrouted).push_back(std::move(t));
  }
  for (auto& [node, group] : by_node) {
    for (auto& batch : plan_batches(std::move(group), batch_size_)) {
      send_node_call(std::move(batch), started);
    }
  }
  if (!unrouted.empty()) send_by_slot(std::move(unrouted), started);
}

void Watchdog::send_node_call(std::vector<RenewalTable::Ticket> batch, Clock::time_point started) {
  // KEYS[1] routes the call; every hash and field goes in ARGV (lock_renew_node.lua), each
  // field without the prefix all of them share (ARGV[2]).
  std::vector<std::string> keys{batch.front().reg().key};
  const std::string_view prefix = shared_field_prefix(batch);
  std::vector<std::string> args;
  args.reserve(2 * batch.size() + 2);
  args.push_back(std::to_string(lease_.count()));
  args.emplace_back(prefix);
  for (const auto& t : batch) {
    args.push_back(t.reg().key);
    args.emplace_back(std::string_view(t.reg().field).substr(prefix.size()));
  }
  ++calls_sent_;
  executor_.eval(
      lua::lock_renew_node, std::move(keys), std::move(args),
      [this, regs = std::move(batch), started](std::exception_ptr error, net::Reply reply) mutable {
        if (!error && reply.is_error() && !stopped_) {
          // A hash whose slot moved to another node, or a server without script flags
          // (before Redis 7): this batch goes slot by slot; the latter turns node batches off.
          if (reply.str.find("non local key") == std::string::npos) node_batches_ = false;
          return send_by_slot(std::move(regs), started);
        }
        answer(regs, started, error, reply);
      },
      net::Retry::never);
}

// §3.2: KEYS[i] hash i, ARGV[1] lease, ARGV[2] the prefix every owner field shares,
// ARGV[2 + i] the rest of the owner field of hash i.
Watchdog::Call Watchdog::hash_call(std::vector<RenewalTable::Ticket> batch) const {
  const std::string_view prefix = shared_field_prefix(batch);
  Call call{&lua::lock_renew, {}, {std::to_string(lease_.count()), std::string(prefix)}, {}};
  call.keys.reserve(batch.size());
  call.args.reserve(batch.size() + 2);
  for (const auto& t : batch) {
    call.keys.push_back(t.reg().key);
    call.args.emplace_back(std::string_view(t.reg().field).substr(prefix.size()));
  }
  call.regs = std::move(batch);  // what the reply answers, in order
  return call;
}

// §5.7: per hash, its marker prefix TAG(N), the number of listed reader fields, the fields.
// The reply has one element per listed field, in order.
Watchdog::Call Watchdog::read_call(std::vector<RenewalTable::Ticket> batch) const {
  Call call{&lua::rwlock_read_renew, {}, {std::to_string(lease_.count())}, {}};
  for (std::size_t i = 0; i < batch.size();) {
    const std::string& key = batch[i].reg().key;
    std::size_t j = i;
    while (j < batch.size() && batch[j].reg().key == key) ++j;
    call.keys.push_back(key);
    call.args.push_back(hash_tag(key));
    call.args.push_back(std::to_string(j - i));
    for (std::size_t f = i; f < j; ++f) call.args.push_back(batch[f].reg().field);
    i = j;
  }
  call.regs = std::move(batch);
  return call;
}

void Watchdog::count_renewals(bool ok, const net::Reply& reply) {
  if (!ok) {
    metrics_->increment({"watchdog", {}}, Counter::renewal_failures, 1);
    return;
  }
  const auto renewed =
      static_cast<std::uint64_t>(std::count(reply.str.begin(), reply.str.end(), '1'));
  if (renewed > 0) metrics_->increment({"watchdog", {}}, Counter::renewals, renewed);
}

void Watchdog::send(Call call, Clock::time_point started) {
  ++calls_sent_;
  executor_.eval(
      *call.script, std::move(call.keys), std::move(call.args),
      [this, regs = std::move(call.regs), started](std::exception_ptr error, net::Reply reply) {
        answer(regs, started, error, reply);
      },
      net::Retry::never);
}

void Watchdog::answer(const std::vector<RenewalTable::Ticket>& regs, Clock::time_point started,
                      const std::exception_ptr& error, const net::Reply& reply) {
  // One character per renewal, "1" renewed (lock_renew.lua): a reply of any other shape
  // (a misbehaving server) renews nothing, and the holds keep their deadlines.
  const bool ok = !error && reply.is_string() && reply.str.size() == regs.size() &&
                  reply.str.find_first_not_of("01") == std::string::npos;
  if (metrics_) count_renewals(ok, reply);
  std::string why;
  if (!ok) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        why = e.what();
      }
    } else if (reply.is_error()) {
      why = reply.str;
    }
  }
  const auto now = Clock::now();
  for (std::size_t i = 0; i < regs.size(); ++i) {
    auto lost = ok ? table_.renewal_answered(regs[i], started, reply.str[i] == '1')
                   : table_.renewal_failed(regs[i], now, why);
    if (lost) report(*lost);
  }
}

}  // namespace redisync::sync
