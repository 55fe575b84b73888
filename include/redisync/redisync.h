// SPDX-License-Identifier: Apache-2.0
// All of redisync's public API.
#pragma once

#include "redisync/client.h"
#include "redisync/config.h"
#include "redisync/count_down_latch.h"
#include "redisync/errors.h"
#include "redisync/guard.h"
#include "redisync/fair_lock.h"
#include "redisync/fenced_lock.h"
#include "redisync/lock.h"
#include "redisync/metrics.h"
#include "redisync/multi_lock.h"
#include "redisync/non_reentrant_lock.h"
#include "redisync/permit_expirable_semaphore.h"
#include "redisync/rate_limiter.h"
#include "redisync/read_write_lock.h"
#include "redisync/red_lock.h"
#include "redisync/reply.h"
#include "redisync/semaphore.h"
#include "redisync/spin_lock.h"
