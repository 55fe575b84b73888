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
  // The outcome does not matter (a record left behind expires by itself), only that it came.
  auto answered = [on_answer = std::move(on_answer)](std::exception_ptr, net::Reply) {
    if (on_answer) on_answer();
  };
  if (!per_tag_) {
    std::vector<std::string> args{"DEL"};
    args.insert(args.end(), std::make_move_iterator(keys.begin()),
                std::make_move_iterator(keys.end()));
    executor_.execute(std::move(args), answered, net::Retry::always);
    return 1;
  }
  std::map<std::string, std::vector<std::string>> groups;
  for (auto& key : keys) groups[std::string(net::hash_tag_of(key))].push_back(std::move(key));
  for (auto& [tag, group] : groups) {
    std::vector<std::string> args{"DEL"};
    const std::string route = group.front();
    args.insert(args.end(), std::make_move_iterator(group.begin()),
                std::make_move_iterator(group.end()));
    executor_.execute(std::move(args), answered, net::Retry::always, route);
  }
  return groups.size();
}

void ReleaseRecordSweeper::stop() {
  stopped_ = true;
  pending_.clear();
  kept_.clear();
  timer_.cancel();
}

}  // namespace redisync::sync
