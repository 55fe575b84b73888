// SPDX-License-Identifier: Apache-2.0
#include "chaos/chaos_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <limits>
#include <iostream>
#include <set>
#include <stdexcept>
#include <thread>

#include "support/replication.h"
#include "support/test_util.h"

#ifndef REDISYNC_CHAOS_WORKER
#error "REDISYNC_CHAOS_WORKER must name the chaos_worker executable"
#endif

namespace redisync::chaos {

namespace {

using namespace std::chrono_literals;

constexpr long long kStillPaused = std::numeric_limits<long long>::max();

long env_or(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  try {
    return std::stol(v);
  } catch (const std::exception&) {
    return fallback;
  }
}

// 'T' once the kernel reports the process stopped.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

}  // namespace

long long mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

long default_duration_ms() { return env_or("REDISYNC_CHAOS_MS", 6000); }

bool is_reader(const std::string& kind, int worker) {
  return (kind == "rw-mix" || kind == "rw-mix-grant") && worker % 2 == 1;
}

ChaosRun::ChaosRun(RunParams params) : params_(std::move(params)) {
  if (params_.workers <= 0) params_.workers = static_cast<int>(env_or("REDISYNC_CHAOS_WORKERS", 8));
  if (params_.duration_ms <= 0) params_.duration_ms = default_duration_ms();
  for (int i = 0; i < params_.lock_servers; ++i) {
    lock_servers_.push_back(
        std::make_unique<test::RedisServer>(test::ServerOptions{.extra_args = params_.lock_server_args}));
  }
  if (params_.proxied) {
    for (int w = 0; w < params_.workers; ++w) {
      proxies_.push_back(std::make_unique<test::FaultProxy>(lock_servers_.front()->port()));
    }
  }
  if (params_.replica) {
    if (!params_.proxied) throw std::invalid_argument("ChaosRun: a replica needs proxied workers");
    replication_proxy_ = std::make_unique<test::FaultProxy>(lock_servers_.front()->port());
    std::vector<std::string> args = params_.lock_server_args;
    args.insert(args.end(), {"--replicaof", "127.0.0.1", std::to_string(replication_proxy_->port())});
    replica_ = std::make_unique<test::RedisServer>(test::ServerOptions{.extra_args = args});
    const bool synced = test::replicas_streaming(*lock_servers_.front());
    if (!synced) throw std::runtime_error("ChaosRun: the replica never synced\n" + replica_->log_tail());
  }
  name_ = test::unique_name("chaos:");
  history_ = test::temp_file("history.txt");
}

ChaosRun::~ChaosRun() {
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (exit_codes_[i] != -1) continue;
    ::kill(pids_[i], SIGKILL);
    int status = 0;
    test::detail::reap_within(pids_[i], 5s, &status);
  }
}

void ChaosRun::start() {
  started_ = std::chrono::steady_clock::now();
  for (int w = 0; w < params_.workers; ++w) {
    std::vector<std::string> argv{REDISYNC_CHAOS_WORKER,
                                  "--id", std::to_string(w),
                                  "--kind", params_.kind,
                                  "--resource-url", resource_.url(),
                                  "--name", name_,
                                  "--history", history_,
                                  "--duration-ms", std::to_string(params_.duration_ms),
                                  "--watchdog-ms", std::to_string(params_.watchdog_ms),
                                  "--wait-ms", std::to_string(params_.wait_ms),
                                  "--hold-ms", std::to_string(params_.hold_ms),
                                  "--think-ms", std::to_string(params_.think_ms),
                                  "--timeout-ms", std::to_string(params_.timeout_ms),
                                  "--retry-attempts", std::to_string(params_.retry_attempts),
                                  "--heed-notice", params_.heed_notice ? "1" : "0",
                                  "--permits", std::to_string(params_.permits),
                                  "--replica-ack", params_.replica_ack ? "1" : "0"};
    argv.insert(argv.end(), {"--stop-request", stop_request_path()});
    if (stop_self_at_ms_ >= 0) {
      argv.insert(argv.end(), {"--stop-self-at-ms", std::to_string(stop_self_at_ms_),
                               "--stop-claim", history_ + ".stop-claim"});
    }
    for (size_t i = 0; i < lock_servers_.size(); ++i) {
      const bool via_proxy = i == 0 && !proxies_.empty();
      argv.insert(argv.end(), {"--lock-url", via_proxy ? proxies_[static_cast<size_t>(w)]->url()
                                                       : lock_servers_[i]->url()});
    }
    if (auto extra = params_.worker_args.find(w); extra != params_.worker_args.end()) {
      argv.insert(argv.end(), extra->second.begin(), extra->second.end());
    }
    std::string log;
    pids_.push_back(
        test::detail::spawn_to_temp_file(argv, "worker-" + std::to_string(w) + ".log", &log));
    logs_.push_back(std::move(log));
    exit_codes_.push_back(-1);
  }
}

void ChaosRun::sleep_until(std::chrono::milliseconds offset) const {
  std::this_thread::sleep_until(started_ + offset);
}

std::string ChaosRun::stop_request_path() const { return history_ + ".stop-request"; }

// Asks the workers for a stop (the first one inside a section takes the request and stops
// itself there, chaos_worker.cpp) instead of stopping one the history shows inside a section:
// by the time the history was read and the signal sent, an instrumented worker (TSan) had
// often left its 2 ms section, again and again ("no holder could be caught", a CI failure).
std::optional<Section> ChaosRun::stop_a_holder(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const std::string request = stop_request_path();
  auto stopped_worker = [&]() -> int {
    for (size_t i = 0; i < pids_.size(); ++i) {
      const int w = static_cast<int>(i);
      if (std::find(touched_.begin(), touched_.end(), w) != touched_.end()) continue;
      if (process_state(pids_[i]) == 'T') return w;
    }
    return -1;
  };
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = ::open(request.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    int w = -1;
    test::wait_until([&] { return (w = stopped_worker()) >= 0; },
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                         deadline - std::chrono::steady_clock::now()),
                     1ms);
    if (w < 0) {
      // Withdraw the request; if a worker took it meanwhile, it is stopping now.
      if (::unlink(request.c_str()) == 0) return std::nullopt;
      test::wait_until([&] { return (w = stopped_worker()) >= 0; }, 2000ms, 1ms);
      if (w < 0) return std::nullopt;
    }
    std::optional<Section> open;
    for (const auto& s : read_history(history_).sections) {
      if (s.worker == w && !s.closed && s.section_end == 0) open = s;
    }
    if (open && holds_on_server(*open)) {
      touched_.push_back(w);
      paused_[w].emplace_back(mono_ns(), kStillPaused);
      ++faults_;
      return open;
    }
    // Its hold was already gone on the server (a lease ran out): not a holder to catch.
    ::kill(pids_[static_cast<size_t>(w)], SIGCONT);
  }
  ::unlink(request.c_str());
  return std::nullopt;
}

// The owner field of `held` is in the lock hash. Semaphore permits have no owner on the
// server (and PermitExpirableSemaphore ids are stored raw): their open section is the hold.
bool ChaosRun::holds_on_server(const Section& held) {
  if (params_.kind == "semaphore" || params_.kind == "pes") return true;
  const auto owns = lock_servers_.front()->command({"HEXISTS", name_, held.field});
  return !owns.is_error() && owns.integer == 1;
}

std::optional<Section> ChaosRun::wait_self_stopped(std::chrono::milliseconds limit) {
  int stopped = -1;
  test::wait_until(
      [&] {
        for (size_t i = 0; i < pids_.size() && stopped < 0; ++i) {
          if (process_state(pids_[i]) == 'T') stopped = static_cast<int>(i);
        }
        return stopped >= 0;
      },
      limit, 1ms);
  if (stopped < 0) return std::nullopt;
  touched_.push_back(stopped);
  paused_[stopped].emplace_back(mono_ns(), kStillPaused);
  ++faults_;
  std::optional<Section> open;
  for (const auto& s : read_history(history_).sections) {
    if (s.worker == stopped && !s.closed) open = s;
  }
  return open;
}

void ChaosRun::kill_worker(int w) {
  ::kill(pids_.at(static_cast<size_t>(w)), SIGKILL);
  killed_[w] = mono_ns();
  touched_.push_back(w);
  ++faults_;
}

void ChaosRun::kill_worker(const Section& held) {
  ::kill(static_cast<pid_t>(held.pid), SIGKILL);
  killed_[held.worker] = mono_ns();
  // A worker stopped first and then killed: it was paused until the kill, one fault.
  if (auto p = paused_.find(held.worker); p != paused_.end() && !p->second.empty() &&
                                          p->second.back().second == kStillPaused) {
    p->second.back().second = killed_[held.worker];
  } else {
    ++faults_;
  }
}

void ChaosRun::continue_worker(const Section& held) {
  ::kill(static_cast<pid_t>(held.pid), SIGCONT);
  if (auto p = paused_.find(held.worker); p != paused_.end() && !p->second.empty()) {
    p->second.back().second = mono_ns();
  }
}

void ChaosRun::fail_over() {
  lock_servers_.front()->kill();
  const auto promoted = replica_->command({"REPLICAOF", "NO", "ONE"});
  if (promoted.is_error()) {
    throw std::runtime_error("ChaosRun::fail_over: REPLICAOF NO ONE: " + promoted.debug_string());
  }
  for (auto& p : proxies_) p->set_upstream(replica_->port());
  for (auto& p : proxies_) p->reset_connections();
  note_fault(/*data_loss=*/true);
}

void ChaosRun::note_fault(bool data_loss) {
  ++faults_;
  if (data_loss) ++data_loss_faults_;
}

std::optional<Section> ChaosRun::wait_open_section(const std::function<bool(int)>& which,
                                                   std::chrono::milliseconds limit) const {
  std::optional<Section> open;
  test::wait_until(
      [&] {
        for (const auto& s : read_history(history_).sections) {
          if (which(s.worker) && s.section_end == 0) open = s;
        }
        return open.has_value();
      },
      limit, 2ms);
  return open;
}

bool ChaosRun::wait_every_worker_held(std::chrono::milliseconds limit, long long since_ns) const {
  return test::wait_until(
      [&] {
        std::set<int> held;
        for (const auto& s : read_history(history_).sections) {
          if (s.closed && s.acquired >= since_ns && (s.outcome == "ok" || s.outcome == "lost")) {
            held.insert(s.worker);
          }
        }
        return static_cast<int>(held.size()) >= params_.workers;
      },
      limit, 20ms);
}

std::optional<Section> ChaosRun::wait_in_section(int w, std::chrono::milliseconds limit) const {
  return wait_open_section([w](int worker) { return worker == w; }, limit);
}

std::optional<Section> ChaosRun::wait_other_in_section(int w,
                                                       std::chrono::milliseconds limit) const {
  return wait_open_section([w](int worker) { return worker != w; }, limit);
}

std::vector<std::string> ChaosRun::finish() {
  std::vector<std::string> problems;
  const auto limit = std::chrono::milliseconds(params_.duration_ms) + 60s;
  for (size_t i = 0; i < pids_.size(); ++i) {
    int status = 0;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        started_ + limit - std::chrono::steady_clock::now());
    if (!test::detail::reap_within(pids_[i], std::max(left, 0ms), &status)) {
      ::kill(pids_[i], SIGKILL);
      test::detail::reap_within(pids_[i], 5s, &status);
      exit_codes_[i] = 128 + SIGKILL;
      problems.push_back("worker " + std::to_string(i) + " hung (killed after " +
                         std::to_string(limit.count()) + " ms)");
      continue;
    }
    exit_codes_[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const bool killed = killed_.count(static_cast<int>(i)) > 0;
    if (exit_codes_[i] != 0 && !killed) {
      problems.push_back("worker " + std::to_string(i) + " exited with status " +
                         std::to_string(exit_codes_[i]));
    }
  }
  return problems;
}

Verdict ChaosRun::verdict(const std::string& label, const std::string& faults) {
  const auto value = resource_.command({"GET", name_ + ":counter"});
  Expectations expect;
  expect.workers = params_.workers;
  expect.counter = value.is_nil() ? 0 : std::stoll(value.as_string());
  expect.tokens = params_.kind == "fenced" || params_.kind == "fenced-grant";
  expect.wait_ns = params_.wait_ms * 1000000LL;
  expect.hang_slack_ns = params_.hang_slack_ms * 1000000LL;
  expect.killed = killed_;
  expect.paused = paused_;
  expect.faults = faults_;
  expect.data_loss_faults = data_loss_faults_;
  if (params_.kind == "semaphore" || params_.kind == "pes") expect.permits = params_.permits;
  for (int w = 0; w < params_.workers; ++w) {
    if (is_reader(params_.kind, w)) expect.shared_workers.insert(w);
  }
  Verdict v = check(read_history(history_), expect);
  // Keep the raw history when asked (for the figures or a failure's post-mortem).
  if (const char* dir = std::getenv("REDISYNC_CHAOS_HISTORY_DIR"); dir != nullptr && *dir) {
    std::string file = label;
    for (char& c : file) {
      if (c == '/' || c == ' ') c = '_';
    }
    std::ofstream(std::string(dir) + "/" + file + ".history") << test::read_text_file(history_);
  }
  std::cout << v.summary(label) << " workers=" << params_.workers
            << " duration_ms=" << params_.duration_ms << " faults={" << faults << "}"
            << std::endl;
  return v;
}

std::string ChaosRun::worker_logs() const {
  std::string out;
  for (size_t i = 0; i < logs_.size(); ++i) {
    const std::string text = test::read_text_file(logs_[i]);
    if (!text.empty()) out += "--- worker " + std::to_string(i) + ":\n" + text;
  }
  return out;
}

}  // namespace redisync::chaos
