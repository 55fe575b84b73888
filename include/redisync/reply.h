// SPDX-License-Identifier: Apache-2.0
// A Redis reply, as returned by Client::execute() (RESP2 value, owning its data).
#pragma once

#include <string>
#include <vector>

#include "redisync/export.h"

namespace redisync {

/// One RESP2 reply. Error replies are values of kind `error` here; Client::execute() turns
/// them into ServerError, so callers of the public API normally never see that kind.
struct REDISYNC_API Reply {
  enum class Kind { nil, string, status, error, integer, array };
  Kind kind = Kind::nil;
  std::string str;              ///< string, status and error replies
  long long integer = 0;        ///< integer replies
  std::vector<Reply> elements;  ///< array replies

  bool is_nil() const { return kind == Kind::nil; }
  bool is_error() const { return kind == Kind::error; }
  bool is_integer() const { return kind == Kind::integer; }
  bool is_array() const { return kind == Kind::array; }
  bool is_string() const { return kind == Kind::string || kind == Kind::status; }
  /// A short human-readable rendering ("(nil)", "\"text\"", "42", "[1, 2]").
  std::string to_string() const;
};

}  // namespace redisync
