// SPDX-License-Identifier: Apache-2.0
// A program built against an installed redisync, as a user's would be (tests/package): with
// find_package(redisync) and with `pkg-config --static`. Takes a lock on the server at argv[1].
#include <redisync/redisync.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer redis://host:port\n";
    return 2;
  }
  try {
    redisync::Client client(argv[1]);
    auto lock = client.lock("package:consumer");
    lock.lock();
    const bool held = lock.is_held_by_current_thread();
    lock.unlock();
    std::cout << "consumer: lock taken and released on " << client.config().describe() << "\n";
    return held ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return 1;
  }
}
