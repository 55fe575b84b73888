// SPDX-License-Identifier: Apache-2.0
// A program built against redisync as a user's would be (tests/scripts/package_test.sh): with
// find_package(redisync), with plain `pkg-config`, and with FetchContent. Takes a lock on the
// server at argv[1] and prints the C++ standard it was compiled with (the package must not
// lower a consumer's standard).
#include <redisync/redisync.h>

// The library is compiled with these; a consumer must be too (see src/CMakeLists.txt).
#if !defined(ASIO_NO_DEPRECATED) || !defined(ASIO_DISABLE_STD_ALIGNED_ALLOC)
#error "the package does not carry the library's ASIO_* definitions"
#endif

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
    std::cout << "consumer: C++ " << __cplusplus << ", lock taken and released on "
              << client.config().describe() << "\n";
    return held ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return 1;
  }
}
