// SPDX-License-Identifier: Apache-2.0
// redisync::RedLock: MultiLock with the Redlock parameters of docs/wire-format.md §6.
#include "redisync/red_lock.h"

#include "sync/client_core.h"
#include "sync/multi/multi_lock_attempt.h"

namespace redisync {

namespace {

detail::MultiLockPolicy red_lock_policy(std::size_t members) {
  detail::MultiLockPolicy policy;
  if (members > 0) policy.tolerated_failures = static_cast<int>(members - (members / 2 + 1));
  policy.split_wait = true;
  policy.tolerant = true;
  policy.check_validity = true;
  return policy;
}

}  // namespace

RedLock::RedLock(std::initializer_list<AnyLock> members)
    : RedLock(std::vector<AnyLock>(members), MultiLockOptions{}) {}

RedLock::RedLock(std::vector<AnyLock> members, MultiLockOptions options)
    : MultiLock(members, options, red_lock_policy(members.size())) {
  // The members are one lock on several independent servers: same name, distinct Clients.
  const auto& all = state_->members;
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (all[i]->name() != all[0]->name()) {
      throw InvalidArgument(
          "redisync: RedLock members must be the same lock on different "
          "servers; got names '" +
          all[0]->name() + "' and '" + all[i]->name() + "'");
    }
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      if (all[i]->core() == all[j]->core()) {
        throw InvalidArgument("redisync: RedLock members " + std::to_string(i) + " and " +
                              std::to_string(j) + " use the same Client (" + all[i]->describe() +
                              "); each member needs its own server");
      }
    }
  }
}

std::size_t RedLock::quorum() const { return size() / 2 + 1; }

}  // namespace redisync
