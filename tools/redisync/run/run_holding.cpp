// SPDX-License-Identifier: Apache-2.0
#include "run_holding.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "cli_error.h"
#include "redis_option.h"
#include "redisync/errors.h"
#include "redisync/fair_lock.h"
#include "redisync/fenced_lock.h"
#include "redisync/lock.h"
#include "redisync/multi_lock.h"
#include "redisync/permit_expirable_semaphore.h"
#include "redisync/read_write_lock.h"
#include "server_numbers.h"

namespace redisync::cli {
namespace {

std::string noun_of(HoldKind kind) { return std::string(kind_noun(kind_of(kind))); }

// Lock, FairLock, ReadLock, WriteLock: the same async API.
template <class L>
class LockHolding : public Holding {
 public:
  LockHolding(L lock, HoldKind kind, std::int64_t owner)
      : lock_(std::move(lock)), kind_(kind), owner_(owner) {}
  std::string describe() const override { return noun_of(kind_) + " " + lock_.name(); }
  void start_acquire(std::optional<Duration> wait, Duration lease, AcquireDone done) override {
    if (wait) {
      lock_.async_try_lock(owner_, *wait, lease, std::move(done));
    } else {
      lock_.async_lock(owner_, lease, [done](std::exception_ptr e) { done(e, !e); });
    }
  }
  void start_release(ReleaseDone done) override { lock_.async_unlock(owner_, std::move(done)); }

 private:
  L lock_;
  HoldKind kind_;
  std::int64_t owner_;
};

class FencedHolding : public Holding {
 public:
  FencedHolding(FencedLock lock, std::int64_t owner) : lock_(std::move(lock)), owner_(owner) {}
  std::string describe() const override { return noun_of(HoldKind::fenced) + " " + lock_.name(); }
  void start_acquire(std::optional<Duration> wait, Duration lease, AcquireDone done) override {
    // The completion may run after this object is gone (interrupted run): share the slot.
    auto token = token_;
    if (wait) {
      lock_.async_try_lock_and_get_token(
          owner_, *wait, lease,
          [token, done](std::exception_ptr e, std::optional<std::uint64_t> t) {
            if (t) token->store(*t);
            done(e, !e && t.has_value());
          });
    } else {
      lock_.async_lock_and_get_token(owner_, lease,
                                     [token, done](std::exception_ptr e, std::uint64_t t) {
                                       if (!e) token->store(t);
                                       done(e, !e);
                                     });
    }
  }
  void start_release(ReleaseDone done) override { lock_.async_unlock(owner_, std::move(done)); }
  std::vector<std::string> environment() const override {
    return {std::string(kFencingTokenEnv) + "=" + std::to_string(token_->load())};
  }

 private:
  FencedLock lock_;
  std::int64_t owner_;
  std::shared_ptr<std::atomic<std::uint64_t>> token_ =
      std::make_shared<std::atomic<std::uint64_t>>(0);
};

class MultiHolding : public Holding {
 public:
  MultiHolding(MultiLock multi, HoldKind member_kind, std::vector<std::string> names,
               std::int64_t owner)
      : multi_(std::move(multi)), member_kind_(member_kind), names_(std::move(names)),
        owner_(owner) {}
  std::string describe() const override {
    std::string text = noun_of(member_kind_) + "s ";
    for (std::size_t i = 0; i < names_.size(); ++i) text += (i ? ", " : "") + names_[i];
    return text;
  }
  void start_acquire(std::optional<Duration> wait, Duration lease, AcquireDone done) override {
    if (wait) {
      multi_.async_try_lock(owner_, *wait, lease, std::move(done));
    } else {
      multi_.async_lock(owner_, lease, [done](std::exception_ptr e) { done(e, !e); });
    }
  }
  void start_release(ReleaseDone done) override { multi_.async_unlock(owner_, std::move(done)); }
  std::string why_not_acquired(int* exit_code) const override {
    const AttemptReport report = multi_.last_attempt();
    if (report.failed() == 0) return {};
    *exit_code = multi_lock_exit_code(report);
    return report.describe();
  }

 private:
  MultiLock multi_;
  HoldKind member_kind_;
  std::vector<std::string> names_;
  std::int64_t owner_;
};

// One permit of N, with a lease: a permit-expirable semaphore (docs/wire-format.md §8), so a `run` that
// dies (even by SIGKILL) gives its permit back when the lease ends. In watchdog mode the lease
// is renewed here (every third of it), since the Client renews locks only.
class SemaphoreHolding : public Holding {
 public:
  SemaphoreHolding(Client& client, std::string name, std::int64_t permits)
      : client_(client),
        semaphore_(client.permit_expirable_semaphore(name)),
        name_(std::move(name)),
        permits_(permits) {}

  std::string describe() const override {
    return noun_of(HoldKind::semaphore) + " " + name_ + " (one of " + std::to_string(permits_) +
           " permits)";
  }

  // The count is created with N permits if the semaphore does not exist yet; an existing one
  // must have N in total (available + held), as `consul lock -n` checks its limit. A count
  // that is a plain integer string is the layout (Redisson's too), even a negative one (permits
  // reduced while held): only the total is checked. A count that is no integer is refused by
  // try_set_permits, which then changes nothing.
  void prepare() override {
    refuse_foreign_keys();
    semaphore_.try_set_permits(permits_);
    const Reply r = client_.execute(
        {"EVAL",
         "local v = redis.call('get', KEYS[1]) "
         "return {v or '', redis.call('zcard', KEYS[2])}",
         "2", name_, hash_tag(name_) + ":timeout"});
    long long available = 0;
    if (r.elements.size() != 2 || !parse_integer(r.elements[0].str, &available)) {
      throw CliError(kExitFailure, "semaphore " + name_ + ": its count '" +
                                       (r.elements.empty() ? "" : r.elements[0].str) +
                                       "' is not an integer");
    }
    const long long total = available + r.elements[1].integer;
    if (total != permits_) {
      throw CliError(kExitFailure,
                     "semaphore " + name_ + " has " + std::to_string(total) +
                         " permits in total, not " + std::to_string(permits_) +
                         ": every `redisync run --semaphore N " + name_ +
                         "` must give the same N (delete the key to start over with another)");
    }
  }

  // Someone else's data under the semaphore's keys (another type than its layout's) is
  // refused before anything is written: try_set_permits would create the count next to a
  // foreign "{NAME}:timeout" (and the library's WRONGTYPE names neither key nor type).
  void refuse_foreign_keys() {
    struct Part {
      std::string key;
      const char* type;
      const char* what;
    };
    const Part parts[] = {{name_, "string", "the count (a string)"},
                          {hash_tag(name_) + ":timeout", "zset",
                           "the held permits (a sorted set)"}};
    for (const Part& part : parts) {
      const std::string type = client_.execute({"TYPE", part.key}).str;
      if (type != "none" && type != part.type) {
        throw CliError(kExitFailure, "semaphore " + name_ + ": '" + part.key + "' is a " + type +
                                         ", not " + part.what +
                                         " of a permit-expirable semaphore; refused, nothing "
                                         "was written");
      }
    }
  }

  void start_acquire(std::optional<Duration> wait, Duration lease, AcquireDone done) override {
    renewed_ = lease <= Duration{0};
    lease_ = renewed_ ? client_.config().lock_watchdog_timeout : lease;
    auto id = id_;
    auto got = [id, done](std::exception_ptr e, std::vector<std::string> ids) {
      if (!ids.empty()) {
        std::lock_guard guard(id->mutex);
        id->value = ids.front();
      }
      done(e, !e && !ids.empty());
    };
    if (wait) {
      semaphore_.async_try_acquire(1, *wait, lease_, std::move(got));
    } else {
      semaphore_.async_acquire(1, lease_, std::move(got));
    }
  }

  void start_release(ReleaseDone done) override { semaphore_.async_release(permit_id(), done); }

  void after_acquire() override {
    const auto now = SteadyClock::now();
    deadline_ = now + lease_;
    if (renewed_) next_ = now;  // renew at once: the deadline is then counted from a known send
  }

  std::optional<SteadyClock::time_point> next_renewal() const override { return next_; }

  std::string renew() override {
    const auto sent = SteadyClock::now();
    const auto margin = lease_ / 10;
    try {
      if (!semaphore_.update_lease(permit_id(), lease_)) {
        next_.reset();
        return "its permit's lease ran out or someone released it";
      }
      deadline_ = sent + lease_;
      next_ = sent + lease_ / 3;
      return {};
    } catch (const std::exception& e) {
      const auto now = SteadyClock::now();
      if (now >= deadline_ - margin) {
        next_.reset();
        return std::string("could not renew its permit before the lease ran out: ") + e.what();
      }
      next_ = std::min(now + std::chrono::seconds(1), deadline_ - margin);
      return {};
    }
  }

 private:
  struct Id {
    std::mutex mutex;
    std::string value;
  };
  static bool parse_integer(const std::string& text, long long* out) {
    const auto value = integer_text(text);  // strict: no " 5", "+5" or "5abc"
    if (value) *out = *value;
    return value.has_value();
  }
  std::string permit_id() const {
    std::lock_guard guard(id_->mutex);
    return id_->value;
  }

  Client& client_;
  PermitExpirableSemaphore semaphore_;
  std::string name_;
  std::int64_t permits_;
  std::shared_ptr<Id> id_ = std::make_shared<Id>();
  bool renewed_ = true;
  Duration lease_{0};
  SteadyClock::time_point deadline_{};
  std::optional<SteadyClock::time_point> next_;
};

AnyLock member(Client& client, HoldKind kind, const std::string& name) {
  switch (kind) {
    case HoldKind::fair:
      return client.fair_lock(name);
    case HoldKind::read:
      return client.read_write_lock(name).read_lock();
    case HoldKind::write:
      return client.read_write_lock(name).write_lock();
    default:
      return client.lock(name);
  }
}

}  // namespace

namespace {
constexpr std::pair<HoldKind, Kind> kHoldKinds[] = {
    {HoldKind::lock, Kind::lock},          {HoldKind::fair, Kind::fair_lock},
    {HoldKind::read, Kind::read_lock},     {HoldKind::write, Kind::write_lock},
    {HoldKind::fenced, Kind::fenced_lock}, {HoldKind::semaphore, Kind::permit_expirable_semaphore},
    {HoldKind::multi, Kind::multi_lock},
};
}  // namespace

Kind kind_of(HoldKind kind) {
  for (const auto& [hold, k] : kHoldKinds) {
    if (hold == kind) return k;
  }
  return Kind::lock;
}

std::optional<HoldKind> hold_kind_of(Kind kind) {
  for (const auto& [hold, k] : kHoldKinds) {
    if (k == kind) return hold;
  }
  return std::nullopt;
}

std::unique_ptr<Holding> make_holding(Client& client, const HoldSpec& spec, std::int64_t owner) {
  const std::string& name = spec.names.front();
  switch (spec.kind) {
    case HoldKind::lock:
      return std::make_unique<LockHolding<Lock>>(client.lock(name), spec.kind, owner);
    case HoldKind::fair:
      return std::make_unique<LockHolding<FairLock>>(client.fair_lock(name), spec.kind, owner);
    case HoldKind::read:
      return std::make_unique<LockHolding<ReadLock>>(client.read_write_lock(name).read_lock(),
                                                     spec.kind, owner);
    case HoldKind::write:
      return std::make_unique<LockHolding<WriteLock>>(client.read_write_lock(name).write_lock(),
                                                      spec.kind, owner);
    case HoldKind::fenced:
      return std::make_unique<FencedHolding>(client.fenced_lock(name), owner);
    case HoldKind::semaphore:
      return std::make_unique<SemaphoreHolding>(client, name, spec.permits);
    case HoldKind::multi: {
      std::vector<AnyLock> members;
      for (const auto& n : spec.names) members.push_back(member(client, spec.member_kind, n));
      return std::make_unique<MultiHolding>(MultiLock(std::move(members)), spec.member_kind,
                                            spec.names, owner);
    }
  }
  throw UsageError("unknown lock kind");
}

bool is_lost_error(const std::exception_ptr& error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const LockLostError&) {
    return true;
  } catch (const NotOwnerError&) {
    return true;
  } catch (const UnknownPermitError&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace redisync::cli
