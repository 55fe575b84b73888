// SPDX-License-Identifier: Apache-2.0
#include "sync/hold/recorded_step.h"

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <chrono>

#include "redisync/errors.h"
#include "sync/acquire/acquire_loop.h"
#include "sync/client_core.h"
#include "sync/identity.h"

namespace redisync::sync {

namespace {

// A hard cap besides the window: every resend after a timeout waits at least one timeout.
constexpr int kMaxResends = 64;

std::chrono::milliseconds resend_window(const detail::ClientCore& core) {
  const auto& c = core.config();
  return std::chrono::milliseconds(core.release_record_ttl_ms()) + 3 * c.timeout +
         c.connect_timeout;
}

struct Step {
  std::shared_ptr<detail::ClientCore> core;
  const lua::Script* script;
  std::vector<std::string> keys;
  std::vector<std::string> args;
  std::string what;
  std::function<void(std::exception_ptr, net::Reply)> done;
  Clock::time_point resend_until;
  int resends = 0;
  bool maybe_ran = false;  // some copy may have run
};

void send(const std::shared_ptr<Step>& step) {
  step->core->executor().eval(
      *step->script, step->keys, step->args,
      [step](std::exception_ptr error, net::Reply reply) {
        if (!error && reply.is_error()) error = net::server_error(reply, step->what);
        if (!error) {
          // Delete the record at once only when no other copy may still be on its way; else
          // it expires by itself, long after any copy could still arrive.
          if (!step->maybe_ran) step->core->release_records().add(step->keys.back());
          return step->done(nullptr, std::move(reply));
        }
        const bool uncertain = may_have_run(error);
        step->maybe_ran = step->maybe_ran || uncertain;
        // A timeout or a dropped connection: resend (the same record) until a connection
        // answers. Surely unsent requests were already resent by the executor.
        if (uncertain && step->resends < kMaxResends && Clock::now() < step->resend_until) {
          ++step->resends;
          auto timer = std::make_shared<asio::steady_timer>(step->core->io(),
                                                            step->core->config().retry_interval);
          timer->async_wait([step, timer](std::error_code ec) {
            if (ec) {
              return step->done(
                  note_may_have_run(std::make_exception_ptr(ClientClosedError("client closed")),
                                    step->what, step->maybe_ran),
                  {});
            }
            send(step);
          });
          return;
        }
        step->done(note_may_have_run(error, step->what, step->maybe_ran), {});
      },
      // Resent above, where this step knows a copy may be out there; a timeout gives up its
      // connection, so the resend goes to a fresh one.
      net::Retry::by_caller);
}

}  // namespace

std::string step_record_key(const std::string& prefix, const std::string& name) {
  return prefix + ":" + hash_tag(name) + ":" + random_request_id();
}

long long step_record_ttl_ms(const detail::ClientCore& core) {
  return 2 * resend_window(core).count();
}

void run_recorded_step(const std::shared_ptr<detail::ClientCore>& core, const lua::Script& script,
                       std::vector<std::string> keys, std::vector<std::string> args,
                       std::string what, std::function<void(std::exception_ptr, net::Reply)> done) {
  auto step = std::make_shared<Step>();
  step->core = core;
  step->script = &script;
  step->keys = std::move(keys);
  step->args = std::move(args);
  step->what = std::move(what);
  step->done = std::move(done);
  step->resend_until = Clock::now() + resend_window(*core);
  send(step);
}

std::exception_ptr note_may_have_run(std::exception_ptr error, const std::string& what, bool sent) {
  if (!error || !(sent || may_have_run(error))) return error;
  const std::string note =
      "; the step may have run on the server (its reply was lost): check the state before "
      "repeating it, a repeat may apply it twice";
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    return std::make_exception_ptr(TimeoutError(what + ": " + e.what() + note));
  } catch (const AuthError&) {
  } catch (const ConnectionError& e) {
    return std::make_exception_ptr(ConnectionError(what + ": " + e.what() + note, e.value(), true));
  } catch (const ClientClosedError& e) {
    return std::make_exception_ptr(ClientClosedError(what + ": " + e.what() + note));
  } catch (...) {
  }
  return error;
}

}  // namespace redisync::sync
