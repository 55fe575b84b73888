// SPDX-License-Identifier: Apache-2.0
// How a Client's state is closed (Client's destructor and move assignment).
#pragma once

#include <memory>

namespace redisync::detail {

class ClientCore;

/// Closes `core` (null: nothing). A Client destroyed inside one of its own handlers (a
/// completion or the lost-lock handler) runs on its I/O thread, which cannot wait for itself:
/// a detached thread closes it once the handler has returned, and the state ends there, never
/// on the thread that is running it. The process's exit waits for such closes (up to 3 s), so
/// their last writes are sent and their threads end before OpenSSL's exit handler.
void close_client_core(std::shared_ptr<ClientCore> core);

}  // namespace redisync::detail
