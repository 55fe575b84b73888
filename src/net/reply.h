// SPDX-License-Identifier: Apache-2.0
// RESP values: the owning reply tree (public redisync::Reply), its conversion from hiredis's
// reply objects, and the command encoder.
#pragma once

#include <string>
#include <vector>

#include "redisync/reply.h"

struct redisReply;

namespace redisync::net {

using redisync::Reply;

/// An owning copy of a hiredis reply tree (RESP2 kinds; any other kind becomes nil). The test
/// support's clients (tests/support) read replies through it too.
Reply convert_reply(const redisReply* reply);

/// Appends one command, RESP-encoded as an array of bulk strings, to `out`.
void encode_command(std::string& out, const std::vector<std::string>& args);

}  // namespace redisync::net
