// SPDX-License-Identifier: Apache-2.0
#include "sync/hold/release_records.h"

#include "net/cluster_slot.h"

namespace redisync::sync {

ReleaseRecordSweeper::ReleaseRecordSweeper(asio::io_context& io, net::Executor& executor,
                                           bool per_tag)
    : executor_(executor), per_tag_(per_tag), timer_(io) {}

void ReleaseRecordSweeper::keep(std::string key) {
  if (stopped_) return;
  kept_.insert(std::move(key));
}

void ReleaseRecordSweeper::add(std::string key) {
  if (kept_.erase(key) > 0) return;  // left to expire: a copy of its release may still arrive
  if (stopped_) return;
  pending_.push_back(std::move(key));
  if (pending_.size() >= kBatch) {
    flush();
    return;
  }
  if (armed_) return;
  armed_ = true;
  timer_.expires_after(kDelay);
  timer_.async_wait([this](std::error_code ec) {
    if (ec || stopped_) return;
    armed_ = false;
    flush();
  });
}

std::size_t ReleaseRecordSweeper::flush(std::function<void()> on_answer) {
  if (pending_.empty() || stopped_) return 0;
  std::vector<std::string> keys;
  keys.swap(pending_);
  keys.insert(keys.end(), std::make_move_iterator(failed_.begin()),
              std::make_move_iterator(failed_.end()));
  failed_.clear();
  if (!per_tag_) {
    send(std::move(keys), on_answer);
    return 1;
  }
  std::map<std::string, std::vector<std::string>> groups;
  for (auto& key : keys) groups[std::string(net::hash_tag_of(key))].push_back(std::move(key));
  for (auto& [tag, group] : groups) send(std::move(group), on_answer);
  return groups.size();
}

// A key is in one place at a time (queued, failed or in one DEL in flight): no duplicates.
std::size_t ReleaseRecordSweeper::flush_all(std::function<void()> on_answer) {
  if (stopped_) return 0;
  pending_.insert(pending_.end(), std::make_move_iterator(failed_.begin()),
                  std::make_move_iterator(failed_.end()));
  failed_.clear();
  for (const auto& [number, keys] : in_flight_) {
    pending_.insert(pending_.end(), keys.begin(), keys.end());
  }
  return flush(std::move(on_answer));
}

// One DEL of keys that share a slot (a cluster routes it by the first). The sweeper outlives
// every answer: the Client stops it and closes the executor, which answers what is left,
// before either goes.
void ReleaseRecordSweeper::send(std::vector<std::string> keys,
                                const std::function<void()>& on_answer) {
  const std::uint64_t number = next_del_++;
  std::vector<std::string> args{"DEL"};
  args.insert(args.end(), keys.begin(), keys.end());
  const std::string route = per_tag_ ? keys.front() : std::string();
  in_flight_.emplace(number, std::move(keys));
  // Only a failure to deliver matters: an error reply (an ACL without DEL) is an answer, and a
  // record left behind expires by itself.
  auto answered = [this, number, on_answer](std::exception_ptr error, net::Reply) {
    auto it = in_flight_.find(number);
    if (it != in_flight_.end()) {
      if (error && !stopped_) {
        // At most a batch of them: past that, left to expire (a server refusing every DEL).
        for (auto& key : it->second) {
          if (failed_.size() >= kBatch) break;
          failed_.push_back(std::move(key));
        }
      }
      in_flight_.erase(it);
    }
    if (on_answer) on_answer();
  };
  executor_.execute(std::move(args), std::move(answered), net::Retry::always, route);
}

void ReleaseRecordSweeper::stop() {
  stopped_ = true;
  pending_.clear();
  failed_.clear();
  in_flight_.clear();
  kept_.clear();
  timer_.cancel();
}

}  // namespace redisync::sync
