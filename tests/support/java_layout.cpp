// SPDX-License-Identifier: Apache-2.0
#include "support/java_layout.h"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "support/java_layout_scripts.h"

namespace redisync::test {
namespace {

// Record expiry of §1.8: (3 000 + 1 000) x 4 attempts, Redisson's defaults.
constexpr long long kRecordTtlMs = 16000;

std::string random_hex(size_t bytes) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned>(rng() & 0xff));
    out += buf;
  }
  return out;
}

std::string random_uuid() {
  std::string hex = random_hex(16);
  hex[12] = '4';  // version 4
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

}  // namespace

using namespace java_scripts;

long long epoch_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

JavaLayoutClient::JavaLayoutClient(RedisServer& server) : server_(server), id_(random_uuid()) {}

std::string JavaLayoutClient::owner(long long thread) const {
  return id_ + ":" + std::to_string(thread);
}
std::string JavaLayoutClient::writer(long long thread) const { return owner(thread) + ":write"; }

std::string JavaLayoutClient::tag(const std::string& name) {
  return name.find('{') == std::string::npos ? "{" + name + "}" : name;
}
std::string JavaLayoutClient::lock_channel(const std::string& name) {
  return "redisson_lock__channel:" + tag(name);
}
std::string JavaLayoutClient::fair_channel(const std::string& name,
                                           const std::string& owner_field) {
  return lock_channel(name) + ":" + owner_field;
}
std::string JavaLayoutClient::fair_queue(const std::string& name) {
  return "redisson_lock_queue:" + tag(name);
}
std::string JavaLayoutClient::fair_timeouts(const std::string& name) {
  return "redisson_lock_timeout:" + tag(name);
}
std::string JavaLayoutClient::rwlock_channel(const std::string& name) {
  return "redisson_rwlock:" + tag(name);
}
std::string JavaLayoutClient::reader_marker(const std::string& name, const std::string& owner_field,
                                            long long k) {
  return tag(name) + ":" + owner_field + ":rwlock_timeout:" + std::to_string(k);
}
std::string JavaLayoutClient::rate_value_key(const std::string& name) {
  return tag(name) + ":value";
}
std::string JavaLayoutClient::rate_permits_key(const std::string& name) {
  return tag(name) + ":permits";
}
std::string JavaLayoutClient::semaphore_channel(const std::string& name) {
  return "redisson_sc:" + tag(name);
}
std::string JavaLayoutClient::permit_timeouts(const std::string& name) {
  return tag(name) + ":timeout";
}
std::string JavaLayoutClient::latch_channel(const std::string& name) {
  return "redisson_countdownlatch__channel__{" + name + "}";
}
std::string JavaLayoutClient::token_key(const std::string& name) {
  return "redisson_lock_token:" + tag(name);
}

Reply JavaLayoutClient::eval(const std::string& script, const std::vector<std::string>& keys,
                             const std::vector<std::string>& args) {
  std::vector<std::string> cmd{"EVAL", script, std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  return server_.command(cmd);
}

std::string JavaLayoutClient::release_record(const std::string& name) const {
  return "redisson_unlock_latch:" + tag(name) + ":" + random_hex(16);
}

void JavaLayoutClient::drop_record(const std::string& record) { server_.command({"DEL", record}); }

Reply JavaLayoutClient::lock_acquire(const std::string& name, long long lease_ms, long long thread,
                                     bool non_reentrant) {
  return eval(kLockAcquire, {name},
              {std::to_string(lease_ms), owner(thread), non_reentrant ? "1" : "0"});
}

Reply JavaLayoutClient::lock_release(const std::string& name, long long thread, long long lease_ms,
                                     bool publish) {
  const std::string record = release_record(name);
  Reply r = eval(kLockRelease, {name, lock_channel(name), record},
                 {owner(thread), std::to_string(lease_ms), std::to_string(kRecordTtlMs),
                  publish ? "1" : "0", publish_});
  drop_record(record);
  return r;
}

Reply JavaLayoutClient::fenced_acquire(const std::string& name, long long lease_ms,
                                       long long thread) {
  return eval(kFencedAcquire, {name, token_key(name)}, {std::to_string(lease_ms), owner(thread)});
}

Reply JavaLayoutClient::fair_acquire(const std::string& name, long long lease_ms, long long thread,
                                     bool queue, long long allowance_ms, bool non_reentrant) {
  return eval(std::string(kFairPurge) + kFairAcquire, {name, fair_queue(name), fair_timeouts(name)},
              {std::to_string(lease_ms), owner(thread), std::to_string(allowance_ms),
               std::to_string(epoch_ms_now()), queue ? "1" : "0", non_reentrant ? "1" : "0"});
}

Reply JavaLayoutClient::fair_release(const std::string& name, long long thread,
                                     long long lease_ms) {
  const std::string record = release_record(name);
  Reply r = eval(std::string(kFairPurge) + kFairRelease,
                 {name, fair_queue(name), fair_timeouts(name), lock_channel(name), record},
                 {owner(thread), std::to_string(lease_ms), std::to_string(epoch_ms_now()),
                  std::to_string(kRecordTtlMs), publish_});
  drop_record(record);
  return r;
}

Reply JavaLayoutClient::fair_give_up(const std::string& name, long long thread,
                                     long long allowance_ms) {
  return eval(kFairGiveUp, {fair_queue(name), fair_timeouts(name)},
              {owner(thread), std::to_string(allowance_ms)});
}

Reply JavaLayoutClient::read_acquire(const std::string& name, long long lease_ms,
                                     long long thread) {
  return eval(kReadAcquire, {name, tag(name) + ":" + owner(thread) + ":rwlock_timeout"},
              {std::to_string(lease_ms), owner(thread), writer(thread)});
}

Reply JavaLayoutClient::read_release(const std::string& name, long long thread) {
  const std::string record = release_record(name);
  Reply r = eval(kReadRelease, {name, rwlock_channel(name), tag(name), record},
                 {owner(thread), std::to_string(kRecordTtlMs), publish_});
  drop_record(record);
  return r;
}

Reply JavaLayoutClient::write_acquire(const std::string& name, long long lease_ms,
                                      long long thread) {
  return eval(kWriteAcquire, {name}, {std::to_string(lease_ms), writer(thread)});
}

Reply JavaLayoutClient::write_release(const std::string& name, long long thread,
                                      long long lease_ms) {
  const std::string record = release_record(name);
  Reply r =
      eval(kWriteRelease, {name, rwlock_channel(name), record},
           {writer(thread), std::to_string(lease_ms), std::to_string(kRecordTtlMs), publish_});
  drop_record(record);
  return r;
}

Reply JavaLayoutClient::semaphore_try_acquire(const std::string& name, long long permits) {
  return eval(kSemaphoreTryAcquire, {name}, {std::to_string(permits)});
}

Reply JavaLayoutClient::semaphore_release(const std::string& name, long long permits) {
  return eval(kSemaphoreRelease, {name, semaphore_channel(name)},
              {std::to_string(permits), publish_});
}

Reply JavaLayoutClient::semaphore_try_set_permits(const std::string& name, long long permits) {
  return eval(kTrySetPermits, {name, semaphore_channel(name)}, {std::to_string(permits), publish_});
}

std::string JavaLayoutClient::new_permit_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(16, '\0');
  for (char& c : id) c = static_cast<char>(rng() & 0xff);
  return id;
}

Reply JavaLayoutClient::permit_acquire(const std::string& name, const std::string& id,
                                       long long lease_ms) {
  const long long now = epoch_ms_now();
  const long long due = lease_ms > 0 ? now + lease_ms : kNoExpiryScore;
  return eval(std::string(kPermitReclaim) + kPermitAcquire,
              {name, permit_timeouts(name), semaphore_channel(name)},
              {std::to_string(now), publish_, std::to_string(due), id});
}

Reply JavaLayoutClient::permit_release(const std::string& name, const std::string& id) {
  return eval(kPermitRelease, {name, permit_timeouts(name), semaphore_channel(name)},
              {std::to_string(epoch_ms_now()), publish_, id});
}

Reply JavaLayoutClient::permit_try_set_permits(const std::string& name, long long permits) {
  return semaphore_try_set_permits(name, permits);  // §8 "try set permits" = §7's
}

Reply JavaLayoutClient::permit_update_lease(const std::string& name, const std::string& id,
                                            long long lease_ms) {
  const long long now = epoch_ms_now();
  return eval(std::string(kPermitReclaim) + kPermitUpdateLease,
              {name, permit_timeouts(name), semaphore_channel(name)},
              {std::to_string(now), publish_, id, std::to_string(now + lease_ms)});
}

Reply JavaLayoutClient::rate_acquire(const std::string& name, long long permits) {
  return eval(std::string(kRateShared) + kRateAcquire,
              {name, rate_value_key(name), rate_permits_key(name)},
              {std::to_string(epoch_ms_now()), std::to_string(permits), new_permit_id()});
}

Reply JavaLayoutClient::rate_release(const std::string& name, long long permits) {
  return eval(std::string(kRateShared) + kRateRelease,
              {name, rate_value_key(name), rate_permits_key(name)},
              {std::to_string(epoch_ms_now()), std::to_string(permits)});
}

Reply JavaLayoutClient::rate_available(const std::string& name) {
  return eval(std::string(kRateShared) + kRateAvailableUncapped,
              {name, rate_value_key(name), rate_permits_key(name)},
              {std::to_string(epoch_ms_now())});
}

Reply JavaLayoutClient::latch_try_set_count(const std::string& name, long long count) {
  return eval(kLatchTrySetCount, {name, latch_channel(name)}, {std::to_string(count), publish_});
}

Reply JavaLayoutClient::latch_count_down(const std::string& name) {
  return eval(kLatchCountDown, {name, latch_channel(name)}, {publish_});
}

// ---------------------------------------------------------------------------------------------
// ChannelListener

namespace {

std::vector<std::string> strings_of(const redisReply* r) {
  std::vector<std::string> out;
  if (r->type != REDIS_REPLY_ARRAY) return out;
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    if (e->type == REDIS_REPLY_INTEGER) {
      out.push_back(std::to_string(e->integer));
    } else if (e->str != nullptr) {
      out.emplace_back(e->str, e->len);
    } else {
      out.emplace_back();
    }
  }
  return out;
}

redisReply* checked_command(redisContext* ctx, const std::vector<std::string>& args,
                            const std::string& what) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r == nullptr) throw std::runtime_error(what + ": " + ctx->errstr);
  if (r->type == REDIS_REPLY_ERROR) {
    const std::string error(r->str, r->len);
    freeReplyObject(r);
    throw std::runtime_error(what + ": " + error);
  }
  return r;
}

}  // namespace

ChannelListener::ChannelListener(const RedisServer& server, std::string channel)
    : channel_(std::move(channel)) {
  const timeval limit{5, 0};
  ctx_ = redisConnectWithTimeout(server.host().c_str(), server.port(), limit);
  if (ctx_ == nullptr || ctx_->err != 0) {
    const std::string error = ctx_ != nullptr ? ctx_->errstr : "out of memory";
    if (ctx_ != nullptr) redisFree(ctx_);
    throw std::runtime_error("ChannelListener: connect: " + error);
  }
  redisSetTimeout(ctx_, limit);
  try {
    const auto& o = server.options();
    if (!o.acl_user.empty()) {
      freeReplyObject(checked_command(ctx_, {"AUTH", o.acl_user, o.acl_password}, "AUTH"));
    } else if (!o.password.empty()) {
      freeReplyObject(checked_command(ctx_, {"AUTH", o.password}, "AUTH"));
    }
    redisReply* confirm = checked_command(ctx_, {"SUBSCRIBE", channel_}, "SUBSCRIBE");
    const auto parts = strings_of(confirm);
    freeReplyObject(confirm);
    if (parts.size() != 3 || parts[0] != "subscribe" || parts[1] != channel_) {
      throw std::runtime_error("ChannelListener: unexpected SUBSCRIBE reply for " + channel_);
    }
  } catch (...) {
    redisFree(ctx_);
    throw;
  }
}

ChannelListener::~ChannelListener() { redisFree(ctx_); }

std::optional<std::vector<std::string>> ChannelListener::next_push(
    std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(ctx_->reader, &raw) != REDIS_OK) {
      throw std::runtime_error("ChannelListener: protocol error on " + channel_);
    }
    if (raw != nullptr) {
      auto* reply = static_cast<redisReply*>(raw);
      auto parts = strings_of(reply);
      freeReplyObject(reply);
      return parts;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{ctx_->fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) throw std::runtime_error("ChannelListener: poll failed");
    if (ready > 0 && redisBufferRead(ctx_) != REDIS_OK) {
      throw std::runtime_error("ChannelListener: read: " + std::string(ctx_->errstr));
    }
  }
}

std::optional<std::string> ChannelListener::next_message(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int pushes = 0; pushes < 1000; ++pushes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto parts = next_push(std::max(left, std::chrono::milliseconds(0)));
    if (!parts) return std::nullopt;
    if (parts->size() == 3 && (*parts)[0] == "message" && (*parts)[1] == channel_) {
      return (*parts)[2];
    }
  }
  throw std::runtime_error("ChannelListener: 1000 pushes without a message on " + channel_);
}

}  // namespace redisync::test
