// SPDX-License-Identifier: Apache-2.0
#include "cli_error.h"

#include <iostream>
#include <string_view>

#include "names.h"
#include "redisync/errors.h"

namespace redisync::cli {
namespace {

// Library messages often start with "redisync: " or "redisync config: "; we add our own prefix.
std::string strip_prefix(std::string_view text) {
  for (std::string_view prefix : {"redisync: ", "redisync "}) {
    if (text.substr(0, prefix.size()) == prefix) return std::string(text.substr(prefix.size()));
  }
  return std::string(text);
}

}  // namespace

void print_diagnostic(const std::string& message) {
  // Messages name locks and quote server replies: no byte of theirs may drive the terminal.
  // Newlines stay (multi-line messages: a multi-lock's members, one a line).
  std::cerr << "redisync: " << printable(message, true) << std::endl;
}

int report_current_exception() noexcept {
  try {
    throw;
  } catch (const CliError& e) {
    print_diagnostic(e.what());
    return e.exit_code();
  } catch (const ConfigError& e) {
    print_diagnostic(strip_prefix(e.what()));
    return kExitUsage;
  } catch (const InvalidArgument& e) {
    print_diagnostic(strip_prefix(e.what()));
    return kExitUsage;
  } catch (const MultiLockError& e) {
    print_diagnostic(strip_prefix(e.what()));
    return multi_lock_exit_code(e.report());
  } catch (const AuthError& e) {  // before ConnectionError, its base: reachable, but refused
    print_diagnostic("Redis refused the credentials: " + strip_prefix(e.what()));
    return kExitAuthFailed;
  } catch (const ConnectionError& e) {
    print_diagnostic("cannot reach Redis: " + strip_prefix(e.what()));
    return kExitUnavailable;
  } catch (const TimeoutError& e) {
    print_diagnostic("Redis did not answer in time: " + strip_prefix(e.what()));
    return kExitUnavailable;
  } catch (const std::exception& e) {
    print_diagnostic(strip_prefix(e.what()));
    return kExitFailure;
  } catch (...) {
    print_diagnostic("unknown error");
    return kExitFailure;
  }
}

int multi_lock_exit_code(const AttemptReport& report) {
  int refused = 0;
  bool unavailable = false;
  for (const auto& m : report.members) {
    refused += m.outcome == MemberOutcome::credentials_refused ? 1 : 0;
    unavailable = unavailable || m.outcome == MemberOutcome::timed_out ||
                  m.outcome == MemberOutcome::unreachable;
  }
  if (refused > 0 && refused == report.failed()) return kExitAuthFailed;
  return unavailable ? kExitUnavailable : kExitFailure;
}

}  // namespace redisync::cli
