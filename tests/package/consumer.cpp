// SPDX-License-Identifier: Apache-2.0
// A program built against redisync as a user's would be (tests/scripts/package_test.sh): with
// find_package(redisync), with plain `pkg-config`, and with FetchContent, against the static
// and the shared library. Takes a lock on the server at argv[1] and prints the C++ standard it
// was compiled with (the package must not lower a consumer's standard).
//
// It also uses what the shared library must export beyond plain calls (its symbols are
// otherwise hidden): it catches exceptions the library throws by their types, derives from
// the Metrics interface, and has an async handler's exception reach the hook, which needs one
// copy of Asio's per-thread state on both sides.
#include <redisync/metrics.h>
#include <redisync/redisync.h>

// The library is compiled with these; a consumer must be too (see src/CMakeLists.txt).
#if !defined(ASIO_NO_DEPRECATED) || !defined(ASIO_DISABLE_STD_ALIGNED_ALLOC)
#error "the package does not carry the library's ASIO_* definitions"
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include <asio/use_future.hpp>

namespace {

// A sink deriving from the library's interface: the library calls it through its vtable.
class CountingMetrics final : public redisync::Metrics {
 public:
  void increment(const redisync::MetricLabels&, redisync::Counter,
                 std::uint64_t n) noexcept override {
    events += n;
  }
  void observe(const redisync::MetricLabels&, redisync::Histogram, double) noexcept override {
    ++events;
  }
  std::atomic<std::uint64_t> events{0};
};

int fail(const std::string& what) {
  std::cerr << "consumer: " << what << "\n";
  return 1;
}

// An exception the library throws from its own code, caught here by its type and its code
// (the category is compared by address).
bool catches_config_error() {
  try {
    (void)redisync::Config::from_url("nosuch://127.0.0.1:1");
  } catch (const redisync::ConfigError& e) {
    return e.code() == redisync::errc::invalid_config &&
           &e.code().category() == &redisync::error_category();
  } catch (...) {
    return false;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer redis://host:port\n";
    return 2;
  }
  try {
    if (!catches_config_error()) return fail("a ConfigError thrown by the library was not caught");

    auto config = redisync::Config::from_url(argv[1]);
    auto metrics = std::make_shared<CountingMetrics>();
    config.metrics = metrics;
    redisync::Client client(config);
    auto lock = client.lock("package:consumer");
    lock.lock();
    const bool held = lock.is_held_by_current_thread();
    lock.unlock();
    if (!held) return fail("the lock was not held");
    if (metrics->events == 0) return fail("the Metrics sink was never called");

    // Released already: the library reports it by throwing NotOwnerError, caught by its base.
    try {
      lock.unlock_checked();
      return fail("unlock_checked() of a lock not held did not throw");
    } catch (const redisync::Error& e) {
      if (dynamic_cast<const redisync::NotOwnerError*>(&e) == nullptr ||
          e.code() != redisync::errc::not_owner) {
        return fail(std::string("expected NotOwnerError, got: ") + e.what());
      }
    }

    // A handler that throws on the library's I/O thread: caught there and given to the hook.
    auto hooked = std::make_shared<std::promise<std::string>>();
    redisync::set_async_handler_exception_hook([hooked](std::exception_ptr error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        hooked->set_value(e.what());
      }
    });
    const auto owner = client.new_owner_id();
    lock.async_lock(owner, [](std::exception_ptr) { throw std::runtime_error("from a handler"); });
    auto reached = hooked->get_future();
    if (reached.wait_for(std::chrono::seconds(10)) != std::future_status::ready ||
        reached.get() != "from a handler") {
      return fail("an async handler's exception did not reach the hook");
    }
    lock.async_unlock(owner, asio::use_future).get();

    std::cout << "consumer: C++ " << __cplusplus << ", lock taken and released on "
              << client.config().describe() << "\n";
    return 0;
  } catch (const redisync::Error& e) {
    return fail(e.what());
  }
}
