// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/acquire_record.h"

#include <utility>

#include "sync/client_core.h"

namespace redisync::sync {

namespace {

// One record per acquisition: the attempt, the record's key and expiry, and the channel, each
// kept once (before, the recheck and settle steps were closures with their own copies).
class RecordSteps final : public AcquireSteps, public std::enable_shared_from_this<RecordSteps> {
 public:
  RecordSteps(std::shared_ptr<detail::ClientCore> core, std::string channel,
              RecordedAttempt attempt, std::string record, std::string record_ttl_ms)
      : core_(std::move(core)),
        channel_(std::move(channel)),
        attempt_(std::move(attempt)),
        record_(std::move(record)),
        record_ttl_ms_(std::move(record_ttl_ms)) {}

  std::string channel() const override { return channel_; }
  void attempt(Done done) override { attempt_(record_, record_ttl_ms_, std::move(done)); }
  bool can_recheck() const override { return true; }
  bool can_settle() const override { return true; }

  // The record says "1" once an attempt took permits: then this acquisition is done;
  // otherwise attempt (a late copy of the earlier one finds the record and takes nothing).
  void recheck(Done done) override {
    core_->executor().execute(
        {"GET", record_},
        [self = shared_from_this(), done](std::exception_ptr error, net::Reply reply) mutable {
          if (!error && reply.is_string() && reply.str == "1") return done(nullptr, {true, 0});
          self->attempt(std::move(done));
        },
        net::Retry::never);
  }

  // Claims the record with "0" unless it says "1": a late copy then takes nothing, for good.
  void settle(Done done) override {
    core_->executor().execute(
        {"SET", record_, "0", "NX", "PX", record_ttl_ms_, "GET"},
        [done](std::exception_ptr error, net::Reply reply) {
          if (error) return done(error, {});
          done(nullptr, {reply.is_string() && reply.str == "1", -1});
        },
        net::Retry::always);
  }

 private:
  std::shared_ptr<detail::ClientCore> core_;
  std::string channel_;
  RecordedAttempt attempt_;
  std::string record_;
  std::string record_ttl_ms_;
};

}  // namespace

std::shared_ptr<AcquireSteps> acquire_record_steps(const std::shared_ptr<detail::ClientCore>& core,
                                                   std::string channel, RecordedAttempt attempt,
                                                   std::string record, std::string record_ttl_ms) {
  return std::make_shared<RecordSteps>(core, std::move(channel), std::move(attempt),
                                       std::move(record), std::move(record_ttl_ms));
}

}  // namespace redisync::sync
