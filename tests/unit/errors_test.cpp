// SPDX-License-Identifier: Apache-2.0
#include "redisync/errors.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>

namespace redisync {
namespace {

constexpr errc kAllCodes[] = {
    errc::connection_failed,      errc::auth_failed,    errc::timeout,
    errc::server_error,           errc::protocol_error, errc::invalid_config,
    errc::invalid_argument,       errc::not_owner,      errc::lock_lost,
    errc::upgrade_would_deadlock, errc::client_closed,  errc::unknown_permit,
    errc::multi_lock_failed,      errc::not_configured, errc::reentry_refused,
    errc::cancelled,
};

TEST(ErrorCategory, NameIsRedisync) {
  EXPECT_STREQ(error_category().name(), "redisync");
  EXPECT_EQ(&error_category(), &error_category());
}

TEST(ErrorCategory, EveryCodeHasItsOwnMessage) {
  const std::string unknown = error_category().message(0);
  EXPECT_NE(unknown.find("unknown"), std::string::npos);
  std::set<std::string> seen;
  for (errc code : kAllCodes) {
    const std::string text = error_category().message(static_cast<int>(code));
    EXPECT_FALSE(text.empty());
    EXPECT_NE(text, unknown) << static_cast<int>(code);
    EXPECT_TRUE(seen.insert(text).second) << "duplicate message: " << text;
  }
  EXPECT_NE(error_category().message(999).find("999"), std::string::npos);
}

TEST(ErrorCategory, MakeErrorCode) {
  const std::error_code ec = make_error_code(errc::lock_lost);
  EXPECT_EQ(ec.value(), static_cast<int>(errc::lock_lost));
  EXPECT_EQ(&ec.category(), &error_category());
  EXPECT_EQ(ec.message(), error_category().message(static_cast<int>(errc::lock_lost)));
  EXPECT_TRUE(ec);  // no code is 0, so every one converts to "an error"
}

TEST(ErrorCategory, ErrcConvertsImplicitlyToErrorCode) {
  static_assert(std::is_error_code_enum_v<errc>);
  const std::error_code ec = errc::timeout;
  EXPECT_EQ(ec, errc::timeout);
  EXPECT_NE(ec, errc::not_owner);
  EXPECT_NE(ec, std::make_error_code(std::errc::timed_out));
}

template <typename E>
void expect_code(const E& e, errc expected) {
  EXPECT_EQ(e.value(), expected);
  EXPECT_EQ(e.code(), make_error_code(expected));
  EXPECT_EQ(&e.code().category(), &error_category());
  // std::system_error appends the code's message; the caller's text must come first.
  EXPECT_EQ(std::string(e.what()).rfind("ctx", 0), 0u) << e.what();
}

TEST(Exceptions, ReportTheirCode) {
  expect_code(ConnectionError("ctx"), errc::connection_failed);
  expect_code(ConnectionError("ctx", errc::client_closed), errc::client_closed);
  expect_code(AuthError("ctx"), errc::auth_failed);
  expect_code(TimeoutError("ctx"), errc::timeout);
  expect_code(ServerError("ctx", "WRONGTYPE x"), errc::server_error);
  expect_code(ProtocolError("ctx"), errc::protocol_error);
  expect_code(ConfigError("ctx"), errc::invalid_config);
  expect_code(InvalidArgument("ctx"), errc::invalid_argument);
  expect_code(NotOwnerError("ctx"), errc::not_owner);
  expect_code(LockLostError("ctx"), errc::lock_lost);
  expect_code(UpgradeError("ctx"), errc::upgrade_would_deadlock);
  expect_code(ClientClosedError("ctx"), errc::client_closed);
  expect_code(CancelledError("ctx"), errc::cancelled);
  expect_code(Error(errc::unknown_permit, "ctx"), errc::unknown_permit);
}

TEST(Exceptions, ServerErrorKeepsTheReply) {
  const ServerError e("EVALSHA on lock 'a' at 127.0.0.1:6379", "WRONGTYPE Operation against a key");
  EXPECT_EQ(e.reply(), "WRONGTYPE Operation against a key");
}

TEST(Exceptions, CatchableAsErrorAndSystemError) {
  try {
    throw NotOwnerError("lock 'a' is not held by this thread");
  } catch (const Error& e) {
    EXPECT_EQ(e.value(), errc::not_owner);
  }
  try {
    throw LockLostError("lock 'a' expired");
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), errc::lock_lost);
  }
  try {
    throw UpgradeError("x");
  } catch (const std::runtime_error&) {
    SUCCEED();
  }
  try {
    throw ClientClosedError("x");
  } catch (const std::exception&) {
    SUCCEED();
  }
}

TEST(Exceptions, AuthErrorIsAConnectionError) {
  static_assert(std::is_base_of_v<ConnectionError, AuthError>);
  static_assert(std::is_base_of_v<Error, ConnectionError>);
  static_assert(std::is_base_of_v<std::system_error, Error>);
  try {
    throw AuthError("WRONGPASS at 127.0.0.1:6379");
  } catch (const ConnectionError& e) {
    EXPECT_EQ(e.value(), errc::auth_failed);
  }
}

TEST(Exceptions, HierarchyOfTheOthers) {
  static_assert(std::is_base_of_v<Error, TimeoutError>);
  static_assert(std::is_base_of_v<Error, ServerError>);
  static_assert(std::is_base_of_v<Error, ProtocolError>);
  static_assert(std::is_base_of_v<Error, ConfigError>);
  static_assert(std::is_base_of_v<Error, InvalidArgument>);
  static_assert(std::is_base_of_v<Error, NotOwnerError>);
  static_assert(std::is_base_of_v<Error, LockLostError>);
  static_assert(std::is_base_of_v<Error, UpgradeError>);
  static_assert(std::is_base_of_v<Error, ClientClosedError>);
  // Not connection errors: a retry loop catching ConnectionError must not swallow these.
  static_assert(!std::is_base_of_v<ConnectionError, TimeoutError>);
  static_assert(!std::is_base_of_v<ConnectionError, ClientClosedError>);
}

}  // namespace
}  // namespace redisync
