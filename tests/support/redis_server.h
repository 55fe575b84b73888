// SPDX-License-Identifier: Apache-2.0
// A real redis-server child process for integration tests: free loopback ports, a private temp
// dir, optional password / ACL user / TLS / unix socket / AOF persistence, and the lifecycle
// operations failure tests need (kill, pause, resume, stop, restart on the same ports).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <mutex>
#include <string>
#include <vector>

#include "redisync/reply.h"

struct redisContext;

namespace redisync::test {

/// An owning copy of a hiredis redisReply (RESP2), read through the library's conversion.
struct Reply {
  using Kind = redisync::Reply::Kind;
  Kind kind = Kind::nil;
  std::string str;              // string, status, error
  long long integer = 0;        // integer
  std::vector<Reply> elements;  // array

  bool is_nil() const { return kind == Kind::nil; }
  bool is_error() const { return kind == Kind::error; }
  /// The text of a string or status reply; throws std::runtime_error for any other kind.
  std::string as_string() const;
  /// The value of an integer reply; throws std::runtime_error for any other kind.
  long long as_integer() const;
  /// A short rendering for messages: "OK", "\"bar\"", "(error) ERR ...", "[1, 2]", "(nil)".
  std::string debug_string() const;
};

/// Lets gtest print Replies in assertion failures.
void PrintTo(const Reply& reply, std::ostream* os);

// Every member has an explicit initializer so designated initializers such as
// RedisServer server({.tls = true}) compile without -Wmissing-field-initializers.
struct ServerOptions {
  std::string password = {};      ///< requirepass (the default user's password)
  std::string acl_user = {};      ///< if set: ACL user "<acl_user> on ><acl_password> ~* &* +@all"
  std::string acl_password = {};  ///< empty with acl_user set: the user gets "nopass"
  bool tls = false;               ///< also listen with TLS on tls_port(); the plain port stays
  bool unix_socket = false;       ///< also listen on unix_socket_path()
  bool persistence = false;       ///< appendonly yes + appendfsync always: survives restart()
  /// Non-empty: start a Sentinel (redis-server <dir>/sentinel.conf --sentinel) whose config
  /// file begins with these lines (e.g. "sentinel monitor mymaster 127.0.0.1 7001 2").
  std::string sentinel_config = {};
  /// Appended last (so they override the defaults), e.g. {"--replicaof", "127.0.0.1", "7001"}.
  std::vector<std::string> extra_args = {};
};

class RedisServer {
 public:
  /// Starts redis-server and waits until it answers PING (at most 10 s per attempt; up to 5
  /// attempts with new ports if the ports were taken). Throws std::runtime_error with the
  /// server's log tail on failure.
  explicit RedisServer(ServerOptions opts = {});
  /// SIGKILLs the server if running, reaps it, removes the temp dir.
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  RedisServer(RedisServer&&) = delete;
  RedisServer& operator=(RedisServer&&) = delete;

  std::string host() const { return "127.0.0.1"; }
  std::uint16_t port() const { return port_; }          ///< plain TCP, fixed for life
  std::uint16_t tls_port() const { return tls_port_; }  ///< 0 unless options.tls
  std::string unix_socket_path() const;                 ///< "" unless options.unix_socket
  const std::string& dir() const { return dir_; }       ///< the server's --dir
  const ServerOptions& options() const { return opts_; }

  /// "redis://127.0.0.1:port", with "user:pw@" (ACL user) or ":pw@" (password) when set.
  /// User and password are percent-encoded.
  std::string url() const;
  /// "rediss://[auth@]127.0.0.1:tls_port?ca_file=..&cert_file=..&key_file=.."; throws
  /// std::logic_error unless options.tls.
  std::string tls_url() const;
  /// "unix:///path/redis.sock[?user=..&password=..]"; throws std::logic_error unless
  /// options.unix_socket.
  std::string unix_url() const;

  /// PEM files shared by all TLS servers of this process (generated once per process);
  /// "" unless options.tls. The server cert is valid for IP 127.0.0.1 and DNS localhost.
  std::string ca_file() const;
  std::string client_cert_file() const;
  std::string client_key_file() const;

  /// The server's pid, or -1 when it is not running.
  pid_t pid() const;
  /// False once the process has exited (killed, stopped, SHUTDOWN, crashed). A paused server
  /// is still running.
  bool running() const;

  void kill();    ///< SIGKILL + reap. No-op if not running.
  void pause();   ///< SIGSTOP; returns once the process is stopped (bounded, 2 s).
  void resume();  ///< SIGCONT.
  void stop();    ///< SIGTERM (clean shutdown, AOF flushed) + reap; SIGKILL after 5 s.
  /// kill() if running, then start again on the same ports and dir and wait for PING. Retries
  /// for up to 10 s if a port is momentarily taken. Throws std::runtime_error on failure.
  void restart();

  /// Runs one command over a private synchronous connection to the plain port (AUTH with the
  /// password if one is set). Error replies are returned, not thrown. Throws
  /// std::runtime_error if the server cannot be reached or the command times out (default
  /// 10 s, see set_command_timeout). Reconnects lazily; thread-safe.
  Reply command(std::initializer_list<std::string> args);
  Reply command(const std::vector<std::string>& args);
  void set_command_timeout(std::chrono::milliseconds timeout);

  /// Creates (or resets) the ACL user `user`, password "pw", with `rules` (e.g. {"~*", "&*",
  /// "+@all", "-ping"}: every right but PING), and returns its URL,
  /// "redis://<user>:pw@127.0.0.1:<port>" (this server's port unless `port` is given, e.g. a
  /// fault proxy's). Throws std::runtime_error when the server refuses the rules.
  std::string add_user(const std::string& user, const std::vector<std::string>& rules,
                       std::uint16_t port = 0);

  /// The last `lines` lines of the server's log file (all restarts, appended).
  std::string log_tail(size_t lines = 30) const;

 private:
  enum class StartResult { ok, port_taken };

  void pick_ports();
  StartResult start_once();
  std::vector<std::string> server_args() const;
  std::string auth_prefix() const;
  std::string failure_text(const std::string& what, size_t log_offset, size_t out_offset) const;
  redisContext* connect_admin(std::chrono::milliseconds connect_timeout, std::string* error) const;
  void drop_admin();
  void cleanup() noexcept;

  ServerOptions opts_;
  std::string dir_;
  std::uint16_t port_ = 0;
  std::uint16_t tls_port_ = 0;
  mutable pid_t pid_ = -1;  // -1 once reaped; running() reaps lazily

  mutable std::mutex admin_mutex_;
  redisContext* admin_ = nullptr;
  std::chrono::milliseconds command_timeout_{10000};
};

}  // namespace redisync::test
