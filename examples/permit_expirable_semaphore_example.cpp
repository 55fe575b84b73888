// SPDX-License-Identifier: Apache-2.0
// redisync::PermitExpirableSemaphore: permits carry an id and a lease, so a permit whose
// holder died comes back by itself when its lease ends.
//
//   example_permit_expirable_semaphore [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <chrono>
#include <iostream>
#include <string>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  try {
    // [permit_expirable_semaphore]
    redisync::Client client(url);
    auto workers = client.permit_expirable_semaphore("example:gpu-slots");
    workers.try_set_permits(1);

    // A permit with a 300 ms lease whose holder "crashes": never released.
    const std::string crashed = workers.acquire(300ms);
    std::cout << "crashed holder had permit " << crashed << "\n";

    // The next caller waits; the permit comes back when its lease runs out.
    const std::optional<std::string> permit = workers.try_acquire_for(5s, 10s);
    if (permit) {
      workers.update_lease(*permit, 30s);  // extend while working
      // ... use the slot ...
      workers.release(*permit);            // by id; an unknown id throws UnknownPermitError
    }
    // [end]
    std::cout << (permit ? "got the expired holder's permit\n" : "no permit\n");
    return permit && *permit != crashed && workers.available_permits() == 1 ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_permit_expirable_semaphore: " << e.what() << "\n";
    return 1;
  }
}
