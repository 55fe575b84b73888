// SPDX-License-Identifier: Apache-2.0
#include "support/test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>

namespace redisync::test {
namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// Runs fork() requests on one thread that lives as long as the process. PR_SET_PDEATHSIG fires
// when the thread that forked exits, so forking from a short-lived test thread would kill the
// server as soon as that thread ended.
class Spawner {
 public:
  static Spawner& instance() {
    // Leaked on purpose: the thread keeps using it until the process ends.
    static Spawner* spawner = new Spawner();
    return *spawner;
  }

  pid_t run(std::function<pid_t()> fork_fn) {
    std::packaged_task<pid_t()> task(std::move(fork_fn));
    auto result = task.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  Spawner() {
    std::thread([this] { loop(); }).detach();
  }

  void loop() {
    for (;;) {
      std::packaged_task<pid_t()> task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<pid_t()>> queue_;
};

// Only async-signal-safe calls between fork and exec: the parent is multi-threaded.
[[noreturn]] void exec_child(char* const* argv, int devnull, int out_fd, pid_t parent) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, nullptr);  // SIG_IGN would survive exec
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // parent already gone before prctl took effect
  dup2(devnull, STDIN_FILENO);
  dup2(out_fd >= 0 ? out_fd : devnull, STDOUT_FILENO);
  dup2(out_fd >= 0 ? out_fd : devnull, STDERR_FILENO);
  // Do not leak the test's sockets into the child: a held duplicate would keep a connection
  // open after the test closed it.
  if (close_range(3, ~0U, 0) != 0) {
    struct rlimit limit {};
    int max_fd = 65536;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      max_fd = static_cast<int>(limit.rlim_cur);
    }
    for (int fd = 3; fd < max_fd; ++fd) close(fd);
  }
  execvp(argv[0], argv);
  _exit(127);
}

struct ProcessTempDir {
  std::string path;
  pid_t owner;
  ProcessTempDir() : path(detail::make_temp_dir("redisync-test")), owner(getpid()) {}
  ~ProcessTempDir() {
    if (getpid() != owner) return;  // a forked child exiting must not delete our files
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

std::string unique_name(const std::string& prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   (static_cast<std::uint64_t>(getpid()) << 32)};
  static const char kHex[] = "0123456789abcdef";
  std::uint64_t bits = rng();
  std::string out = prefix;
  for (int i = 0; i < 16; ++i, bits >>= 4) out.push_back(kHex[bits & 0xf]);
  return out;
}

std::string process_temp_dir() {
  static ProcessTempDir dir;
  return dir.path;
}

std::string temp_file(const std::string& stem) {
  static std::atomic<unsigned> counter{0};
  return process_temp_dir() + "/" + std::to_string(++counter) + "-" + stem;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(errno_text("pipe2"));
  pid_t pid = -1;
  try {
    pid = detail::spawn_process(argv, fds[1]);
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
  }
  close(fds[1]);

  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // timeout is handled at the top
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child (and anything it spawned) closed its output
    result.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);

  int status = 0;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (result.timed_out ||
      !detail::reap_within(pid, std::max(left, std::chrono::milliseconds(0)), &status)) {
    result.timed_out = true;
    ::kill(pid, SIGKILL);
    detail::reap_within(pid, std::chrono::seconds(5), &status);
    result.exit_code = 128 + SIGKILL;
    return result;
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

namespace detail {

pid_t spawn_process(const std::vector<std::string>& argv, int out_fd) {
  if (argv.empty()) throw std::invalid_argument("spawn_process: empty argv");
  // Everything the child needs is prepared before fork: no allocation in the child.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& arg : args) cargv.push_back(arg.data());
  cargv.push_back(nullptr);
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) throw std::runtime_error(errno_text("open /dev/null"));
  const pid_t parent = getpid();
  // errno is per thread and fork runs on the spawner thread: it returns -errno on failure.
  const pid_t pid = Spawner::instance().run([&]() -> pid_t {
    const pid_t child = fork();
    if (child == 0) exec_child(cargv.data(), devnull, out_fd, parent);
    return child < 0 ? -errno : child;
  });
  close(devnull);
  if (pid < 0) {
    errno = -pid;
    throw std::runtime_error(errno_text("fork " + argv[0]));
  }
  return pid;
}

pid_t spawn_to_temp_file(const std::vector<std::string>& argv, const std::string& stem,
                         std::string* output_path) {
  *output_path = temp_file(stem);
  const int fd = ::open(output_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(errno_text("open " + *output_path));
  pid_t pid = -1;
  try {
    pid = spawn_process(argv, fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return pid;
}

std::string make_temp_dir(const std::string& stem) {
  std::string tmpl = "/tmp/" + stem + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error(errno_text("mkdtemp " + tmpl));
  return tmpl;
}

bool try_reap(pid_t pid, int* status) {
  for (;;) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno == EINTR) continue;
    // r < 0 with ECHILD: not our child any more (already reaped elsewhere); treat as gone.
    if (r < 0) {
      *status = 0;
      return true;
    }
    return false;
  }
}

bool reap_within(pid_t pid, std::chrono::milliseconds limit, int* status) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto step = std::chrono::microseconds(200);
  for (;;) {
    if (try_reap(pid, status)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
    step = std::min(step * 2, std::chrono::microseconds(20000));
  }
}

}  // namespace detail
LoopbackListener listen_on_loopback() {
  LoopbackListener l;
  l.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (l.fd < 0 || ::bind(l.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(l.fd, 16) != 0 ||
      ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (l.fd >= 0) ::close(l.fd);
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  l.port = ntohs(addr.sin_port);
  return l;
}

}  // namespace redisync::test
