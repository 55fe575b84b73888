// SPDX-License-Identifier: Apache-2.0
// The floor of a blocking client (issue 35): uncontended acquire+release pairs of redisync's
// Lock scripts sent from the caller's own thread over one blocking hiredis connection, with
// no I/O thread and so no thread hop. One JSON line on stdout:
//   bench_blocking_floor URL [--pairs 5000] [--warmup 20] [--seconds 60] [--lease-ms 10000]
//                            [--key bench:floor:u] [--events PATH]
// Same scripts (byte for byte, checked against the server's cache after one library pair),
// same keys and arguments as a redisync Lock pair (bench/floor_requests.h), and the release
// records swept as the library sweeps them (one DEL per 128 records or 5 ms, sent in the
// same write as the next release). --events writes one "t0 t1 t2 t3" line per pair
// (CLOCK_MONOTONIC ns, as the bench driver's), so bench/run reads both with one function.
// Bounded by --pairs and --seconds.
#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "floor_requests.h"
#include "redisync/redisync.h"

namespace {

using Clock = std::chrono::steady_clock;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

struct Pair {
  long long t0, t1, t2, t3;  // acquire called, returned; release called, returned (ns)
};

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string option(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return fallback;
}

std::string sha1_hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha1(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

// Appends one command to the context's output buffer (written by the next reply read).
void append(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  if (redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
      REDIS_OK) {
    throw std::runtime_error(std::string("append: ") + c->errstr);
  }
}

ReplyPtr read_reply(redisContext* c) {
  void* raw = nullptr;
  if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) {
    throw std::runtime_error(std::string("read: ") + c->errstr);
  }
  ReplyPtr reply(static_cast<redisReply*>(raw));
  if (reply->type == REDIS_REPLY_ERROR) throw std::runtime_error("server: " + std::string(reply->str));
  return reply;
}

ReplyPtr call(redisContext* c, const std::vector<std::string>& args) {
  append(c, args);
  return read_reply(c);
}

// One library pair on the same lock, then the server must already hold both scripts under the
// SHA-1s of the floor's texts: the floor sends the bytes the library sends.
void check_scripts_match_library(const std::string& url, redisContext* c, const std::string& key,
                                 long long lease_ms) {
  {
    redisync::Client client(url);
    auto lock = client.lock(key);
    lock.lock(std::chrono::milliseconds(lease_ms));
    lock.unlock();
  }
  const auto acquire = sha1_hex(bench::floor_acquire_script().source);
  const auto release = sha1_hex(bench::floor_release_script().source);
  auto exists = call(c, {"SCRIPT", "EXISTS", acquire, release});
  if (exists->elements != 2 || exists->element[0]->integer != 1 ||
      exists->element[1]->integer != 1) {
    throw std::runtime_error("the floor's script texts differ from the library's");
  }
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_blocking_floor URL [--pairs N] [--warmup N] [--seconds S] "
                         "[--lease-ms MS] [--key NAME] [--events PATH]\n");
    return 2;
  }
  const std::string url = argv[1];
  const long long pairs = std::stoll(option(argc, argv, "--pairs", "5000"));
  const long long warmup = std::stoll(option(argc, argv, "--warmup", "20"));
  const double seconds = std::stod(option(argc, argv, "--seconds", "60"));
  const long long lease_ms = std::stoll(option(argc, argv, "--lease-ms", "10000"));
  const std::string key = option(argc, argv, "--key", "bench:floor:u");
  const std::string events = option(argc, argv, "--events", "");

  const auto cfg = redisync::Config::from_url(url);
  // Every connect, write and read gives up after 5 s: a stalled server ends the run with an
  // error instead of hanging it (the loop itself is bounded by --pairs and --seconds).
  const timeval limit{5, 0};
  std::unique_ptr<redisContext, void (*)(redisContext*)> ctx(
      redisConnectWithTimeout(cfg.host.c_str(), cfg.port, limit), redisFree);
  if (!ctx || ctx->err) throw std::runtime_error("connect: " + std::string(ctx ? ctx->errstr : "?"));
  redisContext* c = ctx.get();
  if (redisSetTimeout(c, limit) != REDIS_OK) throw std::runtime_error("cannot set the timeout");
  check_scripts_match_library(url, c, key, lease_ms);

  bench::FloorRequests req(key, lease_ms);
  req.acquire_sha = call(c, {"SCRIPT", "LOAD", std::string(bench::floor_acquire_script().source)})->str;
  req.release_sha = call(c, {"SCRIPT", "LOAD", std::string(bench::floor_release_script().source)})->str;

  std::vector<std::string> pending;  // release records not swept yet
  long long first_pending_ns = 0, sweeps = 0;
  auto one_pair = [&](Pair& p) {
    p.t0 = now_ns();
    auto acquired = call(c, req.acquire());
    p.t1 = now_ns();
    if (acquired->type != REDIS_REPLY_NIL) throw std::runtime_error("acquire: lock held");
    p.t2 = now_ns();
    const std::string record = req.next_record();  // unlock() draws it too
    // The library's sweeper: a DEL of the records at 128 or 5 ms after the first, which its
    // I/O thread writes with whatever is queued (here: the release).
    const bool sweep = pending.size() >= 128 ||
                       (!pending.empty() && p.t2 - first_pending_ns >= 5'000'000);
    if (sweep) {
      std::vector<std::string> del{"DEL"};
      del.insert(del.end(), pending.begin(), pending.end());
      append(c, del);
      pending.clear();
      ++sweeps;
    }
    append(c, req.release(record));
    if (sweep) read_reply(c);
    auto released = read_reply(c);
    p.t3 = now_ns();
    if (released->type != REDIS_REPLY_INTEGER || released->integer != 1) {
      throw std::runtime_error("release: not released");
    }
    if (pending.empty()) first_pending_ns = p.t3;
    pending.push_back(record);
  };

  Pair p{};
  for (long long i = 0; i < warmup; ++i) one_pair(p);
  std::vector<Pair> done;
  done.reserve(static_cast<std::size_t>(std::min<long long>(pairs, 1 << 20)));
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (static_cast<long long>(done.size()) < pairs && Clock::now() < deadline) {
    one_pair(p);
    done.push_back(p);
  }
  if (!pending.empty()) {
    pending.insert(pending.begin(), "DEL");
    call(c, pending);
  }
  if (done.empty()) throw std::runtime_error("no pair completed");

  if (!events.empty()) {
    std::ofstream out(events, std::ios::trunc);
    for (const auto& e : done) out << e.t0 << ' ' << e.t1 << ' ' << e.t2 << ' ' << e.t3 << '\n';
  }
  std::vector<double> acq, rel;
  for (const auto& e : done) {
    acq.push_back(static_cast<double>(e.t1 - e.t0) / 1000.0);
    rel.push_back(static_cast<double>(e.t3 - e.t2) / 1000.0);
  }
  const double span = static_cast<double>(done.back().t3 - done.front().t0) / 1e9;
  std::printf(
      "{\"scenario\":\"blocking_floor\",\"pairs\":%zu,\"pairs_per_s\":%.1f,"
      "\"acquire_us_p50\":%.1f,\"acquire_us_p99\":%.1f,\"release_us_p50\":%.1f,"
      "\"release_us_p99\":%.1f,\"record_sweeps\":%lld,\"acquire_script_bytes\":%zu,"
      "\"release_script_bytes\":%zu}\n",
      done.size(), static_cast<double>(done.size()) / span, pct(acq, .5), pct(acq, .99),
      pct(rel, .5), pct(rel, .99), sweeps, bench::floor_acquire_script().source.size(),
      bench::floor_release_script().source.size());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_blocking_floor: %s\n", e.what());
  return 1;
}
