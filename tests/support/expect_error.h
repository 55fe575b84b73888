// SPDX-License-Identifier: Apache-2.0
// Checks that a call throws a given exception type whose message names what went wrong, and
// names what an async completion's error was.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <initializer_list>
#include <string>

#include "redisync/errors.h"

namespace redisync::test {

/// Runs `f` and checks it throws E whose message contains every one of `parts`.
template <class E, class F>
void expect_error(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& p : parts) EXPECT_NE(what.find(p), std::string::npos) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
  }
}

/// What an async completion's error was: "" (none), "cancelled" (CancelledError), or
/// "other: " and another error's text.
inline std::string errc_of(std::exception_ptr e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const CancelledError&) {
    return "cancelled";
  } catch (const std::exception& x) {
    return std::string("other: ") + x.what();
  }
}

/// Whether an async completion's error is an E.
template <class E>
bool is_error(std::exception_ptr e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

/// What an async call completed with: whether its handler ran, whether it acquired (or
/// opened, or got its permits), and errc_of() its error.
struct AsyncOutcome {
  bool called = false;
  bool acquired = false;
  std::string error;
};

}  // namespace redisync::test
