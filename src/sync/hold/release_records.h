// SPDX-License-Identifier: Apache-2.0
// Deletes release records (docs/wire-format.md §1.8) in batches once their releases have completed.
//
// Why batched: a record only matters while its release might still be resent; afterwards
// deleting it is hygiene (it also expires by itself). Sending one DEL per release right away
// cost a command per release and, worse, a socket write on the I/O thread at the very moment
// the releasing thread should run (on a busy core that write delayed unlock()'s return). The
// sweeper collects keys and sends one DEL per hash tag group (all keys, outside a cluster)
// a few milliseconds later or once enough have gathered.
//
// Threading: I/O thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include "net/executor.h"

namespace redisync::sync {

class ReleaseRecordSweeper {
 public:
  /// `per_tag`: keys of different hash tags go in different DELs (cluster: one slot each).
  ReleaseRecordSweeper(asio::io_context& io, net::Executor& executor, bool per_tag);

  /// Queues a record key for deletion, unless keep() was told of it.
  void add(std::string key);
  /// The record `key` is not swept: its release was sent more than once and an earlier copy
  /// may still be on its way (delayed on a connection given up), which must find the record
  /// and change nothing. It expires by its own TTL (lock_release_record_ttl_ms). Call before
  /// add() for the same key (which then forgets it).
  void keep(std::string key);
  /// Sends the DELs for everything queued now; returns how many. `on_answer`, when given, is
  /// called once per DEL when it is answered or fails. The keys of a DEL that failed (its
  /// connection given up, the server unreachable past the retries) go with the next one.
  std::size_t flush(std::function<void()> on_answer = {});
  /// For a closing Client: flush(), with the keys of DELs sent earlier and not yet answered
  /// sent again too (DEL is idempotent): one held up on a connection that is being given up,
  /// or waiting for a resend the close will cancel, would otherwise leave its records behind.
  std::size_t flush_all(std::function<void()> on_answer);
  /// Stops the timer; queued keys are dropped (they expire by themselves).
  void stop();

  std::size_t pending() const { return pending_.size(); }

  static constexpr std::size_t kBatch = 128;           ///< flush at once at this many keys
  static constexpr auto kDelay = std::chrono::milliseconds(5);  ///< else after this long

 private:
  net::Executor& executor_;
  bool per_tag_;
  asio::steady_timer timer_;
  bool armed_ = false;
  bool stopped_ = false;
  void send(std::vector<std::string> keys, const std::function<void()>& on_answer);

  std::vector<std::string> pending_;
  // Keys of DELs that failed. Sent with the next DEL, not on their own: a retry of its own
  // would go on the connection that just failed to deliver (still stalled until given up).
  std::vector<std::string> failed_;
  std::set<std::string> kept_;  // keep() until the matching add()
  std::uint64_t next_del_ = 0;
  std::map<std::uint64_t, std::vector<std::string>> in_flight_;  // DELs sent, not answered
};

}  // namespace redisync::sync
