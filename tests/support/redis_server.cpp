// SPDX-License-Identifier: Apache-2.0
#include "support/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "net/reply.h"
#include "support/test_util.h"

namespace redisync::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kStartTimeout = 10s;    // per start attempt: spawn until PING answers
constexpr auto kRestartTimeout = 10s;  // restart(): retry while the fixed port is taken
constexpr int kStartAttempts = 5;      // constructor: fresh ports each attempt
constexpr auto kStopGrace = 5s;        // stop(): SIGTERM, then SIGKILL
constexpr auto kReapTimeout = 10s;     // after SIGKILL

// ---------------------------------------------------------------------------------------------
// Reply conversion: hiredis's reply through the library's conversion (net::convert_reply), then
// copied into the test support's Reply (the same kinds, plus the test accessors).

Reply copy_of(redisync::Reply&& r) {
  Reply out;
  out.kind = r.kind;
  out.str = std::move(r.str);
  out.integer = r.integer;
  out.elements.reserve(r.elements.size());
  for (auto& e : r.elements) out.elements.push_back(copy_of(std::move(e)));
  return out;
}

Reply convert(const redisReply* r) { return copy_of(net::convert_reply(r)); }

// ---------------------------------------------------------------------------------------------
// Files and processes

std::string read_from(const std::string& path, size_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

size_t file_size(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<size_t>(size);
}

std::string last_lines(const std::string& text, size_t lines) {
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (size_t found = 0; pos > 0; --pos) {
    if (text[pos - 1] == '\n' && ++found == lines) break;
  }
  return text.substr(pos);
}

// 'R', 'S', 'T' (stopped), 'Z', ... from /proc/<pid>/stat; '?' if unreadable.
char process_state(pid_t pid) {
  const std::string stat = read_from("/proc/" + std::to_string(pid) + "/stat", 0);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return '?';
  return stat[paren + 2];
}

void ignore_sigpipe_once() {
  // hiredis writes with plain write(): a write to a socket the server already closed would
  // raise SIGPIPE and kill the whole test binary. Only replaces the default disposition.
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

// Binds a loopback TCP socket to port 0 and keeps it open until release(), so that several
// picks in a row get distinct ports.
class PortReservation {
 public:
  PortReservation() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      const std::string error = std::strerror(errno);
      close(fd_);
      throw std::runtime_error("reserving a free loopback port: " + error);
    }
    port_ = ntohs(addr.sin_port);
  }
  ~PortReservation() { release(); }
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;

  std::uint16_t port() const { return port_; }
  void release() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// ---------------------------------------------------------------------------------------------
// TLS material, generated once per process with the openssl CLI.

struct TlsFiles {
  std::string ca_cert, ca_key, server_cert, server_key, client_cert, client_key;
};

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult result = run_process(argv, 60s);
  if (result.exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw std::runtime_error(
        "TLS fixture: `" + cmd + "` failed (exit " + std::to_string(result.exit_code) +
        (result.timed_out ? ", timed out" : "") + "):\n" + last_lines(result.output, 20));
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("TLS fixture: cannot write " + path);
}

TlsFiles generate_tls_files() {
  const std::string dir = process_temp_dir() + "/tls";
  std::filesystem::create_directories(dir);
  TlsFiles f{dir + "/ca.crt",     dir + "/ca.key",     dir + "/server.crt",
             dir + "/server.key", dir + "/client.crt", dir + "/client.key"};
  openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f.ca_key, "-out", f.ca_cert,
           "-days", "2", "-subj", "/CN=redisync-test-ca", "-addext",
           "basicConstraints=critical,CA:TRUE", "-addext",
           "keyUsage=critical,keyCertSign,cRLSign"});

  auto leaf = [&](const std::string& name, const std::string& cn, const std::string& ext,
                  const std::string& cert, const std::string& key, const std::string& serial) {
    const std::string csr = dir + "/" + name + ".csr";
    const std::string ext_file = dir + "/" + name + ".ext";
    write_file(ext_file,
               "basicConstraints=CA:FALSE\n"
               "keyUsage=critical,digitalSignature,keyEncipherment\n" +
                   ext);
    openssl({"req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj",
             "/CN=" + cn});
    openssl({"x509", "-req", "-in", csr, "-CA", f.ca_cert, "-CAkey", f.ca_key, "-set_serial",
             serial, "-days", "2", "-out", cert, "-extfile", ext_file});
  };
  leaf("server", "127.0.0.1",
       "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n", f.server_cert,
       f.server_key, "2");
  leaf("client", "redisync-test-client", "extendedKeyUsage=clientAuth\n", f.client_cert,
       f.client_key, "3");
  return f;
}

const TlsFiles& tls_files() {
  // A throwing initializer leaves the static uninitialized, so a later call retries.
  static const TlsFiles files = generate_tls_files();
  return files;
}

std::string percent_encode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// Runs one command on a raw context; nullptr + *error on I/O failure.
redisReply* raw_command(redisContext* ctx, const std::vector<std::string>& args,
                        std::string* error) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  void* reply = redisCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data());
  const int saved_errno = errno;  // callers tell a timeout (EAGAIN) from other I/O errors
  if (reply == nullptr && error != nullptr) *error = ctx->errstr;
  errno = saved_errno;
  return static_cast<redisReply*>(reply);
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Reply

std::string Reply::as_string() const {
  if (kind != Kind::string && kind != Kind::status) {
    throw std::runtime_error("expected a string reply, got " + debug_string());
  }
  return str;
}

long long Reply::as_integer() const {
  if (kind != Kind::integer) {
    throw std::runtime_error("expected an integer reply, got " + debug_string());
  }
  return integer;
}

std::string Reply::debug_string() const {
  switch (kind) {
    case Kind::nil:
      return "(nil)";
    case Kind::string:
      return "\"" + str + "\"";
    case Kind::status:
      return str;
    case Kind::error:
      return "(error) " + str;
    case Kind::integer:
      return "(integer) " + std::to_string(integer);
    case Kind::array: {
      std::string out = "[";
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i > 0) out += ", ";
        out += elements[i].debug_string();
      }
      return out + "]";
    }
  }
  return "?";
}

void PrintTo(const Reply& reply, std::ostream* os) { *os << reply.debug_string(); }

// -----------------------------------------------------------------------------------------------
// RedisServer

RedisServer::RedisServer(ServerOptions opts) : opts_(std::move(opts)) {
  ignore_sigpipe_once();
  dir_ = detail::make_temp_dir("redisync-redis");
  try {
    if (opts_.tls) tls_files();
    for (int attempt = 1;; ++attempt) {
      pick_ports();
      if (start_once() == StartResult::ok) return;
      if (attempt == kStartAttempts) {
        throw std::runtime_error(failure_text(
            "redis-server: ports were taken on all " + std::to_string(kStartAttempts) + " attempts",
            0, 0));
      }
    }
  } catch (...) {
    cleanup();
    throw;
  }
}

RedisServer::~RedisServer() { cleanup(); }

void RedisServer::cleanup() noexcept {
  drop_admin();
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    detail::reap_within(pid_, kReapTimeout, &status);
    pid_ = -1;
  }
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

void RedisServer::pick_ports() {
  PortReservation plain;
  if (opts_.tls) {
    PortReservation tls;
    tls_port_ = tls.port();
  }
  port_ = plain.port();
}

std::vector<std::string> RedisServer::server_args() const {
  const char* binary = std::getenv("REDISYNC_TEST_REDIS_SERVER");
  if (!opts_.sentinel_config.empty()) {
    // Sentinel rewrites its config file: write it once, keep it across restarts.
    const std::string conf = dir_ + "/sentinel.conf";
    if (access(conf.c_str(), F_OK) != 0) {
      std::ofstream out(conf);
      out << opts_.sentinel_config << "\n";
    }
    std::vector<std::string> args{binary != nullptr && *binary != '\0' ? binary : "redis-server",
                                  conf, "--sentinel", "--port", std::to_string(port_),
                                  "--bind", "127.0.0.1", "--dir", dir_,
                                  "--logfile", dir_ + "/redis.log", "--daemonize", "no",
                                  "--protected-mode", "no"};
    args.insert(args.end(), opts_.extra_args.begin(), opts_.extra_args.end());
    return args;
  }
  // clang-format off
  std::vector<std::string> args{binary != nullptr && *binary != '\0' ? binary : "redis-server",
                                "--port", std::to_string(port_),
                                "--bind", "127.0.0.1",
                                "--dir", dir_,
                                "--logfile", dir_ + "/redis.log",
                                "--daemonize", "no",
                                "--protected-mode", "no",
                                "--save", "",
                                // The 7.0 default (5 s) would delay every replica's first sync.
                                "--repl-diskless-sync-delay", "0"};
  // clang-format on
  if (opts_.persistence) {
    args.insert(args.end(), {"--appendonly", "yes", "--appendfsync", "always"});
  } else {
    args.insert(args.end(), {"--appendonly", "no"});
  }
  if (!opts_.password.empty()) args.insert(args.end(), {"--requirepass", opts_.password});
  if (!opts_.acl_user.empty()) {
    // redis joins the words after --user into one config line, quoting each argv element.
    args.insert(args.end(), {"--user", opts_.acl_user, "on",
                             opts_.acl_password.empty() ? "nopass" : ">" + opts_.acl_password, "~*",
                             "&*", "+@all"});
  }
  if (opts_.tls) {
    const TlsFiles& tls = tls_files();
    args.insert(args.end(), {"--tls-port", std::to_string(tls_port_), "--tls-cert-file",
                             tls.server_cert, "--tls-key-file", tls.server_key,
                             "--tls-ca-cert-file", tls.ca_cert, "--tls-auth-clients", "optional"});
  }
  if (opts_.unix_socket) {
    args.insert(args.end(), {"--unixsocket", unix_socket_path(), "--unixsocketperm", "700"});
  }
  args.insert(args.end(), opts_.extra_args.begin(), opts_.extra_args.end());
  return args;
}

RedisServer::StartResult RedisServer::start_once() {
  const std::string log_path = dir_ + "/redis.log";
  const std::string out_path = dir_ + "/redis.stdout";
  const size_t log_offset = file_size(log_path);
  const size_t out_offset = file_size(out_path);

  // Errors before the log file is opened (bad config) go to stderr: keep them.
  const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) throw std::runtime_error("open " + out_path + ": " + std::strerror(errno));
  try {
    pid_ = detail::spawn_process(server_args(), out_fd);
  } catch (...) {
    close(out_fd);
    throw;
  }
  close(out_fd);

  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  std::string last_error = "no attempt yet";
  for (;;) {
    int status = 0;
    if (detail::try_reap(pid_, &status)) {
      pid_ = -1;
      const std::string fresh = read_from(log_path, log_offset) + read_from(out_path, out_offset);
      if (fresh.find("Address already in use") != std::string::npos ||
          fresh.find("Failed listening on port") != std::string::npos) {
        return StartResult::port_taken;
      }
      const std::string how = WIFEXITED(status)
                                  ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                  : "was killed by signal " + std::to_string(WTERMSIG(status));
      throw std::runtime_error(
          failure_text("redis-server " + how + " during startup", log_offset, out_offset));
    }

    // Ready = authenticated PING answers PONG *and* the answering process is ours (a server
    // started concurrently by another test process could own the port if ours failed to bind).
    redisContext* ctx = connect_admin(200ms, &last_error);
    if (ctx != nullptr) {
      redisReply* info = raw_command(ctx, {"INFO", "server"}, &last_error);
      const std::string expected = "process_id:" + std::to_string(pid_) + "\r\n";
      const bool ours = info != nullptr && info->type == REDIS_REPLY_STRING &&
                        std::string(info->str, info->len).find(expected) != std::string::npos;
      if (info != nullptr && !ours) {
        last_error = info->type == REDIS_REPLY_STRING ? "another process answers on the port"
                                                      : std::string(info->str, info->len);
      }
      if (info != nullptr) freeReplyObject(info);
      if (ours) {
        const timeval tv = to_timeval(command_timeout_);
        redisSetTimeout(ctx, tv);
        std::lock_guard lock(admin_mutex_);
        if (admin_ != nullptr) redisFree(admin_);
        admin_ = ctx;
        return StartResult::ok;
      }
      redisFree(ctx);
    }

    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      detail::reap_within(pid_, kReapTimeout, &status);
      pid_ = -1;
      throw std::runtime_error(
          failure_text("redis-server on port " + std::to_string(port_) +
                           " did not answer PING within 10 s (last error: " + last_error + ")",
                       log_offset, out_offset));
    }
    std::this_thread::sleep_for(10ms);
  }
}

std::string RedisServer::failure_text(const std::string& what, size_t log_offset,
                                      size_t out_offset) const {
  std::string text = what + "\n  dir: " + dir_ + "\n--- redis.log (tail) ---\n" +
                     last_lines(read_from(dir_ + "/redis.log", log_offset), 30);
  const std::string out = read_from(dir_ + "/redis.stdout", out_offset);
  if (!out.empty()) text += "\n--- redis-server stdout/stderr ---\n" + last_lines(out, 30);
  return text;
}

redisContext* RedisServer::connect_admin(std::chrono::milliseconds connect_timeout,
                                         std::string* error) const {
  const timeval tv = to_timeval(connect_timeout);
  redisContext* ctx = redisConnectWithTimeout(host().c_str(), port_, tv);
  if (ctx == nullptr) {
    *error = "out of memory";
    return nullptr;
  }
  if (ctx->err != 0) {
    *error = ctx->errstr;
    redisFree(ctx);
    return nullptr;
  }
  redisSetTimeout(ctx, tv);
  std::vector<std::vector<std::string>> handshake;
  if (!opts_.password.empty()) handshake.push_back({"AUTH", opts_.password});
  handshake.push_back({"PING"});
  for (const auto& cmd : handshake) {
    redisReply* reply = raw_command(ctx, cmd, error);
    const bool ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS;
    if (reply != nullptr && !ok) *error = cmd[0] + ": " + convert(reply).debug_string();
    if (reply != nullptr) freeReplyObject(reply);
    if (!ok) {
      redisFree(ctx);
      return nullptr;
    }
  }
  return ctx;
}

void RedisServer::drop_admin() {
  std::lock_guard lock(admin_mutex_);
  if (admin_ != nullptr) redisFree(admin_);
  admin_ = nullptr;
}

std::string RedisServer::unix_socket_path() const {
  return opts_.unix_socket ? dir_ + "/redis.sock" : std::string();
}

std::string RedisServer::auth_prefix() const {
  if (!opts_.acl_user.empty()) {
    return percent_encode(opts_.acl_user) + ":" + percent_encode(opts_.acl_password) + "@";
  }
  if (!opts_.password.empty()) return ":" + percent_encode(opts_.password) + "@";
  return {};
}

std::string RedisServer::url() const {
  return "redis://" + auth_prefix() + host() + ":" + std::to_string(port_);
}

std::string RedisServer::add_user(const std::string& user, const std::vector<std::string>& rules,
                                  std::uint16_t port) {
  std::vector<std::string> cmd{"ACL", "SETUSER", user, "reset", "on", ">pw"};
  cmd.insert(cmd.end(), rules.begin(), rules.end());
  const Reply reply = command(cmd);
  if (reply.is_error() || reply.as_string() != "OK") {
    throw std::runtime_error("ACL SETUSER " + user + ": " + reply.debug_string());
  }
  return "redis://" + user + ":pw@" + host() + ":" + std::to_string(port ? port : port_);
}

std::string RedisServer::tls_url() const {
  if (!opts_.tls) throw std::logic_error("tls_url(): server started without ServerOptions::tls");
  const TlsFiles& tls = tls_files();
  return "rediss://" + auth_prefix() + host() + ":" + std::to_string(tls_port_) +
         "?ca_file=" + tls.ca_cert + "&cert_file=" + tls.client_cert +
         "&key_file=" + tls.client_key;
}

std::string RedisServer::unix_url() const {
  if (!opts_.unix_socket) {
    throw std::logic_error("unix_url(): server started without ServerOptions::unix_socket");
  }
  std::string url = "unix://" + unix_socket_path();
  std::string query;
  if (!opts_.acl_user.empty()) {
    query = "user=" + percent_encode(opts_.acl_user) +
            "&password=" + percent_encode(opts_.acl_password);
  } else if (!opts_.password.empty()) {
    query = "password=" + percent_encode(opts_.password);
  }
  return query.empty() ? url : url + "?" + query;
}

std::string RedisServer::ca_file() const { return opts_.tls ? tls_files().ca_cert : ""; }
std::string RedisServer::client_cert_file() const {
  return opts_.tls ? tls_files().client_cert : "";
}
std::string RedisServer::client_key_file() const { return opts_.tls ? tls_files().client_key : ""; }

bool RedisServer::running() const {
  if (pid_ <= 0) return false;
  int status = 0;
  if (detail::try_reap(pid_, &status)) pid_ = -1;
  return pid_ > 0;
}

pid_t RedisServer::pid() const { return running() ? pid_ : -1; }

void RedisServer::kill() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    detail::reap_within(pid_, kReapTimeout, &status);
    pid_ = -1;
  }
  drop_admin();
}

void RedisServer::pause() {
  if (!running()) throw std::runtime_error("pause(): redis-server is not running");
  ::kill(pid_, SIGSTOP);
  // SIGSTOP is asynchronous; wait until the kernel reports the process stopped so the caller
  // can rely on the server not answering any more.
  if (!wait_until([&] { return process_state(pid_) == 'T'; }, 2000ms, 1ms)) {
    throw std::runtime_error("pause(): redis-server did not stop within 2 s");
  }
}

void RedisServer::resume() {
  if (running()) ::kill(pid_, SIGCONT);
}

void RedisServer::stop() {
  if (running()) {
    ::kill(pid_, SIGTERM);
    ::kill(pid_, SIGCONT);  // a paused server would otherwise never act on SIGTERM
    int status = 0;
    if (!detail::reap_within(pid_, kStopGrace, &status)) {
      ::kill(pid_, SIGKILL);
      detail::reap_within(pid_, kReapTimeout, &status);
    }
    pid_ = -1;
  }
  drop_admin();
}

void RedisServer::restart() {
  if (running()) kill();
  drop_admin();
  const auto deadline = std::chrono::steady_clock::now() + kRestartTimeout;
  while (start_once() == StartResult::port_taken) {
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error(failure_text(
          "restart(): port " + std::to_string(port_) + " still taken after 10 s", 0, 0));
    }
    std::this_thread::sleep_for(100ms);
  }
}

Reply RedisServer::command(std::initializer_list<std::string> args) {
  return command(std::vector<std::string>(args));
}

Reply RedisServer::command(const std::vector<std::string>& args) {
  if (args.empty()) throw std::invalid_argument("command(): no arguments");
  std::lock_guard lock(admin_mutex_);
  for (int attempt = 0;; ++attempt) {
    const bool fresh = admin_ == nullptr;
    std::string error;
    if (fresh) {
      admin_ = connect_admin(command_timeout_, &error);
      if (admin_ == nullptr) {
        throw std::runtime_error("RedisServer::command(" + args[0] + "): cannot connect to " +
                                 host() + ":" + std::to_string(port_) + ": " + error);
      }
      const timeval tv = to_timeval(command_timeout_);
      redisSetTimeout(admin_, tv);
    }
    redisReply* reply = raw_command(admin_, args, &error);
    const int saved_errno = errno;
    if (reply != nullptr) {
      Reply out = convert(reply);
      freeReplyObject(reply);
      return out;
    }
    const int err = admin_->err;
    redisFree(admin_);
    admin_ = nullptr;
    // errno is only meaningful for an I/O error; EOF (server closed it) is not a timeout.
    const bool timed_out =
        err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK);
    // A reused connection may have been closed by the server meanwhile (CLIENT KILL, SHUTDOWN,
    // restart from outside): the command never got there, so one retry on a fresh connection
    // is safe. A timeout is not retried: the command may be running.
    if (!fresh && attempt == 0 && !timed_out && (err == REDIS_ERR_EOF || err == REDIS_ERR_IO)) {
      continue;
    }
    throw std::runtime_error(
        "RedisServer::command(" + args[0] + ") on port " + std::to_string(port_) + ": " +
        (timed_out ? "timed out after " + std::to_string(command_timeout_.count()) + " ms"
                   : error));
  }
}

void RedisServer::set_command_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard lock(admin_mutex_);
  command_timeout_ = timeout;
  if (admin_ != nullptr) redisSetTimeout(admin_, to_timeval(timeout));
}

std::string RedisServer::log_tail(size_t lines) const {
  const std::string path = dir_ + "/redis.log";
  const size_t size = file_size(path);
  constexpr size_t kWindow = 256 * 1024;  // enough for any sane tail; avoids reading huge logs
  return last_lines(read_from(path, size > kWindow ? size - kWindow : 0), lines);
}

}  // namespace redisync::test
