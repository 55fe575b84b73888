// RESP values: the owning reply tree (public redisync::Reply) and the command encoder.
#pragma once

#include <string>
#include <vector>

#include "redisync/reply.h"

namespace redisync::net {

using redisync::Reply;

/// Appends one command, RESP-encoded as an array of bulk strings, to `out`.
void encode_command(std::string& out, const std::vector<std::string>& args);

}  // namespace redisync::net
