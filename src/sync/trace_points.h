// SPDX-License-Identifier: Apache-2.0
// Timestamps on the path of a blocking call and of a handoff, for finding where their
// microseconds go (bench/handoff_breakdown). Only in builds configured with
// -DREDISYNC_TRACE_POINTS=ON; elsewhere REDISYNC_TRACE_POINT compiles to nothing.
#pragma once

#ifdef REDISYNC_TRACE_POINTS

namespace redisync::detail {

/// Records (CLOCK_MONOTONIC ns, `tag`), from any thread; `tag` must be a string literal. The
/// first 1,048,576 points of the process are written to $REDISYNC_TRACE_DIR/<pid>.txt at
/// exit ("<ns> <tag>" per line), if that variable is set.
void trace_point(const char* tag) noexcept;

}  // namespace redisync::detail

#define REDISYNC_TRACE_POINT(tag) ::redisync::detail::trace_point(tag)

#else

#define REDISYNC_TRACE_POINT(tag) static_cast<void>(0)

#endif
