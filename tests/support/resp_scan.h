// SPDX-License-Identifier: Apache-2.0
// Just enough RESP2 to split a byte stream into frames (the fault proxy matches requests to
// their replies; see fault_proxy.h). Not a general client-side parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace redisync::test {

/// The length of the first complete frame in `buf`: 0 when the frame is not complete yet,
/// -1 when the bytes are not RESP2. A frame that starts with none of "+-:$*" is an inline
/// command (one line), as a server would read it.
long resp_frame_length(std::string_view buf);

/// The arguments of one complete request frame (an array of bulk strings or an inline
/// command). False if the frame is something else.
bool resp_request_args(std::string_view frame, std::vector<std::string>* args);

}  // namespace redisync::test
