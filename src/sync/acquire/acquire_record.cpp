// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/acquire_record.h"

#include "sync/client_core.h"

namespace redisync::sync {

std::shared_ptr<AcquireSteps> acquire_record_steps(const std::shared_ptr<detail::ClientCore>& core,
                                                   std::string channel,
                                                   AcquireSteps::Step attempt,
                                                   const std::string& record,
                                                   const std::string& record_ttl_ms) {
  auto recheck = [core, record, attempt](AcquireLoop::AttemptDone cb) {
    core->executor().execute(
        {"GET", record},
        [cb, attempt](std::exception_ptr error, net::Reply reply) {
          if (!error && reply.is_string() && reply.str == "1") return cb(nullptr, {true, 0});
          attempt(cb);
        },
        net::Retry::never);
  };
  auto settle = [core, record, record_ttl_ms](AcquireLoop::AttemptDone cb) {
    core->executor().execute(
        {"SET", record, "0", "NX", "PX", record_ttl_ms, "GET"},
        [cb](std::exception_ptr error, net::Reply reply) {
          if (error) return cb(error, {});
          cb(nullptr, {reply.is_string() && reply.str == "1", -1});
        },
        net::Retry::always);
  };
  return function_steps(std::move(channel), std::move(attempt), std::move(recheck),
                        std::move(settle));
}

}  // namespace redisync::sync
