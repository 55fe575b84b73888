// SPDX-License-Identifier: Apache-2.0
#include "sync/client_close.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <openssl/crypto.h>

#include "net/io_thread.h"
#include "sync/client_core.h"

namespace redisync::detail {

namespace {

// The closes running on detached threads (below). Never destroyed: a closer that outlives
// the wait at exit still counts itself out here.
struct DetachedCloses {
  std::mutex mutex;
  std::condition_variable done;
  int running = 0;
};

DetachedCloses& detached_closes() {
  static auto* closes = new DetachedCloses;
  return *closes;
}

// A close takes at most its last writes' bound (1 s) and the I/O thread's join; past this the
// I/O thread is stuck in a user's handler and the process exits without it.
constexpr auto kCloseWaitAtExit = std::chrono::seconds(3);

// Destroyed at exit: lets the detached closes finish first, so a process that drops its Client
// in a handler and then exits still sends that Client's last writes, and its I/O thread ends
// (OpenSSL's per-thread state with it) before OpenSSL's own exit handler runs.
struct WaitForClosesAtExit {
  ~WaitForClosesAtExit() {
    auto& closes = detached_closes();
    std::unique_lock lock(closes.mutex);
    closes.done.wait_for(lock, kCloseWaitAtExit, [&] { return closes.running == 0; });
  }
};

}  // namespace

void close_client_core(std::shared_ptr<ClientCore> core) {
  if (!core) return;
  if (!net::on_io_thread(core->io())) return core->shutdown();
  // OpenSSL is initialised before the waiter exists, so its exit handler (registered then)
  // runs after the waiter's.
  OPENSSL_init_crypto(0, nullptr);
  static WaitForClosesAtExit wait_for_closes_at_exit;
  auto& closes = detached_closes();
  {
    std::lock_guard lock(closes.mutex);
    ++closes.running;
  }
  std::thread([core = std::move(core), &closes]() mutable {
    core->shutdown();
    core.reset();
    // Ending the state may have used OpenSSL on this thread (a TLS connection's free): its
    // per-thread state goes now, not in this thread's exit, which may come after the process's.
    OPENSSL_thread_stop();
    std::lock_guard lock(closes.mutex);
    --closes.running;
    closes.done.notify_all();
  }).detach();
}

}  // namespace redisync::detail
