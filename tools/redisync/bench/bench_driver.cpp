// SPDX-License-Identifier: Apache-2.0
#include "bench_driver.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <variant>
#include <vector>

#include "bench_latch_ring.h"
#include "cli_error.h"
#include "clock.h"
#include "events.h"
#include "json_writer.h"
#include "redisync/client.h"
#include "redisync/errors.h"
#include "redisync/fair_lock.h"
#include "redisync/fenced_lock.h"
#include "redisync/lock.h"
#include "redisync/read_write_lock.h"
#include "redisync/spin_lock.h"
#include "server_numbers.h"

#ifndef REDISYNC_VERSION
#define REDISYNC_VERSION "unknown"
#endif

namespace redisync::cli {
namespace {

// Stop after this many failed sections in a row: the server is gone, not contended.
constexpr int kMaxConsecutiveErrors = 10;

struct Tally {
  std::int64_t completed = 0;
  std::int64_t acquire_failures = 0;
  std::int64_t errors = 0;
};

constexpr const char* kKinds = "lock, fair, fenced, spin, rw-write, latch-ring";

void validate(const BenchDriverOptions& o) {
  if (o.kind != "lock" && o.kind != "fair" && o.kind != "fenced" && o.kind != "spin" &&
      o.kind != "rw-write" && o.kind != "latch-ring") {
    throw UsageError("bench driver: --kind must be one of " + std::string(kKinds) + " (got '" +
                     o.kind + "')");
  }
  if (o.kind == "latch-ring" && (o.workers < 2 || o.worker_id < 0 || o.worker_id >= o.workers)) {
    throw UsageError(
        "bench driver: --kind latch-ring needs --workers >= 2 and 0 <= --worker-id < --workers");
  }
  if (o.retry_delay_ms < 0) throw UsageError("bench driver: --retry-delay-ms must be >= 0");
  if (o.cs != "none" && o.cs != "counter") {
    throw UsageError("bench driver: --cs must be none or counter (got '" + o.cs + "')");
  }
  if (o.port < 1 || o.port > 65535) throw UsageError("bench driver: --port must be in 1..65535");
  if (o.iterations < 0 || o.warmup < 0 || o.think_us < 0) {
    throw UsageError("bench driver: --iterations, --warmup and --think-us must be >= 0");
  }
  if (o.ttl_ms <= 0) throw UsageError("bench driver: --ttl-ms must be > 0");
  if (o.key.empty()) throw UsageError("bench driver: --key must not be empty");
}

// The critical section of --cs counter: a deliberately non-atomic read-modify-write, so any
// overlap between holders shows up as a lost increment.
void increment_counter(Client& client, const std::string& key) {
  const Reply current = client.execute({"GET", key});
  const long long value = stored_integer(current, "the bench counter '" + key + "'");
  client.execute({"SET", key, std::to_string(value + 1)});
}

void write_settings(JsonWriter& w, const BenchDriverOptions& o, const std::string& counter_key) {
  w.key("settings")
      .begin_object()
      .field("host", o.host)
      .field("port", o.port)
      .field("key", o.key)
      .field("iterations", o.iterations)
      .field("warmup", o.warmup)
      .field("cs", o.cs)
      .field("counter_key", counter_key)
      .field("ttl_ms", o.ttl_ms)
      .field("retry_delay_ms", o.retry_delay_ms)
      .field("start_at_ns", o.start_at_ns)
      .field("deadline_ns", o.deadline_ns)
      .field("events", o.events)
      .field("worker_id", o.worker_id)
      .field("think_us", o.think_us)
      .field("kind", o.kind)
      .field("workers", o.workers)
      .end_object();
}

// Unmeasured pairs before the start. A ring's turns come in order from the start instant: it
// has none.
std::int64_t warmup_pairs(const BenchDriverOptions& o) {
  return o.kind == "latch-ring" ? 0 : o.warmup;
}

// The lock under test, of the kind --kind names. All kinds share Lock's blocking API.
using AnyLock = std::variant<Lock, FairLock, FencedLock, SpinLock, WriteLock, LatchRing>;

AnyLock make_lock(Client& client, const BenchDriverOptions& o) {
  if (o.kind == "latch-ring") {
    return LatchRing(client, o.key, o.worker_id, o.workers, o.start_at_ns);
  }
  if (o.kind == "fair") return client.fair_lock(o.key);
  if (o.kind == "fenced") return client.fenced_lock(o.key);
  if (o.kind == "rw-write") return client.read_write_lock(o.key).write_lock();
  if (o.kind == "spin") {
    // Polling peers are run with --retry-delay-ms; give the spin lock the same fixed pause.
    return o.retry_delay_ms > 0 ? client.spin_lock(o.key, SpinBackoff::constant(Duration{o.retry_delay_ms}))
                                : client.spin_lock(o.key);
  }
  return client.lock(o.key);
}

class Driver {
 public:
  explicit Driver(const BenchDriverOptions& o)
      : o_(o),
        counter_key_(o.counter_key.empty() ? o.key + ":counter" : o.counter_key),
        client_(make_config(o)),
        lock_(make_lock(client_, o)),
        lease_(o.ttl_ms) {}

  int run() {
    client_.execute({"PING"});  // connect before the clock starts
    for (std::int64_t i = 0; i < warmup_pairs(o_); ++i) {
      std::visit([&](auto& l) { l.lock(lease_); }, lock_);
      std::visit([](auto& l) { l.unlock(); }, lock_);
    }
    if (o_.start_at_ns > 0) sleep_until_ns(o_.start_at_ns);
    sections_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(o_.iterations, 1 << 20)));
    int consecutive_errors = 0;
    while (tally_.completed < o_.iterations) {
      if (o_.deadline_ns > 0 && monotonic_ns() >= o_.deadline_ns) break;
      if (section()) {
        consecutive_errors = 0;
      } else if (++consecutive_errors >= kMaxConsecutiveErrors) {
        std::cerr << "redisync-bench driver: " << kMaxConsecutiveErrors
                  << " failed sections in a row; stopping" << std::endl;
        break;
      }
      if (o_.think_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(o_.think_us));
    }
    if (!o_.events.empty()) write_sections(o_.events, sections_);
    print_result();
    return tally_.errors == 0 ? kExitOk : kExitFailure;
  }

 private:
  static Config make_config(const BenchDriverOptions& o) {
    // REDISYNC_DRIVER_OPTIONS: extra Client options in URL query form
    // ("busy_poll=0&starvation_guard=0"), for comparing settings under the same harness.
    const char* extra = std::getenv("REDISYNC_DRIVER_OPTIONS");
    if (extra && *extra) {
      return Config::from_url("redis://" + o.host + ":" + std::to_string(o.port) + "?" + extra);
    }
    Config config;
    config.host = o.host;
    config.port = static_cast<std::uint16_t>(o.port);
    return config;
  }

  // One measured section. False if it failed with an error.
  bool section() {
    bool held = false;
    try {
      SectionTimes s;
      s.t0 = monotonic_ns();
      if (o_.deadline_ns > 0) {
        // Rounded up: the wait ends at the deadline, not up to 1 ms before it.
        const auto left =
            std::chrono::ceil<Duration>(std::chrono::nanoseconds(o_.deadline_ns - s.t0));
        held = std::visit([&](auto& l) { return l.try_lock_for(left, lease_); }, lock_);
      } else {
        std::visit([&](auto& l) { l.lock(lease_); }, lock_);
        held = true;
      }
      s.t1 = monotonic_ns();
      if (!held) {
        ++tally_.acquire_failures;
        return true;
      }
      if (o_.cs == "counter") increment_counter(client_, counter_key_);
      s.t2 = monotonic_ns();
      held = false;
      std::visit([](auto& l) { l.unlock(); }, lock_);
      s.t3 = monotonic_ns();
      sections_.push_back(s);
      ++tally_.completed;
      return true;
    } catch (const std::exception& e) {
      ++tally_.errors;
      if (tally_.errors <= 5) std::cerr << "redisync-bench driver: " << e.what() << std::endl;
      if (held) std::visit([](auto& l) { l.release(); }, lock_);
      return false;
    }
  }

  void print_result() {
    JsonWriter w;
    w.begin_object()
        .field("driver", "redisync")
        .field("library", "redisync")
        .field("library_version", REDISYNC_VERSION);
    write_settings(w, o_, counter_key_);
    w.field("worker_id", o_.worker_id)
        .field("completed", tally_.completed)
        .field("acquire_failures", tally_.acquire_failures)
        .field("errors", tally_.errors)
        .field("warmup", warmup_pairs(o_))
        // The pid names the driver's trace file (bench/handoff_breakdown).
        .field("pid", static_cast<long long>(getpid()))
        .end_object();
    std::cout << w.str() << std::endl;
  }

  const BenchDriverOptions& o_;
  std::string counter_key_;
  Client client_;
  AnyLock lock_;
  Duration lease_;
  Tally tally_;
  std::vector<SectionTimes> sections_;
};

}  // namespace

CLI::App* add_bench_driver_command(CLI::App& app, BenchDriverOptions& o) {
  CLI::App* d = app.add_subcommand(
      "driver",
      "One worker of the multi-process contention benchmark: take the lock --key up to\n"
      "--iterations times between --start-at-ns and --deadline-ns (CLOCK_MONOTONIC ns),\n"
      "write one 't0 t1 t2 t3' line per section to --events, print one JSON line.");
  d->add_option("--host", o.host, "Redis host")->capture_default_str();
  d->add_option("--port", o.port, "Redis port")->capture_default_str();
  d->add_option("--key", o.key, "Lock name")->capture_default_str();
  d->add_option("--iterations", o.iterations, "Upper bound of measured critical sections")
      ->capture_default_str();
  d->add_option("--warmup", o.warmup, "Unmeasured acquire+release pairs before the start")
      ->capture_default_str();
  d->add_option("--cs", o.cs, "Critical section: none, or counter (GET + SET+1 of --counter-key)")
      ->capture_default_str();
  d->add_option("--counter-key", o.counter_key, "Counter key (default: <key>:counter)");
  d->add_option("--ttl-ms", o.ttl_ms, "Lease in ms (fixed, never renewed)")->capture_default_str();
  d->add_option("--retry-delay-ms", o.retry_delay_ms,
                "Ignored (waiting is push-based), except with --kind spin: the fixed pause "
                "between attempts (default: exponential backoff 1..128 ms)");
  d->add_option("--start-at-ns", o.start_at_ns,
                "Start measuring at this CLOCK_MONOTONIC instant (ns); 0 = at once");
  d->add_option("--deadline-ns", o.deadline_ns,
                "Start no section after this CLOCK_MONOTONIC instant (ns); bounds waits; 0 = none");
  d->add_option("--events", o.events, "Write one 't0 t1 t2 t3' line per section here");
  d->add_option("--worker-id", o.worker_id, "Echoed in the JSON line")->capture_default_str();
  d->add_option("--think-us", o.think_us, "Sleep after each release, outside the lock (µs)")
      ->capture_default_str();
  d->add_option("--kind", o.kind,
                std::string("Primitive: ") + kKinds +
                    " (latch-ring: no lock, a token passed round --workers drivers through "
                    "count-down latches, the floor of a handoff by notification)")
      ->capture_default_str();
  d->add_option("--workers", o.workers, "Ring size, with --kind latch-ring")->capture_default_str();
  return d;
}

int bench_driver_command(const BenchDriverOptions& o) {
  validate(o);
  Driver driver(o);
  return driver.run();
}

}  // namespace redisync::cli
