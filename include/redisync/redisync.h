// All of redisync's public API.
#pragma once

#include "redisync/client.h"
#include "redisync/config.h"
#include "redisync/errors.h"
#include "redisync/lock.h"
#include "redisync/reply.h"
