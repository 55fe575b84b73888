// SPDX-License-Identifier: Apache-2.0
#include "demo_worker.h"

#include <unistd.h>

#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "cli_error.h"
#include "clock.h"
#include "events.h"
#include "kinds.h"
#include "redis_option.h"
#include "redisync/client.h"
#include "redisync/fair_lock.h"
#include "redisync/fenced_lock.h"
#include "redisync/lock.h"
#include "redisync/read_write_lock.h"
#include "server_numbers.h"

namespace redisync::cli {
namespace {

// Time spent inside the lock between reading and writing the counter: a window in which any
// second holder would make an increment vanish.
constexpr int kWorkMinUs = 1000;
constexpr int kWorkMaxUs = 2000;

// The demo's lock, whatever its kind: only try_lock_for and unlock are needed.
struct DemoLock {
  std::function<bool(Duration)> try_lock_for;
  std::function<void()> unlock;

  template <class L>
  static DemoLock of(L lock) {
    return {[lock](Duration wait) mutable { return lock.try_lock_for(wait); },
            [lock]() mutable { lock.unlock(); }};
  }
  static DemoLock make(Client& client, Kind kind, const std::string& name) {
    switch (kind) {
      case Kind::fair_lock:
        return of(client.fair_lock(name));
      case Kind::read_write_lock:
        return of(client.read_write_lock(name).write_lock());
      case Kind::fenced_lock:
        return of(client.fenced_lock(name));
      default:
        return of(client.lock(name));
    }
  }
};

class DemoWorker {
 public:
  explicit DemoWorker(const DemoWorkerOptions& o)
      : o_(o),
        keys_(DemoKeys::for_lock(o.lock_name)),
        client_(make_config(o)),
        lock_(DemoLock::make(client_, demo_kind(o.kind), keys_.lock)),
        log_(o.events),
        rng_(static_cast<unsigned>(::getpid())) {}

  int run() {
    client_.execute({"PING"});
    if (o_.start_at_ns > 0) sleep_until_ns(o_.start_at_ns);
    std::uniform_int_distribution<int> work_us(kWorkMinUs, kWorkMaxUs);
    for (;;) {
      SectionTimes s;
      s.t0 = monotonic_ns();
      if (s.t0 >= o_.deadline_ns) break;
      const auto left =
          std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(o_.deadline_ns - s.t0));
      if (!lock_.try_lock_for(left)) break;
      s.t1 = monotonic_ns();
      const Reply values = client_.execute({"MGET", keys_.counter, keys_.victim});
      const long long counter =
          stored_integer(values.elements.at(0), "the demo counter '" + keys_.counter + "'");
      const std::string& victim = values.elements.at(1).str;
      if (victim == kAnyVictim || victim == std::to_string(o_.worker_id)) stall_inside();
      std::this_thread::sleep_for(std::chrono::microseconds(work_us(rng_)));
      client_.execute({"SET", keys_.counter, std::to_string(counter + 1)});
      s.t2 = monotonic_ns();
      lock_.unlock();
      s.t3 = monotonic_ns();
      log_.append(s);
    }
    return kExitOk;
  }

 private:
  static Config make_config(const DemoWorkerOptions& o) {
    Config config = config_from_url(o.redis_url);
    config.lock_watchdog_timeout = Duration{o.watchdog_ms};
    return config;
  }

  // The demo asked for a victim and we are the holder: claim the role, announce our pid from
  // inside the lock (the counter already read, not yet written back) and hang until the demo
  // SIGKILLs us. If the demo changes its mind (the victim key no longer names us), carry on.
  void stall_inside() {
    client_.execute({"MSET", keys_.victim, std::to_string(o_.worker_id), keys_.holder,
                     std::to_string(::getpid())});
    while (monotonic_ns() < o_.deadline_ns) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (client_.execute({"GET", keys_.victim}).str != std::to_string(o_.worker_id)) return;
    }
  }

  const DemoWorkerOptions& o_;
  DemoKeys keys_;
  Client client_;
  DemoLock lock_;
  SectionLog log_;
  std::mt19937 rng_;
};

}  // namespace

CLI::App* add_demo_worker_command(CLI::App& app, DemoWorkerOptions& o) {
  CLI::App* w = app.add_subcommand("demo-worker", "Internal: one worker of `redisync demo`");
  w->group("");  // hidden from --help
  // The URL may carry a password: `redisync demo` passes it in the environment
  // ($REDISYNC_URL), never on the command line, where `ps` would show it.
  w->add_option("--redis", o.redis_url)->envname(kRedisUrlEnv)->required();
  w->add_option("--lock", o.lock_name);
  w->add_option("--worker-id", o.worker_id)->required();
  w->add_option("--events", o.events)->required();
  w->add_option("--start-at-ns", o.start_at_ns);
  w->add_option("--deadline-ns", o.deadline_ns)->required();
  w->add_option("--watchdog-ms", o.watchdog_ms);
  w->add_option("--kind", o.kind);
  return w;
}

Kind demo_kind(const std::string& text) { return parse_kind_option(text, kDemoKinds, "--kind"); }

int demo_worker_command(const DemoWorkerOptions& o) {
  demo_kind(o.kind);
  DemoWorker worker(o);
  return worker.run();
}

}  // namespace redisync::cli
