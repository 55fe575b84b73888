// SPDX-License-Identifier: Apache-2.0
// The rate limiter's benchmark (issue 20), one JSON line on stdout:
//   bench_rate_limiter URL [--single 3000] [--processes 8] [--rate 20] [--interval-ms 200]
//                          [--seconds 5]
//   1. single: try_acquire calls that succeed (a limiter with a rate that never runs out):
//      latency p50/p99 (bench/run divides p50 by one EVALSHA round trip);
//   2. contended: --processes forked processes (one Client each) call acquire(1) in a loop on
//      one limiter of `rate` per `interval` for --seconds. Every grant stays in the permits set
//      for at least one interval, so this process samples the set 10 times per interval and
//      sees every grant with its server-time score. From them:
//        - granted per fixed window [t0 + k*I, t0 + (k+1)*I), once saturated (skipping the
//          first and last windows): min and max, target [R-1, R];
//        - the largest sum in any sliding window (must be <= R);
//        - waiter lateness: the k-th grant (k >= R) took the permit freed by grant k-R, free
//          from score(k-R) + I; lateness = score(k) - that, in ms (server clock, 1 ms steps).
// Every loop is bounded in count and time.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "redisync/redisync.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

long long arg(int argc, char** argv, const std::string& name, long long fallback) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::stoll(argv[i + 1]);
  }
  return fallback;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string unique(const std::string& prefix) {
  return prefix + std::to_string(::getpid()) + ":" +
         std::to_string(Clock::now().time_since_epoch().count());
}

// One child: acquire(1) until `seconds` have passed; exit status 0 when no call failed.
int hammer(const std::string& url, const std::string& name, long long seconds) {
  redisync::Client client(url);
  auto limiter = client.rate_limiter(name);
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < end) {
    if (!limiter.try_acquire_for(1, end - Clock::now())) break;
  }
  return 0;
}

struct Grant {
  long long score;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_rate_limiter URL [--single N] [--processes N] [--rate R] "
                 "[--interval-ms I] [--seconds S]\n";
    return 64;
  }
  const std::string url = argv[1];
  const long long single = arg(argc, argv, "--single", 3000);
  const long long processes = arg(argc, argv, "--processes", 8);
  const long long rate = arg(argc, argv, "--rate", 20);
  const long long interval = arg(argc, argv, "--interval-ms", 200);
  const long long seconds = arg(argc, argv, "--seconds", 5);
  const std::string name = unique("bench:rl:");

  // 2 first: fork before this process starts any thread (a Client owns an I/O thread).
  std::vector<pid_t> children;
  {
    // Configure with a short-lived Client, destroyed (its thread joined) before forking.
    redisync::Client setup(url);
    setup.rate_limiter(name).set_rate(redisync::RateType::overall, rate,
                                      std::chrono::milliseconds(interval));
  }
  for (long long i = 0; i < processes; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int rc = 1;
      try {
        rc = hammer(url, name, seconds);
      } catch (const std::exception& e) {
        std::cerr << "bench_rate_limiter child: " << e.what() << "\n";
      }
      std::fflush(nullptr);
      ::_exit(rc);
    }
    children.push_back(pid);
  }

  redisync::Client client(url);
  const std::string tag = "{" + name + "}";
  std::map<std::string, Grant> seen;
  auto sample = [&] {
    const auto r = client.execute({"ZRANGE", tag + ":permits", "0", "-1", "WITHSCORES"});
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
      seen.emplace(r.elements[i].str, Grant{std::stoll(r.elements[i + 1].str)});
    }
  };
  const auto until = Clock::now() + std::chrono::seconds(seconds + 30);
  std::size_t exited = 0;
  int failures = 0;
  std::vector<bool> reaped(children.size(), false);
  while (exited < children.size() && Clock::now() < until) {
    sample();
    for (std::size_t i = 0; i < children.size(); ++i) {
      int status = 0;
      if (!reaped[i] && ::waitpid(children[i], &status, WNOHANG) == children[i]) {
        reaped[i] = true;
        ++exited;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max<long long>(interval / 10, 1)));
  }
  sample();

  std::vector<long long> scores;
  for (const auto& [id, g] : seen) scores.push_back(g.score);
  std::sort(scores.begin(), scores.end());
  long long window_min = -1, window_max = -1, sliding_max = 0;
  std::vector<double> lateness;
  if (!scores.empty()) {
    const long long t0 = scores.front();
    std::map<long long, long long> per_window;
    for (long long s : scores) ++per_window[(s - t0) / interval];
    const long long last = per_window.rbegin()->first;
    for (const auto& [k, n] : per_window) {
      if (k == 0 || k == last) continue;  // ramp-up and the partial last window
      window_min = window_min < 0 ? n : std::min(window_min, n);
      window_max = std::max(window_max, n);
    }
    std::size_t lo = 0;
    for (std::size_t hi = 0; hi < scores.size(); ++hi) {
      while (scores[lo] <= scores[hi] - interval) ++lo;
      sliding_max = std::max<long long>(sliding_max, static_cast<long long>(hi - lo + 1));
    }
    for (std::size_t k = static_cast<std::size_t>(rate); k < scores.size(); ++k) {
      lateness.push_back(static_cast<double>(scores[k] - (scores[k - static_cast<std::size_t>(rate)] + interval)));
    }
  }
  client.rate_limiter(name).remove();

  // 1. single: try_acquire that succeeds.
  const std::string solo = unique("bench:rl1:");
  auto limiter = client.rate_limiter(solo);
  limiter.set_rate(redisync::RateType::overall, redisync::RateLimiter::kMaxRate,
                   std::chrono::hours(1));
  for (int i = 0; i < 100; ++i) limiter.try_acquire();  // warm-up (script load, connection)
  std::vector<double> us;
  int refused = 0;
  for (long long i = 0; i < single; ++i) {
    const auto t = Clock::now();
    const bool ok = limiter.try_acquire();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
    if (!ok) ++refused;
  }
  limiter.remove();

  std::printf(
      "{\"scenario\":\"rate_limiter\",\"try_acquire_us_p50\":%.1f,\"try_acquire_us_p99\":%.1f,"
      "\"try_acquire_refused\":%d,\"processes\":%lld,\"rate\":%lld,\"interval_ms\":%lld,"
      "\"grants\":%zu,\"windows\":%lld,\"granted_per_window_min\":%lld,"
      "\"granted_per_window_max\":%lld,\"sliding_window_max\":%lld,"
      "\"lateness_ms_p50\":%.1f,\"lateness_ms_p99\":%.1f,\"lateness_ms_max\":%.1f,"
      "\"failures\":%d}\n",
      percentile(us, 0.5), percentile(us, 0.99), refused, processes, rate, interval, scores.size(),
      scores.empty() ? 0 : (scores.back() - scores.front()) / interval + 1, window_min, window_max,
      sliding_max, percentile(lateness, 0.5), percentile(lateness, 0.99),
      lateness.empty() ? 0.0 : *std::max_element(lateness.begin(), lateness.end()), failures);
  return failures == 0 && exited == children.size() ? 0 : 1;
}
