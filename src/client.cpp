// SPDX-License-Identifier: Apache-2.0
#include "redisync/client.h"

#include "redisync/count_down_latch.h"
#include "redisync/fair_lock.h"
#include "redisync/fenced_lock.h"
#include "redisync/lock.h"
#include "redisync/permit_expirable_semaphore.h"
#include "redisync/read_write_lock.h"
#include "redisync/semaphore.h"
#include "redisync/rate_limiter.h"
#include "redisync/non_reentrant_lock.h"
#include "redisync/spin_lock.h"
#include "sync/client_close.h"
#include "sync/client_core.h"
#include "sync/identity.h"

namespace redisync {

Client::Client(Config config) : core_(std::make_shared<detail::ClientCore>(std::move(config))) {}

Client::Client(const std::string& url) : Client(Config::from_url(url)) {}

Client::~Client() { detail::close_client_core(std::move(core_)); }

Client::Client(Client&&) noexcept = default;

Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    detail::close_client_core(std::move(core_));
    core_ = std::move(other.core_);
  }
  return *this;
}

Lock Client::lock(const std::string& name) { return Lock(core_, name); }
FairLock Client::fair_lock(const std::string& name) { return FairLock(core_, name); }
ReadWriteLock Client::read_write_lock(const std::string& name) {
  return ReadWriteLock(core_, name);
}
FencedLock Client::fenced_lock(const std::string& name) { return FencedLock(core_, name); }
SpinLock Client::spin_lock(const std::string& name) { return SpinLock(core_, name); }
SpinLock Client::spin_lock(const std::string& name, const SpinBackoff& backoff) {
  return SpinLock(core_, name, backoff);
}

Semaphore Client::semaphore(const std::string& name) { return Semaphore(core_, name); }
PermitExpirableSemaphore Client::permit_expirable_semaphore(const std::string& name) {
  return PermitExpirableSemaphore(core_, name);
}
CountDownLatch Client::count_down_latch(const std::string& name) {
  return CountDownLatch(core_, name);
}
RateLimiter Client::rate_limiter(const std::string& name) { return RateLimiter(core_, name); }
NonReentrantLock Client::non_reentrant_lock(const std::string& name) {
  return NonReentrantLock(core_, name);
}
NonReentrantFairLock Client::non_reentrant_fair_lock(const std::string& name) {
  return NonReentrantFairLock(core_, name);
}

Reply Client::execute(const std::vector<std::string>& args) {
  if (args.empty()) throw InvalidArgument("redisync: execute() needs a command name");
  return core_->call<Reply>([&](auto done) { start_execute(args, done); });
}

void Client::start_execute(std::vector<std::string> args,
                           std::function<void(std::exception_ptr, Reply)> done) {
  auto core = core_;
  auto run = [core, args = std::move(args), done = std::move(done)]() mutable {
    const std::string name = args.empty() ? "" : args[0];
    core->executor().execute(std::move(args), [core, name, done](std::exception_ptr error,
                                                                 Reply reply) {
      if (!error && reply.is_error()) {
        error = net::server_error(reply, "redis " + core->config().describe() + ": " + name);
      }
      done(error, std::move(reply));
    });
  };
  if (core->io().get_executor().running_in_this_thread()) {
    run();
  } else {
    core->post_from_caller(std::move(run));
  }
}

const std::string& Client::id() const { return core_->id(); }
std::int64_t Client::current_thread_id() { return sync::thread_owner_id(); }
std::int64_t Client::new_owner_id() { return sync::next_owner_id(); }
void Client::on_lock_lost(std::function<void(const LockLostEvent&)> handler) {
  core_->set_lost_handler(std::move(handler));
}
std::optional<std::chrono::steady_clock::time_point> Client::lease_deadline() const {
  // The watchdog's table is the I/O thread's: read in place there (a blocking call would wait
  // for itself), else through a call, as BasicLock::lost() reads the holds.
  const auto read = [core = core_.get()] { return core->watchdog().next_deadline(); };
  if (core_->on_io_thread()) return read();
  return core_->call<std::optional<std::chrono::steady_clock::time_point>>(
      [&](auto done) { done(nullptr, read()); });
}
const Config& Client::config() const { return core_->config(); }
asio::io_context& Client::io_context() { return core_->io(); }

}  // namespace redisync
