// SPDX-License-Identifier: Apache-2.0
// The per-connection record of loaded scripts (src/net/script_loads.h): one SCRIPT LOAD per
// script however many calls go out, one more after the server lost its scripts however many
// calls heard NOSCRIPT, and one EVAL instead where the user may not load scripts.
#include <gtest/gtest.h>

#include "net/script_loads.h"

using redisync::net::ScriptLoads;
using Send = ScriptLoads::Send;

namespace {
const std::string kSha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
const std::string kOther = "a42059b356c875f0717db19a51f6aaca9ae659ea";
}  // namespace

TEST(ScriptLoads, TheFirstCallOfEachScriptLoadsItAndTheOthersRelyOnThatLoad) {
  ScriptLoads loads;
  const auto first = loads.plan(kSha);
  EXPECT_EQ(first.send, Send::load_then_evalsha);
  for (int i = 0; i < 1000; ++i) {
    const auto next = loads.plan(kSha);
    EXPECT_EQ(next.send, Send::evalsha);
    EXPECT_EQ(next.load, first.load);
  }
  EXPECT_EQ(loads.plan(kOther).send, Send::load_then_evalsha);
  EXPECT_EQ(loads.loads(), 2u);
}

TEST(ScriptLoads, ManyNoscriptRepliesAfterAFlushLoadTheScriptOnceMore) {
  ScriptLoads loads;
  const auto before = loads.plan(kSha);
  // SCRIPT FLUSH: 100 calls that relied on the first load all hear NOSCRIPT; the first to be
  // resent loads the script again, the others (and their NOSCRIPTs) rely on that new load.
  loads.missing(kSha, before.load);
  const auto reload = loads.plan(kSha);
  EXPECT_EQ(reload.send, Send::load_then_evalsha);
  for (int i = 1; i < 100; ++i) {
    loads.missing(kSha, before.load);
    EXPECT_EQ(loads.plan(kSha).send, Send::evalsha);
  }
  EXPECT_EQ(loads.loads(), 2u);
  // A NOSCRIPT for a call behind the new load: flushed again.
  loads.missing(kSha, reload.load);
  EXPECT_EQ(loads.plan(kSha).send, Send::load_then_evalsha);
}

TEST(ScriptLoads, AUserWhoMayNotLoadScriptsLoadsThemWithOneEval) {
  ScriptLoads loads;
  const auto first = loads.plan(kSha);
  loads.refused(kSha, first.load, /*for_good=*/true);
  loads.missing(kSha, first.load);  // the NOSCRIPT of the call behind the refused load
  // The next call goes as EVAL, which caches the script; the calls behind it rely on it.
  const auto by_eval = loads.plan(kSha);
  EXPECT_EQ(by_eval.send, Send::eval);
  EXPECT_EQ(loads.plan(kSha).send, Send::evalsha);
  // Flushed: loaded again with an EVAL, not a SCRIPT LOAD.
  loads.missing(kSha, by_eval.load);
  EXPECT_EQ(loads.plan(kSha).send, Send::eval);
  EXPECT_EQ(loads.plan(kSha).send, Send::evalsha);
  loads.clear();  // a new socket: maybe rights now
  EXPECT_EQ(loads.plan(kSha).send, Send::load_then_evalsha);
}

TEST(ScriptLoads, APassingRefusalTriesTheLoadAgain) {
  ScriptLoads loads;
  const auto first = loads.plan(kSha);
  loads.refused(kSha, first.load, /*for_good=*/false);  // e.g. BUSY
  EXPECT_EQ(loads.plan(kSha).send, Send::load_then_evalsha);
}

TEST(ScriptLoads, ARefusalOfAnOlderLoadLeavesTheNewerOne) {
  ScriptLoads loads;
  const auto first = loads.plan(kSha);
  loads.missing(kSha, first.load);
  const auto second = loads.plan(kSha);
  loads.refused(kSha, first.load, true);
  const auto third = loads.plan(kSha);
  EXPECT_EQ(third.send, Send::evalsha);
  EXPECT_EQ(third.load, second.load);
}
