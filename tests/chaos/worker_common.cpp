// SPDX-License-Identifier: Apache-2.0
#include "chaos/worker_common.h"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <iostream>
#include <map>
#include <stdexcept>

namespace redisync::chaos_worker {

Options parse(int argc, char** argv) {
  Options o;
  std::map<std::string, std::string*> strings{{"--kind", &o.kind},
                                              {"--resource-url", &o.resource_url},
                                              {"--name", &o.name},
                                              {"--history", &o.history},
                                              {"--stop-claim", &o.stop_claim},
                                              {"--stop-request", &o.stop_request}};
  std::map<std::string, long*> numbers{{"--duration-ms", &o.duration_ms},
                                       {"--watchdog-ms", &o.watchdog_ms},
                                       {"--wait-ms", &o.wait_ms},
                                       {"--hold-ms", &o.hold_ms},
                                       {"--think-ms", &o.think_ms},
                                       {"--timeout-ms", &o.timeout_ms},
                                       {"--retry-attempts", &o.retry_attempts},
                                       {"--stop-self-at-ms", &o.stop_self_at_ms},
                                       {"--heed-notice", &o.heed_notice},
                                       {"--permits", &o.permits},
                                       {"--replica-ack", &o.replica_ack}};
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

long long mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

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
    case redisync::errc::unknown_permit: return "UnknownPermitError";
    default: return "Error";
  }
}

HistoryFile::HistoryFile(const std::string& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) {
  if (fd_ < 0) throw std::runtime_error("cannot open history file " + path);
}

HistoryFile::~HistoryFile() { ::close(fd_); }

void HistoryFile::line(const std::string& text) const {
  const std::string l = text + "\n";
  if (::write(fd_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
    std::cerr << "chaos_worker: short write to the history file\n";
  }
}

}  // namespace redisync::chaos_worker
