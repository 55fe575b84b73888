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
//        [--stop-self-at-ms S --stop-claim FILE]
//
// KIND: lock | fair | fenced | redlock, or one of the deliberately broken locks of the
// negative control (compiled only into this worker; the suite asserts the checker catches
// them): broken-ignore (acquire ignores a held lock), broken-norenew (a fixed lease of
// --watchdog-ms, never renewed), broken-release (a failed unlock() is "fixed" by deleting the
// lock without checking the owner).
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
// History lines (one write() each to the O_APPEND file; times are CLOCK_MONOTONIC ns):
//   A <id> <pid> <seq> <wait_start> <acquired> <token> <field>
//       acquired (token 0: the kind has none); field: the owner field in the lock hash
//   R <id> <seq> <section_end> <released> <read> <wrote> <outcome>
//       wrote: 1 written, 0 not written (resource error), r rejected by the fencing check,
//              s skipped (told of the loss before the write)
//       outcome: ok | lost (LockLostError) | notowner | failed:<Error class> (after retries)
//   T <id> <seq> <wait_start> <end>                         try_lock_for returned false
//   E <id> <seq> <wait_start> <end> <Error class>            the acquire threw
//   L <id> <time> <lock name>                                the lost-lock callback ran
//   F <id> <seq> <time> <Error class>                        an unlock() attempt threw (retried)
#include <fcntl.h>

#include <atomic>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "redisync/redisync.h"

#if __has_include("redisync/red_lock.h")
#include "redisync/red_lock.h"
#define REDISYNC_CHAOS_HAS_REDLOCK 1
#endif

namespace {

using redisync::Duration;

struct Options {
  int id = 0;
  std::string kind = "lock";
  std::vector<std::string> lock_urls;
  std::string resource_url;
  std::string name;
  std::string history;
  long duration_ms = 5000;
  long watchdog_ms = 1500;
  long wait_ms = 3000;
  long hold_ms = 2;
  long think_ms = 2;
  long timeout_ms = 1000;
  long retry_attempts = 3;
  long stop_self_at_ms = -1;
  long heed_notice = 1;
  std::string stop_claim;
};

long long mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

Options parse(int argc, char** argv) {
  Options o;
  std::map<std::string, std::string*> strings{{"--kind", &o.kind},
                                              {"--resource-url", &o.resource_url},
                                              {"--name", &o.name},
                                              {"--history", &o.history},
                                              {"--stop-claim", &o.stop_claim}};
  std::map<std::string, long*> numbers{{"--duration-ms", &o.duration_ms},
                                       {"--watchdog-ms", &o.watchdog_ms},
                                       {"--wait-ms", &o.wait_ms},
                                       {"--hold-ms", &o.hold_ms},
                                       {"--think-ms", &o.think_ms},
                                       {"--timeout-ms", &o.timeout_ms},
                                       {"--retry-attempts", &o.retry_attempts},
                                       {"--stop-self-at-ms", &o.stop_self_at_ms},
                                       {"--heed-notice", &o.heed_notice}};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--id") {
      o.id = std::stoi(value);
    } else if (flag == "--lock-url") {
      o.lock_urls.push_back(value);
    } else if (auto s = strings.find(flag); s != strings.end()) {
      *s->second = value;
    } else if (auto n = numbers.find(flag); n != numbers.end()) {
      *n->second = std::stol(value);
    } else {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
  if (o.lock_urls.empty() || o.resource_url.empty() || o.name.empty() || o.history.empty()) {
    throw std::invalid_argument("--lock-url, --resource-url, --name and --history are required");
  }
  return o;
}

class History {
 public:
  explicit History(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw std::runtime_error("cannot open history file " + path);
  }
  ~History() { ::close(fd_); }
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // One write() per line: O_APPEND keeps the lines of concurrent writers whole.
  void line(const std::string& text) const {
    const std::string l = text + "\n";
    if (::write(fd_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
      std::cerr << "chaos_worker: short write to the history file\n";
    }
  }

 private:
  int fd_;
};

std::string error_class(const redisync::Error& e) {
  switch (e.value()) {
    case redisync::errc::connection_failed: return "ConnectionError";
    case redisync::errc::auth_failed: return "AuthError";
    case redisync::errc::timeout: return "TimeoutError";
    case redisync::errc::server_error: return "ServerError";
    case redisync::errc::protocol_error: return "ProtocolError";
    case redisync::errc::lock_lost: return "LockLostError";
    case redisync::errc::not_owner: return "NotOwnerError";
    case redisync::errc::client_closed: return "ClientClosedError";
    default: return "Error";
  }
}

// The fencing check of the resource: refuse a token below the highest seen, else write.
constexpr const char* kFencedWrite = R"lua(
local max = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token < max then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
return 1
)lua";

// The lock kinds behind one interface: acquire (returns the token, 0 when the kind has none).
struct Locker {
  virtual ~Locker() = default;
  virtual std::optional<std::uint64_t> try_acquire(Duration wait) = 0;
  virtual void unlock() = 0;
  virtual std::string field() const = 0;
};

template <class L>
struct PlainLocker : Locker {
  explicit PlainLocker(L l) : lock(std::move(l)) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (lock.try_lock_for(wait)) return 0;
    return std::nullopt;
  }
  void unlock() override { lock.unlock_checked(); }
  std::string field() const override {
    return lock.owner_field(redisync::Client::current_thread_id());
  }
  L lock;
};

struct FencedLocker : Locker {
  explicit FencedLocker(redisync::FencedLock l) : lock(std::move(l)) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    return lock.try_lock_and_get_token_for(wait);
  }
  void unlock() override { lock.unlock_checked(); }
  std::string field() const override {
    return lock.owner_field(redisync::Client::current_thread_id());
  }
  redisync::FencedLock lock;
};

// MultiLock over two locks on one server: `name` (whose owner field the fixture checks) and
// `name:2`.
struct MultiLocker : Locker {
  MultiLocker(redisync::Client& c, const std::string& name)
      : first(c.lock(name)), lock({first, c.lock(name + ":2")}) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (lock.try_lock_for(wait)) return 0;
    return std::nullopt;
  }
  void unlock() override { lock.unlock_checked(); }
  std::string field() const override {
    return first.owner_field(redisync::Client::current_thread_id());
  }
  redisync::Lock first;
  redisync::MultiLock lock;
};

// --- The negative control: deliberately broken locks. Never use these anywhere else. ---

// Acquire ignores a held lock: it just adds its field and sets the expiry.
struct IgnoreHeldLocker : Locker {
  IgnoreHeldLocker(redisync::Client& c, std::string n, long lease_ms)
      : client(c), name(std::move(n)), lease(std::to_string(lease_ms)),
        own("broken:" + std::to_string(::getpid())) {}
  std::optional<std::uint64_t> try_acquire(Duration) override {
    client.execute({"HSET", name, own, "1"});
    client.execute({"PEXPIRE", name, lease});
    return 0;
  }
  void unlock() override {
    client.execute({"HDEL", name, own});
    client.execute({"PUBLISH", "redisson_lock__channel:{" + name + "}", "0"});
  }
  std::string field() const override { return own; }
  redisync::Client& client;
  std::string name;
  std::string lease;
  std::string own;
};

// A fixed lease, never renewed: a hold longer than the lease silently loses the lock. The
// library's local lease deadline would tell the holder before the lease ends (and a holder
// told does not write), so this broken lock also ignores the lost-lock notice (see main).
struct NoRenewLocker : PlainLocker<redisync::Lock> {
  NoRenewLocker(redisync::Lock l, long lease_ms)
      : PlainLocker<redisync::Lock>(std::move(l)), lease(lease_ms) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (lock.try_lock_for(wait, lease)) return 0;
    return std::nullopt;
  }
  Duration lease;
};

// A release that "repairs" a failed unlock() by deleting the lock, whoever holds it now, and
// waking a waiter (one script, so a lost reply does not stop the wake-up).
struct BlindReleaseLocker : PlainLocker<redisync::Lock> {
  BlindReleaseLocker(redisync::Lock l, redisync::Client& c, std::string n)
      : PlainLocker<redisync::Lock>(std::move(l)), client(c), name(std::move(n)) {}
  void unlock() override {
    try {
      lock.unlock_checked();  // unlock() never throws: the failure must be seen to be "fixed"
    } catch (const redisync::Error&) {
      client.execute({"EVAL",
                      "redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], '0') return 1",
                      "2", name, "redisson_lock__channel:{" + name + "}"});
    }
  }
  redisync::Client& client;
  std::string name;
};

#ifdef REDISYNC_CHAOS_HAS_REDLOCK
// RedLock over one Lock of the same name per lock server (one Client each).
struct RedLocker : Locker {
  explicit RedLocker(std::vector<redisync::AnyLock> members) : lock(std::move(members)) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (lock.try_lock_for(wait)) return 0;
    return std::nullopt;
  }
  void unlock() override { lock.unlock_checked(); }
  std::string field() const override { return "-"; }
  redisync::RedLock lock;
};
#endif

int run(const Options& o) {
  const History history(o.history);
  std::atomic<bool> told{false};  // the lost-lock callback ran since the last acquire
  std::vector<std::unique_ptr<redisync::Client>> lock_clients;
  for (const auto& url : o.lock_urls) {
    auto cfg = redisync::Config::from_url(url);
    cfg.lock_watchdog_timeout = Duration{o.watchdog_ms};
    cfg.timeout = Duration{o.timeout_ms};
    cfg.retry_attempts = static_cast<int>(o.retry_attempts);
    cfg.retry_interval = Duration{200};
    cfg.reconnection_delay_max = Duration{200};
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

  std::unique_ptr<Locker> locker;
  auto& client = *lock_clients.front();
  if (o.kind == "lock") {
    locker = std::make_unique<PlainLocker<redisync::Lock>>(client.lock(o.name));
  } else if (o.kind == "fair") {
    locker = std::make_unique<PlainLocker<redisync::FairLock>>(client.fair_lock(o.name));
  } else if (o.kind == "fenced") {
    locker = std::make_unique<FencedLocker>(client.fenced_lock(o.name));
  } else if (o.kind == "rw-write") {
    locker = std::make_unique<PlainLocker<redisync::WriteLock>>(
        client.read_write_lock(o.name).write_lock());
  } else if (o.kind == "multi") {
    locker = std::make_unique<MultiLocker>(client, o.name);
  } else if (o.kind == "broken-ignore") {
    locker = std::make_unique<IgnoreHeldLocker>(client, o.name, o.watchdog_ms);
  } else if (o.kind == "broken-norenew") {
    locker = std::make_unique<NoRenewLocker>(client.lock(o.name), o.watchdog_ms);
  } else if (o.kind == "broken-release") {
    locker = std::make_unique<BlindReleaseLocker>(client.lock(o.name), client, o.name);
  } else if (o.kind == "redlock") {
#ifdef REDISYNC_CHAOS_HAS_REDLOCK
    std::vector<redisync::AnyLock> members;
    for (auto& c : lock_clients) members.emplace_back(c->lock(o.name));
    locker = std::make_unique<RedLocker>(std::move(members));
#else
    std::cerr << "chaos_worker: this build has no redisync/red_lock.h\n";
    return 64;
#endif
  } else {
    throw std::invalid_argument("unknown kind " + o.kind);
  }

  const std::string id = std::to_string(o.id);
  const std::string field = locker->field();
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
    history.line("A " + id + " " + std::to_string(::getpid()) + " " + s + " " +
                 std::to_string(wait_start) + " " + std::to_string(mono_ns()) + " " +
                 std::to_string(*token) + " " + field);

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
    if (told && o.heed_notice != 0) {
      wrote = "s";  // told of the loss: stop using the resource
    } else if (o.kind == "fenced") {
      const auto r = resource.execute({"EVAL", kFencedWrite, "2", counter, max_token,
                                       std::to_string(*token), std::to_string(read + 1)});
      if (r.integer != 1) wrote = "r";
    } else {
      resource.execute({"SET", counter, std::to_string(read + 1)});
    }
    const long long section_end = mono_ns();

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

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "chaos_worker: " << e.what() << "\n";
    return 1;
  }
}
