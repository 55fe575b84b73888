// SPDX-License-Identifier: Apache-2.0
// Pure helpers of the permit-expirable semaphore: hex <-> raw permit ids, random ids, the
// acquire step's reply, and the semaphore channel's wake-up count.
#include <gtest/gtest.h>

#include <set>

#include "redisync/errors.h"
#include "sync/counters/permit_expirable_semaphore_ids.h"
#include "sync/counters/semaphore_gate.h"

namespace redisync::sync {
namespace {

TEST(PermitIdTest, HexOfRawBytesIsLowercase) {
  const std::string raw("\x00\x01\x7f\x80\xab\xcd\xef\xff\x10\x20\x30\x40\x50\x60\x70\x90", 16);
  EXPECT_EQ(permit_id_to_hex(raw), "00017f80abcdefff1020304050607090");
  EXPECT_EQ(permit_id_to_hex(""), "");
}

TEST(PermitIdTest, RawOfHexRoundTripsAndAcceptsEitherCase) {
  const std::string hex = "00017f80abcdefff1020304050607090";
  const std::string raw = permit_id_from_hex(hex, "s");
  ASSERT_EQ(raw.size(), 16u);
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x00);
  EXPECT_EQ(static_cast<unsigned char>(raw[3]), 0x80);
  EXPECT_EQ(static_cast<unsigned char>(raw[7]), 0xff);
  EXPECT_EQ(permit_id_to_hex(raw), hex);
  EXPECT_EQ(permit_id_from_hex("00017F80ABCDEFFF1020304050607090", "s"), raw);
  for (int i = 0; i < 100; ++i) {
    const std::string r = random_permit_id();
    EXPECT_EQ(permit_id_from_hex(permit_id_to_hex(r), "s"), r);
  }
}

TEST(PermitIdTest, MalformedHexIsAnInvalidArgumentNamingTheProblem) {
  auto message = [](const std::string& text) -> std::string {
    try {
      permit_id_from_hex(text, "pool");
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.value(), errc::invalid_argument);
      return e.what();
    }
    return "no exception";
  };
  const std::string short_id = message("abc");
  EXPECT_NE(short_id.find("'abc'"), std::string::npos) << short_id;
  EXPECT_NE(short_id.find("3 chars"), std::string::npos) << short_id;
  EXPECT_NE(short_id.find("'pool'"), std::string::npos) << short_id;
  EXPECT_NE(message(std::string(33, 'a')).find("33 chars"), std::string::npos);
  EXPECT_NE(message("").find("0 chars"), std::string::npos);
  const std::string bad_digit = message(std::string(10, 'a') + "x" + std::string(21, 'b'));
  EXPECT_NE(bad_digit.find("position 10"), std::string::npos) << bad_digit;
  // Binary junk is shown escaped, and long input is cut.
  const std::string binary = message(std::string("\x01\xff", 2));
  EXPECT_NE(binary.find("\\x01\\xff"), std::string::npos) << binary;
  EXPECT_LT(message(std::string(1000, 'z')).size(), 300u);
}

TEST(PermitIdTest, RandomIdsAreSixteenBytesAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = random_permit_id();
    EXPECT_EQ(id.size(), kPermitIdBytes);
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(PermitAcquireReplyTest, Decoding) {
  Reply ok;
  ok.kind = Reply::Kind::string;
  ok.str = "OK";
  EXPECT_TRUE(decode_acquire_reply(ok).acquired);

  // The script answers how long until the earliest permit expires, by the server's clock.
  Reply until;
  until.kind = Reply::Kind::string;
  until.str = ":1500";
  auto r = decode_acquire_reply(until);
  EXPECT_FALSE(r.acquired);
  EXPECT_EQ(r.ttl_ms, 1500);
  // Already due (the retry reclaims it): wait the minimum, never a negative time.
  until.str = ":-20";
  EXPECT_EQ(decode_acquire_reply(until).ttl_ms, 1);

  Reply nil;
  EXPECT_FALSE(decode_acquire_reply(nil).acquired);
  EXPECT_EQ(decode_acquire_reply(nil).ttl_ms, -1);  // wait for a message
  Reply junk;
  junk.kind = Reply::Kind::string;
  junk.str = ":x";
  EXPECT_EQ(decode_acquire_reply(junk).ttl_ms, -1);
  EXPECT_EQ(kNoExpiryScore, 922337203685477LL);
}

TEST(SemaphoreMessageTest, WakeUpCount) {
  EXPECT_EQ(semaphore_wakeups("3"), 3);
  EXPECT_EQ(semaphore_wakeups("1"), 1);
  EXPECT_EQ(semaphore_wakeups("0"), 0);    // nothing to take
  EXPECT_EQ(semaphore_wakeups("-4"), 0);   // negative count: nothing to take
  EXPECT_EQ(semaphore_wakeups("9223372036854775807"), 9223372036854775807LL);
  EXPECT_EQ(semaphore_wakeups(""), -1);    // not a number: everyone re-checks
  EXPECT_EQ(semaphore_wakeups("2x"), -1);
  EXPECT_EQ(semaphore_channel("pool"), "redisson_sc:{pool}");
  EXPECT_EQ(semaphore_channel("{a}pool"), "redisson_sc:{a}pool");
}

}  // namespace
}  // namespace redisync::sync
