// SPDX-License-Identifier: Apache-2.0
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "cli_error.h"
#include "duration.h"
#include "ls_command.h"
#include "ls_scan.h"
#include "names.h"
#include "redis_option.h"
#include "signals.h"

namespace redisync::cli {

void check_count(int count);  // ls_command.cpp

namespace {

// Raw (non-canonical, no echo) mode on stdin while alive, when stdin is a terminal; the
// original settings come back in the destructor (also on an exception or a signal, which
// top reads from a signalfd and turns into a normal return).
class RawTerminal {
 public:
  RawTerminal() {
    if (::isatty(0) == 0 || ::tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(0, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

std::string holders_key(const LsEntry& e) {
  std::string key;
  for (const auto& h : e.holders) key += h + ";";
  return key;
}

std::string now_text() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  return buf;
}

}  // namespace

CLI::App* add_top_command(CLI::App& app, TopOptions& o) {
  CLI::App* top = app.add_subcommand("top", "Watch locks and synchronizers live");
  top->footer(
      "A live view of `redisync ls PATTERN`, refreshed every --interval (default 1s): holders,\n"
      "queue, lease countdown, and CHANGES: how often the holder changed since top started\n"
      "(a '*' marks a change seen at the last refresh). Press q to quit (stdin in raw mode,\n"
      "restored on exit and on SIGINT/SIGTERM/SIGHUP). Needs a terminal on stdin and stdout\n"
      "(for scripts: `redisync ls [--json]`). Exit 0; 64 bad arguments or no terminal; 69 Redis\n"
      "unreachable, also when the server goes away while top runs.");
  add_redis_option(*top, o.redis_url);
  top->add_option("--interval", o.interval, "Refresh period (default 1s; at least 100ms)");
  top->add_option("--count", o.count, "SCAN COUNT hint per call (default 100)");
  top->add_option("pattern", o.pattern, "Name pattern (Redis glob); default *");
  return top;
}

int top_command(const TopOptions& o) {
  check_name(o.pattern, "top", "the PATTERN");
  check_count(o.count);
  const Duration interval = parse_duration_flag(o.interval, "--interval");
  if (interval < Duration{100}) {
    throw UsageError("--interval must be at least 100ms (got '" + o.interval + "')");
  }
  const Config config = config_from_url(o.redis_url);
  // A live screen needs a terminal both ways: one to redraw, one to read q from. Without,
  // top would write escape codes into a file or pipe, or run until killed.
  if (::isatty(1) == 0) {
    throw UsageError(
        "top: stdout is not a terminal (top redraws a screen; for scripts use "
        "`redisync ls [--json]`)");
  }
  if (::isatty(0) == 0) {
    throw UsageError(
        "top: stdin is not a terminal (top quits on the q key; for scripts use "
        "`redisync ls [--json]`)");
  }
  SignalFd signals({SIGINT, SIGTERM, SIGHUP});  // before the Client's thread starts
  Client client(config);
  RawTerminal raw;
  std::map<std::string, std::string> last_holders;
  std::map<std::string, long long> changes;
  for (;;) {
    const auto entries = scan_locks(client, o.pattern, o.count);
    std::set<std::string> changed_now;
    for (const auto& e : entries) {
      const std::string key = holders_key(e);
      const auto it = last_holders.find(e.name);
      if (it != last_holders.end() && it->second != key) {
        ++changes[e.name];
        changed_now.insert(e.name);
      }
      last_holders[e.name] = key;
    }
    std::string screen = "\x1b[H\x1b[2J";
    screen += "redisync top " + o.pattern + "  " + client.config().describe() + "  " +
              now_text() + "  (" + std::to_string(entries.size()) + " found; q quits)\n\n";
    const std::string table = render_ls_text(entries);
    std::size_t line_no = 0;
    std::size_t start = 0;
    while (start < table.size()) {
      const auto end = table.find('\n', start);
      std::string line = table.substr(start, end - start);
      if (line_no == 0) {
        line = "CHANGES  " + line;
      } else {
        const auto& e = entries[line_no - 1];
        std::string c = std::to_string(changes[e.name]) + (changed_now.count(e.name) ? "*" : "");
        c.resize(9, ' ');
        line = c + line;
      }
      screen += line + "\r\n";
      ++line_no;
      start = end + 1;
    }
    if (entries.empty()) screen += "(nothing matches)\r\n";
    std::cout << screen << std::flush;

    const auto deadline = std::chrono::steady_clock::now() + interval;
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      const auto ready = wait_readable({0, signals.fd()}, static_cast<int>(left.count()));
      if (ready[1]) {
        if (!signals.read_pending().empty()) return 0;
      }
      if (ready[0]) {
        char c = 0;
        const ssize_t n = ::read(0, &c, 1);
        if (n == 0) return 0;  // stdin closed
        if (n == 1 && (c == 'q' || c == 'Q')) return 0;
      }
    }
  }
}

}  // namespace redisync::cli
