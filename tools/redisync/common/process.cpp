// SPDX-License-Identifier: Apache-2.0
#include "process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "cli_error.h"

extern char** environ;

namespace redisync::cli {
namespace {

// write(2) of a whole buffer; async-signal-safe.
void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void write_str(int fd, const char* text) { write_all(fd, text, std::strlen(text)); }

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

pid_t spawn_process(const std::string& path, const std::vector<std::string>& argv,
                    const SpawnOptions& options) {
  // Everything the child needs is prepared here: after fork only async-signal-safe calls.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  sigset_t mask;
  if (options.signal_mask) {
    mask = *options.signal_mask;
  } else {
    sigemptyset(&mask);
  }
  const std::string error_prefix = options.exec_error_prefix.empty()
                                       ? "redisync: cannot execute " + path + ": "
                                       : options.exec_error_prefix;
  const pid_t parent = ::getpid();
  // The environment: ours, minus the names extra_env sets, plus extra_env.
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(
        options.extra_env.begin(), options.extra_env.end(), [&](const std::string& extra) {
          const auto eq = extra.find('=');
          return entry.substr(0, eq + 1) == std::string_view(extra).substr(0, eq + 1);
        });
    if (!replaced) env.push_back(*e);
  }
  for (const auto& extra : options.extra_env) env.push_back(const_cast<char*>(extra.c_str()));
  env.push_back(nullptr);
  const pid_t group = options.process_group;

  const pid_t pid = ::fork();
  if (pid < 0) {
    throw CliError(kExitOsError, "fork failed: " + std::string(std::strerror(errno)));
  }
  if (pid > 0) {
    if (group > 0) ::setpgid(pid, group);
    return pid;
  }

  // --- child ---
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before prctl took effect; then nobody would kill us.
  if (::getppid() != parent) ::_exit(kExitFailure);
  if (group > 0 && ::setpgid(0, group) != 0) {
    write_str(2, error_prefix.c_str());
    write_str(2, "cannot join the process group\n");
    ::_exit(kExitCannotExecute);
  }
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  if (options.stdin_fd >= 0) ::dup2(options.stdin_fd, 0);
  if (options.stdout_fd >= 0) ::dup2(options.stdout_fd, 1);
  if (options.stderr_fd >= 0) ::dup2(options.stderr_fd, 2);
  for (int fd : options.close_fds) {
    if (fd > 2) ::close(fd);
  }
  for (int fd : {options.stdin_fd, options.stdout_fd, options.stderr_fd}) {
    if (fd > 2) ::close(fd);
  }
  ::execve(path.c_str(), args.data(), env.data());
  const int err = errno;
  write_str(2, error_prefix.c_str());
  write_str(2, err == ENOENT    ? "no such file or directory\n"
               : err == EACCES  ? "permission denied\n"
               : err == ENOEXEC ? "not an executable format\n"
                                : "exec failed\n");
  ::_exit(err == ENOENT ? kExitNotFound : kExitCannotExecute);
}

std::string find_executable(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return name;  // exec reports what is wrong with it
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = path.find(':', start);
    std::string dir =
        path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    if (end == std::string::npos) return {};
    start = end + 1;
  }
}

std::vector<int> open_fds() {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    if (fd > 2 && fd != own) fds.push_back(static_cast<int>(fd));
  }
  ::closedir(dir);
  std::sort(fds.begin(), fds.end());
  return fds;
}

std::vector<int> fds_opened_since(const std::vector<int>& before, const std::vector<int>& now) {
  std::vector<int> out;
  for (int fd : now) {
    if (std::find(before.begin(), before.end(), fd) == before.end()) out.push_back(fd);
  }
  return out;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitFailure;
}

bool try_reap(pid_t pid, int* status) {
  for (;;) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
}

bool reap_within(pid_t pid, std::chrono::milliseconds limit, int* status) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (try_reap(pid, status)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void kill_and_reap(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string signal_name(int signo) {
  switch (signo) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGKILL:
      return "SIGKILL";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGCHLD:
      return "SIGCHLD";
    default:
      return "signal " + std::to_string(signo);
  }
}

}  // namespace redisync::cli
