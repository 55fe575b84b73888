// SPDX-License-Identifier: Apache-2.0
// `redisync ls` / `top`: find locks and synchronizers in Redisson's layout by SCAN (cursor
// based, COUNT-bounded batches: the server never blocks on a full keyspace walk), on every
// master of a cluster, and describe each in one line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kinds.h"
#include "redisync/client.h"

namespace redisync::cli {

/// One lock or synchronizer found.
struct LsEntry {
  std::string name;
  /// What its keys prove (layout_kind.h): one kind, or the candidates when they cannot tell.
  KindVerdict kind;
  bool may_be_data = false;          ///< an ambiguous count: anybody's number looks the same
  std::vector<std::string> holders;  ///< owner fields (rwlock writers end in ":write")
  std::string mode;                  ///< rwlock: read / write
  std::optional<long long> lease_ms; ///< PTTL of the name; nullopt: no expiry
  std::optional<long long> waiters;  ///< fair lock: queue length
  std::optional<long long> permits;  ///< semaphores: available permits (or the count)
  std::optional<long long> held;     ///< expirable semaphore: permits held
  std::optional<std::string> token;  ///< fenced lock: the latest fencing token
  /// Rate limiter: its configuration. `permits` is then what the next acquire could take
  /// (expired grants counted back), for an overall limiter only: a per-client one has a
  /// window per client (`redisync status NAME` lists them).
  std::optional<long long> rate;
  std::optional<long long> interval_ms;
  std::string rate_type;  ///< "overall" or "per-client"
};

/// Scans every master for keys matching `pattern` (Redis glob; "*" for all) and returns the
/// locks and synchronizers among them, sorted by name. Keys that are not in any primitive's
/// layout (user data) are left out, and so are the helper keys of a primitive (fair-lock
/// queue, fencing counter, read-lock markers...): they appear in their primitive's line.
/// Integer strings with no companion key (a semaphore's, a latch's count, or anybody's
/// number) are listed, as ambiguous, only with `counts`. `count` is SCAN's COUNT hint per
/// call. Throws ConnectionError / TimeoutError.
std::vector<LsEntry> scan_locks(Client& client, const std::string& pattern, int count = 100,
                                bool counts = false);

/// Aligned text lines with a header (empty string when `entries` is empty).
std::string render_ls_text(const std::vector<LsEntry>& entries);
/// A JSON array of objects.
std::string render_ls_json(const std::vector<LsEntry>& entries);

/// "12.3s", "850ms", "none" (no expiry), "-".
std::string lease_cell(const std::optional<long long>& lease_ms);

}  // namespace redisync::cli
