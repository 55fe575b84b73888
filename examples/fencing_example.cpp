// SPDX-License-Identifier: Apache-2.0
// Fencing tokens with redisync::FencedLock (see docs/fencing.md).
//
// Two workers update one record of a storage service. Worker A takes the lock with a short
// lease, then "pauses" (think: a long GC or a stopped VM) past it. Worker B takes the lock
// meanwhile and writes. When A wakes up it still believes it holds the lock and writes too:
// the storage refuses A's write because A's token is older than one it has already seen.
//
//   example_fencing [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

using namespace std::chrono_literals;

namespace {

// The protected resource. It must check tokens itself: the lock service cannot stop a paused
// process from sending a request late. Here an in-memory store; a database would do the
// same in one statement, e.g.
//   UPDATE records SET value = ?, fence = ? WHERE id = ? AND fence <= ?
class Storage {
 public:
  /// Writes `value` under `key` if `token` is not older than the newest token seen for it.
  bool write(const std::string& key, const std::string& value, std::uint64_t token) {
    std::lock_guard guard(mutex_);
    auto& record = records_[key];
    if (token < record.fence) return false;  // a newer holder has written: stale request
    record.fence = token;
    record.value = value;
    return true;
  }
  std::string read(const std::string& key) {
    std::lock_guard guard(mutex_);
    return records_[key].value;
  }

 private:
  struct Record {
    std::uint64_t fence = 0;
    std::string value;
  };
  std::mutex mutex_;
  std::map<std::string, Record> records_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  try {
    Storage storage;
    redisync::Client client_a(url);
    redisync::Client client_b(url);
    const std::string name = "example:ledger";

    // Worker A: a 500 ms lease (no watchdog), then a pause longer than that.
    auto lock_a = client_a.fenced_lock(name);
    const std::uint64_t token_a = lock_a.lock_and_get_token(500ms);
    std::cout << "A holds the lock with token " << token_a << "\n";
    std::cout << "A writes: "
              << (storage.write("balance", "100 (by A)", token_a) ? "ok" : "refused") << "\n";
    std::this_thread::sleep_for(800ms);  // A is paused; its lease runs out

    // Worker B: gets the lock once A's lease has ended, with a higher token.
    auto lock_b = client_b.fenced_lock(name);
    const auto token_b = lock_b.try_lock_and_get_token_for(5s);
    if (!token_b) {
      std::cerr << "B could not get the lock\n";
      return 1;
    }
    std::cout << "B holds the lock with token " << *token_b << "\n";
    std::cout << "B writes: "
              << (storage.write("balance", "250 (by B)", *token_b) ? "ok" : "refused") << "\n";

    // A wakes up and, unaware, writes with its old token: refused.
    std::cout << "A (stale) writes: "
              << (storage.write("balance", "90 (by A)", token_a) ? "ok" : "refused") << "\n";
    std::cout << "balance = " << storage.read("balance") << "\n";

    lock_b.unlock();
    try {
      lock_a.unlock_checked();
    } catch (const redisync::LockLostError& e) {
      std::cout << "A learns it had lost the lock: " << e.what() << "\n";
    }
    return 0;
  } catch (const redisync::Error& e) {
    std::cerr << "example_fencing: " << e.what() << "\n";
    return 1;
  }
}
