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
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <openssl/crypto.h>

#include "net/io_thread.h"
#include "sync/client_core.h"
#include "sync/identity.h"

namespace redisync {

Client::Client(Config config) : core_(std::make_shared<detail::ClientCore>(std::move(config))) {}

Client::Client(const std::string& url) : Client(Config::from_url(url)) {}

namespace {

// The closes running on detached threads (below). Never destroyed: a closer that outlives
// the wait at exit still counts itself out here.
struct DetachedCloses {
  std::mutex mutex;
  std::condition_variable done;
  int running = 0;
};

DetachedCloses& detached_closes() {
  static auto* closes = new DetachedCloses;
  return *closes;
}

// A close takes at most its last writes' bound (1 s) and the I/O thread's join; past this the
// I/O thread is stuck in a user's handler and the process exits without it.
constexpr auto kCloseWaitAtExit = std::chrono::seconds(3);

// Destroyed at exit: lets the detached closes finish first, so a process that drops its Client
// in a handler and then exits still sends that Client's last writes, and its I/O thread ends
// (OpenSSL's per-thread state with it) before OpenSSL's own exit handler runs.
struct WaitForClosesAtExit {
  ~WaitForClosesAtExit() {
    auto& closes = detached_closes();
    std::unique_lock lock(closes.mutex);
    closes.done.wait_for(lock, kCloseWaitAtExit, [&] { return closes.running == 0; });
  }
};

// Closes a Client's state. A Client destroyed inside one of its own handlers (a completion or
// the lost-lock handler) runs on its I/O thread, which cannot wait for itself: a detached
// thread closes it once the handler has returned, and the state ends there, never on the
// thread that is running it.
void close_core(std::shared_ptr<detail::ClientCore> core) {
  if (!core) return;
  if (!net::on_io_thread(core->io())) return core->shutdown();
  // OpenSSL is initialised before the waiter exists, so its exit handler (registered then)
  // runs after the waiter's.
  OPENSSL_init_crypto(0, nullptr);
  static WaitForClosesAtExit wait_for_closes_at_exit;
  auto& closes = detached_closes();
  {
    std::lock_guard lock(closes.mutex);
    ++closes.running;
  }
  std::thread([core = std::move(core), &closes]() mutable {
    core->shutdown();
    core.reset();
    // Ending the state may have used OpenSSL on this thread (a TLS connection's free): its
    // per-thread state goes now, not in this thread's exit, which may come after the process's.
    OPENSSL_thread_stop();
    std::lock_guard lock(closes.mutex);
    --closes.running;
    closes.done.notify_all();
  }).detach();
}

}  // namespace

Client::~Client() { close_core(std::move(core_)); }

Client::Client(Client&&) noexcept = default;

Client& Client::operator=(Client&& other) noexcept {
  if (this != &other) {
    close_core(std::move(core_));
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
