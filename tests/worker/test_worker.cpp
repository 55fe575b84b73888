// SPDX-License-Identifier: Apache-2.0
// A worker process for multi-process integration tests (mutual exclusion across processes,
// SIGKILL of a holder). Usage:
//   test_worker counter URL NAME COUNTER_KEY ITERATIONS [WATCHDOG_MS]
//       ITERATIONS critical sections: lock, GET counter, SET counter+1, unlock.
//   test_worker hold URL NAME [WATCHDOG_MS]
//       lock (watchdog mode), print "held", then sleep until killed.
//   test_worker sem-section URL NAME HISTORY_FILE ITERATIONS [HOLD_MS]
//       ITERATIONS times: semaphore acquire(), append "enter <steady ns> <pid>", sleep
//       HOLD_MS (default 2), append "exit <steady ns> <pid>", release(). Each line is one
//       write() to the O_APPEND file.
//   test_worker pes-hold URL NAME LEASE_MS
//       permit-expirable semaphore acquire(lease), print the permit id, sleep until killed.
//   test_worker latch-wait URL NAME THREADS TIMEOUT_MS
//       THREADS threads each wait_for(TIMEOUT_MS) on the count-down latch; exit 0 if all
//       saw it open, 2 if any timed out.
// Lock kinds (fair_lock_test, read_write_lock_test, fenced_lock_test, spin_lock_test):
//   test_worker kind-counter KIND URL NAME COUNTER_KEY ITERATIONS
//       as `counter` with KIND = fair | fenced | spin | rw (the write lock) | nr
//       (non-reentrant lock) | nrfair (non-reentrant fair lock) | lock.
// Rate limiter (rate_limiter_test):
//   test_worker rate-hammer URL NAME THREADS DURATION_MS
//       THREADS threads each call try_acquire_for(1, 1 s) on the rate limiter until
//       DURATION_MS have passed; prints "granted N" (the total) at the end.
//   test_worker fenced-tokens URL NAME ITERATIONS
//       ITERATIONS times: lock_and_get_token(), print the token on its own line, unlock.
//   test_worker fair-once URL NAME THREADS LIST_KEY
//       THREADS threads each lock the fair lock once, RPUSH "<pid>:<thread>" to LIST_KEY,
//       unlock.
//   test_worker fair-wait URL NAME WAIT_MS
//       print "waiting", then try_lock_for(WAIT_MS) on the fair lock (tests kill it queued).
//   test_worker fair-order URL NAME WAIT_MS LIST_KEY
//       print "waiting", then try_lock_for(WAIT_MS) on the fair lock; once acquired RPUSH
//       "worker" to LIST_KEY and unlock; exit 0 (2 if not acquired). Run under faketime to
//       give it a wall clock that differs from everyone else's.
//   test_worker rw-read-hold URL NAME WATCHDOG_MS
//       lock_shared() (watchdog mode), print "held", then sleep until killed.
// MultiLock / RedLock (multi_lock_test, red_lock_test):
//   test_worker redlock-counter COUNTER_URL NAME ITERATIONS LEASE_MS URL1 URL2 ...
//       ITERATIONS critical sections under a RedLock of lock NAME on the servers URL1..N
//       (lock(LEASE_MS), or lock() when LEASE_MS is 0): GET, SET counter+1 on COUNTER_URL's
//       key "counter", unlock. Prints one line per MultiLockError it rode out.
//   test_worker guard-loses KIND HOW URL NAME
//       KIND = lock | fair | fenced | spin | rw-write | rw-read | multi | redlock. Takes the
//       lock in a std::lock_guard (std::shared_lock for rw-read) and, inside the scope, makes
//       the release fail: HOW = lost deletes the lock's keys (the hold is lost), HOW = server
//       shuts the server down (SHUTDOWN NOSAVE). The guard's destructor then calls unlock();
//       exit 0 means the process survived it (std::terminate would abort with SIGABRT).
// Closing (grant_test):
//   test_worker drop-in-handler-and-exit URL HELD FREE
//       grant mode: waits on the lock HELD (held elsewhere) until its grant registration is
//       on the server, then locks FREE and drops the Client inside that completion, prints
//       "dropped" and returns from main at once, while the Client's close is still running
//       (the server's writes paused for 300 ms hold it up).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <vector>
#include <iostream>
#include <memory>
#include <shared_mutex>
#include <string>
#include <thread>

#include "redisync/redisync.h"

namespace {

redisync::Config make_config(const std::string& url, int argc, char** argv, int wd_index) {
  auto cfg = redisync::Config::from_url(url);
  if (argc > wd_index) cfg.lock_watchdog_timeout = redisync::Duration{std::stol(argv[wd_index])};
  return cfg;
}

// Appends one line with a single write() (O_APPEND keeps concurrent writers' lines whole).
void append_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    throw std::runtime_error("short write to the history file");
  }
}

long long steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// --- lock kinds ---

template <class L>
void count_under(redisync::Client& client, L& lock, const std::string& counter, int iterations) {
  for (int i = 0; i < iterations; ++i) {
    std::lock_guard guard(lock);
    auto value = client.execute({"GET", counter});
    const long long n = value.is_nil() ? 0 : std::stoll(value.str);
    client.execute({"SET", counter, std::to_string(n + 1)});
  }
}

void sleep_until_killed() {
  for (int i = 0; i < 600; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// Inside a guard's scope: makes the coming unlock() fail (see guard-loses above).
void break_release(redisync::Client& client, const std::string& how,
                   const std::vector<std::string>& keys) {
  if (how == "lost") {
    std::vector<std::string> del{"DEL"};
    del.insert(del.end(), keys.begin(), keys.end());
    client.execute(del);
    return;
  }
  try {
    client.execute({"SHUTDOWN", "NOSAVE"});
  } catch (const redisync::Error&) {
    // the connection drops as the server goes: expected
  }
}

template <class L>
void lose_under_guard(redisync::Client& client, L& lock, const std::string& how,
                      const std::vector<std::string>& keys) {
  std::lock_guard guard(lock);
  break_release(client, how, keys);
}

int run_guard_loses(int argc, char** argv) {
  if (argc < 6) return 64;
  const std::string kind = argv[2];
  const std::string how = argv[3];
  auto cfg = redisync::Config::from_url(argv[4]);
  cfg.timeout = std::chrono::milliseconds(300);
  cfg.retry_attempts = 1;
  cfg.retry_interval = std::chrono::milliseconds(50);
  redisync::Client client(cfg);
  const std::string name = argv[5];
  if (kind == "lock") {
    auto lock = client.lock(name);
    lose_under_guard(client, lock, how, {name});
  } else if (kind == "fair") {
    auto lock = client.fair_lock(name);
    lose_under_guard(client, lock, how, {name});
  } else if (kind == "fenced") {
    auto lock = client.fenced_lock(name);
    lose_under_guard(client, lock, how, {name});
  } else if (kind == "spin") {
    auto lock = client.spin_lock(name);
    lose_under_guard(client, lock, how, {name});
  } else if (kind == "rw-write") {
    auto lock = client.read_write_lock(name);
    lose_under_guard(client, lock, how, {name});
  } else if (kind == "rw-read") {
    auto lock = client.read_write_lock(name);
    std::shared_lock guard(lock);
    break_release(client, how, {name});
  } else if (kind == "multi") {
    redisync::MultiLock lock{client.lock(name + "-a"), client.fair_lock(name + "-b")};
    lose_under_guard(client, lock, how, {name + "-a", name + "-b"});
  } else if (kind == "redlock") {
    redisync::RedLock lock{client.lock(name)};
    lose_under_guard(client, lock, how, {name});
  } else {
    return 64;
  }
  std::cout << "survived" << std::endl;
  return 0;
}

// Runs a lock-kind mode; -1 if `mode` is not one of them.
int run_lock_kind_mode(const std::string& mode, int argc, char** argv) {
  if (mode == "guard-loses") return run_guard_loses(argc, argv);
  if (mode == "kind-counter" && argc >= 7) {
    const std::string kind = argv[2];
    redisync::Client client(redisync::Config::from_url(argv[3]));
    const std::string name = argv[4];
    const std::string counter = argv[5];
    const int iterations = std::stoi(argv[6]);
    if (kind == "fair") {
      auto lock = client.fair_lock(name);
      count_under(client, lock, counter, iterations);
    } else if (kind == "fenced") {
      auto lock = client.fenced_lock(name);
      count_under(client, lock, counter, iterations);
    } else if (kind == "spin") {
      auto lock = client.spin_lock(name);
      count_under(client, lock, counter, iterations);
    } else if (kind == "rw") {
      auto lock = client.read_write_lock(name);
      count_under(client, lock, counter, iterations);
    } else if (kind == "nr") {
      auto lock = client.non_reentrant_lock(name);
      count_under(client, lock, counter, iterations);
    } else if (kind == "nrfair") {
      auto lock = client.non_reentrant_fair_lock(name);
      count_under(client, lock, counter, iterations);
    } else if (kind == "lock") {
      auto lock = client.lock(name);
      count_under(client, lock, counter, iterations);
    } else {
      return 64;
    }
    return 0;
  }
  if (mode == "fenced-tokens" && argc >= 5) {
    redisync::Client client(redisync::Config::from_url(argv[2]));
    auto lock = client.fenced_lock(argv[3]);
    const int iterations = std::stoi(argv[4]);
    for (int i = 0; i < iterations; ++i) {
      const std::uint64_t token = lock.lock_and_get_token();
      std::cout << token << "\n";
      lock.unlock();
    }
    std::cout << std::flush;
    return 0;
  }
  if (mode == "fair-once" && argc >= 6) {
    redisync::Client client(redisync::Config::from_url(argv[2]));
    auto lock = client.fair_lock(argv[3]);
    const int threads = std::stoi(argv[4]);
    const std::string list = argv[5];
    std::atomic<int> failures{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        try {
          std::lock_guard guard(lock);
          client.execute({"RPUSH", list, std::to_string(getpid()) + ":" + std::to_string(t)});
        } catch (const std::exception& e) {
          std::cerr << "test_worker: " << e.what() << "\n";
          ++failures;
        }
      });
    }
    for (auto& th : pool) th.join();
    return failures.load() == 0 ? 0 : 1;
  }
  if (mode == "fair-wait" && argc >= 5) {
    redisync::Client client(redisync::Config::from_url(argv[2]));
    auto lock = client.fair_lock(argv[3]);
    std::cout << "waiting" << std::endl;
    return lock.try_lock_for(std::chrono::milliseconds(std::stol(argv[4]))) ? 0 : 2;
  }
  if (mode == "redlock-counter" && argc >= 8) {
    redisync::Client counter(redisync::Config::from_url(argv[2]));
    const std::string name = argv[3];
    const int iterations = std::stoi(argv[4]);
    const redisync::Duration lease{std::stol(argv[5])};
    std::vector<std::unique_ptr<redisync::Client>> clients;
    std::vector<redisync::AnyLock> members;
    for (int i = 6; i < argc; ++i) {
      auto cfg = redisync::Config::from_url(argv[i]);
      cfg.reconnection_delay_min = std::chrono::milliseconds(20);
      cfg.reconnection_delay_max = std::chrono::milliseconds(200);
      clients.push_back(std::make_unique<redisync::Client>(cfg));
      members.emplace_back(clients.back()->lock(name));
    }
    redisync::RedLock lock(members);
    for (int i = 0; i < iterations;) {
      try {
        if (lease.count() > 0) {
          lock.lock(lease);
        } else {
          lock.lock();
        }
      } catch (const redisync::MultiLockError& e) {
        std::cout << "ride-out: " << e.what() << std::endl;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      auto value = counter.execute({"GET", "counter"});
      const long long n = value.is_nil() ? 0 : std::stoll(value.str);
      counter.execute({"SET", "counter", std::to_string(n + 1)});
      lock.unlock();
      ++i;
    }
    return 0;
  }
  if (mode == "fair-order" && argc >= 6) {
    redisync::Client client(redisync::Config::from_url(argv[2]));
    auto lock = client.fair_lock(argv[3]);
    std::cout << "waiting" << std::endl;
    if (!lock.try_lock_for(std::chrono::milliseconds(std::stol(argv[4])))) return 2;
    client.execute({"RPUSH", argv[5], "worker"});
    lock.unlock();
    return 0;
  }
  if (mode == "rw-read-hold" && argc >= 5) {
    redisync::Client client(make_config(argv[2], argc, argv, 4));
    auto lock = client.read_write_lock(argv[3]);
    lock.lock_shared();
    std::cout << "held" << std::endl;
    sleep_until_killed();
    return 0;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: test_worker counter|hold URL NAME ...\n";
    return 64;
  }
  const std::string mode = argv[1];
  try {
    if (const int rc = run_lock_kind_mode(mode, argc, argv); rc >= 0) return rc;
    if (mode == "counter" && argc >= 6) {
      redisync::Client client(make_config(argv[2], argc, argv, 6));
      auto lock = client.lock(argv[3]);
      const std::string counter = argv[4];
      const int iterations = std::stoi(argv[5]);
      for (int i = 0; i < iterations; ++i) {
        std::lock_guard guard(lock);
        auto value = client.execute({"GET", counter});
        const long long n = value.is_nil() ? 0 : std::stoll(value.str);
        client.execute({"SET", counter, std::to_string(n + 1)});
      }
      return 0;
    }
    if (mode == "sem-section" && argc >= 6) {
      redisync::Client client(redisync::Config::from_url(argv[2]));
      auto sem = client.semaphore(argv[3]);
      const int fd = ::open(argv[4], O_WRONLY | O_APPEND | O_CREAT, 0644);
      if (fd < 0) throw std::runtime_error(std::string("cannot open ") + argv[4]);
      const int iterations = std::stoi(argv[5]);
      const int hold_ms = argc > 6 ? std::stoi(argv[6]) : 2;
      const std::string pid = std::to_string(::getpid());
      for (int i = 0; i < iterations; ++i) {
        sem.acquire();
        append_line(fd, "enter " + std::to_string(steady_ns()) + " " + pid);
        std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
        append_line(fd, "exit " + std::to_string(steady_ns()) + " " + pid);
        sem.release();
      }
      ::close(fd);
      return 0;
    }
    if (mode == "pes-hold" && argc >= 5) {
      redisync::Client client(redisync::Config::from_url(argv[2]));
      auto sem = client.permit_expirable_semaphore(argv[3]);
      const std::string id = sem.acquire(redisync::Duration{std::stol(argv[4])});
      std::cout << id << std::endl;
      for (int i = 0; i < 600; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return 0;
    }
    if (mode == "latch-wait" && argc >= 6) {
      redisync::Client client(redisync::Config::from_url(argv[2]));
      auto latch = client.count_down_latch(argv[3]);
      const int threads = std::stoi(argv[4]);
      const redisync::Duration timeout{std::stol(argv[5])};
      std::atomic<int> opened{0};
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
          try {
            if (latch.wait_for(timeout)) ++opened;
          } catch (const std::exception& e) {
            std::cerr << "test_worker: " << e.what() << "\n";
          }
        });
      }
      for (auto& t : pool) t.join();
      return opened.load() == threads ? 0 : 2;
    }
    if (mode == "rate-hammer" && argc >= 6) {
      redisync::Client client(redisync::Config::from_url(argv[2]));
      auto limiter = client.rate_limiter(argv[3]);
      const int threads = std::stoi(argv[4]);
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::stol(argv[5]));
      std::atomic<long long> granted{0};
      std::atomic<int> failures{0};
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
          try {
            while (std::chrono::steady_clock::now() < end) {
              if (limiter.try_acquire_for(1, std::chrono::seconds(1))) ++granted;
            }
          } catch (const std::exception& e) {
            std::cerr << "test_worker: " << e.what() << "\n";
            ++failures;
          }
        });
      }
      for (auto& t : pool) t.join();
      std::cout << "granted " << granted.load() << std::endl;
      return failures.load() == 0 ? 0 : 1;
    }
    if (mode == "drop-in-handler-and-exit" && argc >= 5) {
      auto cfg = redisync::Config::from_url(argv[2]);
      cfg.handoff = redisync::Handoff::grant;
      auto client = std::make_unique<redisync::Client>(cfg);
      redisync::Client pauser(argv[2]);
      auto held = client->lock(argv[3]);
      auto free = client->lock(argv[4]);
      held.async_lock(redisync::Client::new_owner_id(), std::chrono::seconds(60),
                      [](std::exception_ptr) {});
      const std::string registrations = std::string("redisync_lock_grant:{") + argv[3] + "}";
      for (int i = 0; i < 500 && client->execute({"ZCARD", registrations}).integer == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      std::promise<void> dropped;
      free.async_lock(redisync::Client::new_owner_id(), std::chrono::seconds(60),
                      [&](std::exception_ptr) {
                        // Writes paused for 300 ms: the close's deregistration waits, so the
                        // return from main surely comes before it.
                        pauser.execute({"CLIENT", "PAUSE", "300", "WRITE"});
                        client.reset();
                        dropped.set_value();
                      });
      if (dropped.get_future().wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        return 2;
      }
      std::cout << "dropped" << std::endl;
      return 0;
    }
    if (mode == "hold") {
      redisync::Client client(make_config(argv[2], argc, argv, 4));
      auto lock = client.lock(argv[3]);
      lock.lock();
      std::cout << "held" << std::endl;
      for (int i = 0; i < 600; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "test_worker: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "test_worker: bad arguments\n";
  return 64;
}
