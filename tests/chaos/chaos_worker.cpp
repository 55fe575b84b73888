// SPDX-License-Identifier: Apache-2.0
// One worker process of the chaos suite (tests/chaos/chaos_test.cpp). It runs critical sections
// under a lock for a fixed time and appends what happened to a shared history file, which the
// checker (history.h) verifies afterwards.
//
// Each critical section reads a counter on a separate "resource" Redis server, sleeps HOLD_MS,
// and writes counter+1 (GET then SET: not atomic, so a lapse of mutual exclusion shows up as a
// lost update). With --kind fenced the write goes through a tiny Lua "resource" that refuses a
// token lower than the highest it has seen (the fencing check a real resource would make).
//
// Usage: chaos_worker --id N --kind KIND --lock-url URL [--lock-url URL...]
//        --resource-url URL --name NAME --history FILE --duration-ms D --watchdog-ms W
//        --wait-ms X --hold-ms H --timeout-ms T [--think-ms K] [--retry-attempts N]
//        [--stop-self-at-ms S --stop-claim FILE] [--permits N] [--replica-ack 0|1]
//
// KIND (lockers.cpp): lock | fair | fenced | rw-write | multi | redlock; rw-mix (even ids take
// the write lock, odd ids the read lock of one ReadWriteLock; readers only read the counter);
// semaphore | pes (one permit of a Semaphore / PermitExpirableSemaphore of --permits N, whose
// lease is --watchdog-ms; permit holders only read); latch (latch_worker.cpp: a CountDownLatch,
// its own history lines); or one of the deliberately broken locks of the
// negative control (compiled only into this worker; the suite asserts the checker catches
// them): broken-ignore (acquire ignores a held lock), broken-norenew (a fixed lease of
// --watchdog-ms, never renewed), broken-release (a failed unlock() is "fixed" by deleting the
// lock without checking the owner).
//
// --replica-ack 0: lock writes do not WAIT for the replicas (Config::check_lock_synced_slaves
// off): a failover can then lose an acquire (chaos case LostAcquireFailover).
//
// A holder told that its lock was lost (the lost-lock callback ran during its section) does
// not write: it stops using the resource, as a correct application would ("s" below). With
// --heed-notice 0 it writes anyway (an application that does not look between waking up from
// a pause and writing: what fencing tokens are for).
//
// --think-ms K (default 2): pause after each release before the next attempt, as real work
// between sections would. With 0 the unfair kinds let the releaser barge straight back in and
// a worker can starve for seconds (allowed for an unfair lock, but it hides the other figures).
//
// --stop-self-at-ms S --stop-claim FILE: in its first section S ms or more after the start,
// the worker that first creates FILE (O_EXCL: one worker of all) SIGSTOPs itself right after
// reading the counter (the worst moment for a GC-like pause: a stale write follows); the
// test SIGCONTs it.
//
// --stop-request FILE: in each section, right after the A line, the worker that removes FILE
// (unlink is atomic: one worker per request) SIGSTOPs itself. The test creates FILE to catch
// a holder inside its section however short the section is (stop_a_holder()).
//
// History lines (one write() each to the O_APPEND file; times are CLOCK_MONOTONIC ns):
//   A <id> <pid> <seq> <wait_start> <acquired> <token> <field>
//       acquired (token 0: the kind has none); field: the owner field in the lock hash
//   R <id> <seq> <section_end> <released> <read> <wrote> <outcome>
//       wrote: 1 written, 0 not written (resource error), r rejected by the fencing check,
//              s skipped (told of the loss before the write), n none due (reader, permit)
//       outcome: ok | lost (LockLostError) | notowner | failed:<Error class> (after retries)
//   U <id> <seq> <section_end>                               the section ended, unlock() next
//       (a worker killed after it is out of its section, holding or not)
//   T <id> <seq> <wait_start> <end>                         try_lock_for returned false
//   E <id> <seq> <wait_start> <end> <Error class>            the acquire threw
//   L <id> <time> <lock name>                                the lost-lock callback ran, or
//       (pes) a section outlived its permit's lease: <time> is the local lease deadline
//   F <id> <seq> <time> <Error class>                        an unlock() attempt threw (retried)
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chaos/lockers.h"
#include "chaos/worker_common.h"
#include "redisync/redisync.h"

namespace redisync::chaos_worker {
namespace {

// The fencing check of the resource: refuse a token below the highest seen, else write.
constexpr const char* kFencedWrite = R"lua(
local max = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token < max then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
return 1
)lua";

int run(const Options& given) {
  // "<kind>-grant" (lock-grant, fenced-grant, fair-grant, rw-write-grant, rw-mix-grant,
  // nonreentrant-grant, nonreentrant-fair-grant): the kind with Config::handoff = grant.
  Options o = given;
  const bool grant = o.kind.size() > 6 && o.kind.ends_with("-grant");
  if (grant) o.kind.resize(o.kind.size() - 6);
  const HistoryFile history(o.history);
  std::atomic<bool> told{false};  // the lost-lock callback ran since the last acquire
  std::vector<std::unique_ptr<redisync::Client>> lock_clients;
  for (const auto& url : o.lock_urls) {
    auto cfg = redisync::Config::from_url(url);
    cfg.lock_watchdog_timeout = Duration{o.watchdog_ms};
    cfg.timeout = Duration{o.timeout_ms};
    cfg.retry_attempts = static_cast<int>(o.retry_attempts);
    cfg.retry_interval = Duration{200};
    cfg.reconnection_delay_max = Duration{200};
    cfg.check_lock_synced_slaves = o.replica_ack != 0;
    if (grant) cfg.handoff = redisync::Handoff::grant;
    lock_clients.push_back(std::make_unique<redisync::Client>(cfg));
    // The broken-norenew control is deaf to the notice: a lock that neither renews nor tells.
    const bool deaf = o.kind == "broken-norenew";
    lock_clients.back()->on_lock_lost(
        [&history, &told, deaf, id = o.id](const redisync::LockLostEvent& e) {
          if (deaf) return;
          told = true;
          history.line("L " + std::to_string(id) + " " + std::to_string(mono_ns()) + " " +
                       e.name);
        });
  }
  redisync::Client resource(redisync::Config::from_url(o.resource_url));
  const std::string counter = o.name + ":counter";
  const std::string max_token = o.name + ":max-token";

  auto locker = make_locker(o, lock_clients);

  const std::string id = std::to_string(o.id);
  const long long start = mono_ns();
  const long long deadline = start + o.duration_ms * 1000000LL;
  long long stop_self_at = o.stop_self_at_ms < 0 ? -1 : start + o.stop_self_at_ms * 1000000LL;
  for (long long seq = 0; mono_ns() < deadline; ++seq) {
    const std::string s = std::to_string(seq);
    const long long wait_start = mono_ns();
    std::optional<std::uint64_t> token;
    told = false;
    try {
      token = locker->try_acquire(Duration{o.wait_ms});
    } catch (const redisync::Error& e) {
      history.line("E " + id + " " + s + " " + std::to_string(wait_start) + " " +
                   std::to_string(mono_ns()) + " " + error_class(e));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (!token) {
      history.line("T " + id + " " + s + " " + std::to_string(wait_start) + " " +
                   std::to_string(mono_ns()));
      continue;
    }
    const long long acquired = mono_ns();
    history.line("A " + id + " " + std::to_string(::getpid()) + " " + s + " " +
                 std::to_string(wait_start) + " " + std::to_string(acquired) + " " +
                 std::to_string(*token) + " " + locker->field());
    if (!o.stop_request.empty() && ::unlink(o.stop_request.c_str()) == 0) ::raise(SIGSTOP);

    // The critical section on the resource (never faulted: its errors end the worker).
    const auto value = resource.execute({"GET", counter});
    const long long read = value.is_nil() ? 0 : std::stoll(value.str);
    if (stop_self_at >= 0 && mono_ns() >= stop_self_at) {
      stop_self_at = -1;
      const int claim = ::open(o.stop_claim.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (claim >= 0) {
        ::close(claim);
        ::raise(SIGSTOP);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(o.hold_ms));
    std::string wrote = "1";
    if (!locker->writes) {
      wrote = "n";
    } else if (told && o.heed_notice != 0) {
      wrote = "s";  // told of the loss: stop using the resource
    } else if (o.kind == "fenced") {
      const auto r = resource.execute({"EVAL", kFencedWrite, "2", counter, max_token,
                                       std::to_string(*token), std::to_string(read + 1)});
      if (r.integer != 1) wrote = "r";
    } else {
      resource.execute({"SET", counter, std::to_string(read + 1)});
    }
    const long long section_end = mono_ns();
    if (locker->unreported_lease_ms > 0) {
      // The lease ran from no earlier than the acquire call (the server's deadline is the
      // client's epoch ms at the call + lease; -1 ms for that rounding): past it, the holder
      // knows its permit may be someone else's.
      const long long lease_end =
          std::max(wait_start + (locker->unreported_lease_ms - 1) * 1000000LL, acquired);
      if (section_end > lease_end) {
        history.line("L " + id + " " + std::to_string(lease_end) + " " + o.name);
      }
    }

    history.line("U " + id + " " + s + " " + std::to_string(section_end));

    // Release; a release the server could not confirm is retried (bounded) until it gives a
    // definite answer, so a failed unlock never leaves the lock held by a live worker. A
    // RedLock's unlock has already released every reachable member when it throws: no retry.
    const int release_attempts = o.kind == "redlock" ? 1 : 20;
    std::string outcome = "ok";
    for (int attempt = 0; attempt < release_attempts; ++attempt) {
      try {
        locker->unlock();
        outcome = "ok";
        break;
      } catch (const redisync::LockLostError&) {
        outcome = "lost";
        break;
      } catch (const redisync::NotOwnerError&) {
        outcome = "notowner";
        break;
      } catch (const redisync::Error& e) {
        outcome = "failed:" + error_class(e);
        history.line("F " + id + " " + s + " " + std::to_string(mono_ns()) + " " + error_class(e));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    history.line("R " + id + " " + s + " " + std::to_string(section_end) + " " +
                 std::to_string(mono_ns()) + " " + std::to_string(read) + " " + wrote + " " +
                 outcome);
    std::this_thread::sleep_for(std::chrono::milliseconds(o.think_ms));
  }
  return 0;
}

}  // namespace
}  // namespace redisync::chaos_worker

int main(int argc, char** argv) {
  using namespace redisync::chaos_worker;
  try {
    const Options o = parse(argc, argv);
    return o.kind == "latch" ? run_latch(o) : run(o);
  } catch (const std::exception& e) {
    std::cerr << "chaos_worker: " << e.what() << "\n";
    return 1;
  }
}
