// SPDX-License-Identifier: Apache-2.0
// The watchdog's table of holds (src/sync/hold/renewal_table.h) on a fake clock: what a round
// renews, what a renewal's answer means, and when an unconfirmed hold is reported lost.
#include <gtest/gtest.h>

#include "sync/hold/renewal_table.h"

using namespace std::chrono_literals;
using redisync::sync::Clock;
using redisync::sync::RenewalKey;
using redisync::sync::RenewalKind;
using redisync::sync::RenewalTable;

namespace {
const Clock::time_point t0 = Clock::time_point{} + 1000s;
const RenewalKey kLock{"lock", "c1:7"};
const RenewalKey kOther{"other", "c1:7"};
const RenewalKey kReader{"rw", "c1:7", RenewalKind::rwlock_read};

// Every renewal due at any time: what a renewal tick would send if it came last.
std::pair<std::vector<RenewalTable::Ticket>, std::vector<RenewalTable::Ticket>> all_due(
    RenewalTable& table) {
  return table.take_due(t0, Clock::time_point::max());
}
}  // namespace

TEST(RenewalTable, AnUnconfirmedRenewalDeadlineLeadsToTheLostNotice) {
  RenewalTable table(1000ms);
  table.add(kLock, kLock, t0);
  // Lease 1 s from the acquire's send time, told a tenth (100 ms) before it can end.
  EXPECT_EQ(table.next_deadline(), t0 + 900ms);
  EXPECT_TRUE(table.take_overdue(t0 + 899ms).empty());
  auto lost = table.take_overdue(t0 + 900ms);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].report.key, "lock");
  EXPECT_NE(lost[0].reason.find("no renewal was confirmed in time"), std::string::npos);
  EXPECT_TRUE(table.empty());
}

TEST(RenewalTable, AConfirmedRenewalCountsFromItsSendTimeNotItsReply) {
  RenewalTable table(1000ms);
  table.add(kLock, kLock, t0);
  // Sent at 300 ms, answered much later: the server reset the lease no earlier than 300 ms.
  EXPECT_FALSE(table.renewal_answered(kLock, t0 + 300ms, true));
  EXPECT_EQ(table.next_deadline(), t0 + 1200ms);
  // An older round answering late never moves the deadline back.
  EXPECT_FALSE(table.renewal_answered(kLock, t0 + 100ms, true));
  EXPECT_EQ(table.next_deadline(), t0 + 1200ms);
}

TEST(RenewalTable, ARenewalThatFindsTheFieldGoneIsALossAtOnce) {
  RenewalTable table(1000ms);
  table.add(kLock, kLock, t0);
  auto lost = table.renewal_answered(kLock, t0 + 300ms, false);
  ASSERT_TRUE(lost);
  EXPECT_NE(lost->reason.find("gone"), std::string::npos);
  EXPECT_TRUE(table.empty());
}

TEST(RenewalTable, AFailedRenewalKeepsTheHoldUntilItsDeadline) {
  RenewalTable table(1000ms);
  table.add(kLock, kLock, t0);
  EXPECT_FALSE(table.renewal_failed(kLock, t0 + 400ms, "timeout"));
  EXPECT_EQ(table.size(), 1u);
  auto lost = table.renewal_failed(kLock, t0 + 950ms, "timeout");
  ASSERT_TRUE(lost);
  EXPECT_NE(lost->reason.find("timeout"), std::string::npos);
}

TEST(RenewalTable, FixedLeasesAreWatchedNotRenewed) {
  RenewalTable table(30000ms);
  table.add(kLock, kLock, t0);
  table.watch(kOther, kOther, 500ms, t0 + 1s);
  auto [hash, read] = all_due(table);
  ASSERT_EQ(hash.size(), 1u);
  EXPECT_EQ(hash[0].reg().key, "lock");
  EXPECT_TRUE(read.empty());
  // The fixed lease's deadline comes first although it was taken later.
  EXPECT_EQ(table.next_deadline(), t0 + 1450ms);
  auto lost = table.take_overdue(t0 + 1450ms);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].report.key, "other");
  EXPECT_NE(lost[0].reason.find("fixed lease"), std::string::npos);
}

TEST(RenewalTable, HoldsAreCountedAndTheLastReleaseEndsTheRegistration) {
  RenewalTable table(1000ms);
  table.add(kLock, kLock, t0);
  table.add(kLock, kLock, t0 + 10ms);  // re-entry
  table.remove(kLock);
  EXPECT_EQ(table.size(), 1u);
  table.remove(kLock);
  EXPECT_TRUE(table.empty());
  EXPECT_FALSE(table.next_deadline());
  // A late answer for a released hold changes nothing.
  EXPECT_FALSE(table.renewal_answered(kLock, t0 + 20ms, false));
}

TEST(RenewalTable, APartialReleaseLeavingOnlyFixedLeasesStopsTheRenewals) {
  RenewalTable table(1000ms);
  table.watch(kLock, kLock, 6000ms, t0);
  table.add(kLock, kLock, t0 + 10ms);  // re-entered in watchdog mode: renewed
  const auto earlier_round = all_due(table).first;
  ASSERT_EQ(earlier_round.size(), 1u);
  table.remove(kLock);
  table.fix(kLock, 6000ms, t0);  // only the 6 s hold remains
  const auto [locks, readers] = all_due(table);  // every hold in watchdog mode
  EXPECT_TRUE(locks.empty());
  EXPECT_TRUE(readers.empty());
  EXPECT_EQ(table.next_deadline(), t0 + 5400ms);
  // A renewal of the earlier round that answers now does not extend the fixed lease.
  EXPECT_FALSE(table.renewal_answered(earlier_round[0], t0 + 300ms, true));
  EXPECT_EQ(table.next_deadline(), t0 + 5400ms);
}

// Issue 36: an update that may shorten a lease is sent; its reply may be lost although it ran.
TEST(RenewalTable, ALeaseUpdateCapsTheDeadlineBeforeItsReplyAndNeverMovesItLater) {
  RenewalTable table(30000ms);
  table.watch(kLock, kLock, 10000ms, t0);
  EXPECT_EQ(table.next_deadline(), t0 + 9000ms);
  // Shorter (2 s sent at 1 s): the earlier of the two, 2.8 s, whatever the reply.
  EXPECT_TRUE(table.cap(kLock, 2000ms, t0 + 1000ms));
  EXPECT_EQ(table.next_deadline(), t0 + 2800ms);
  // Longer (20 s) before its reply: unchanged; the confirmed reply (fix) moves it.
  EXPECT_TRUE(table.cap(kLock, 20000ms, t0 + 1500ms));
  EXPECT_EQ(table.next_deadline(), t0 + 2800ms);
  table.fix(kLock, 20000ms, t0 + 1500ms);
  EXPECT_EQ(table.next_deadline(), t0 + 19500ms);
  // A later but shorter-ending one (1 s sent at 2 s) caps again, and is reported by it.
  EXPECT_TRUE(table.cap(kLock, 1000ms, t0 + 2000ms));
  EXPECT_EQ(table.next_deadline(), t0 + 2900ms);
  EXPECT_TRUE(table.take_overdue(t0 + 2899ms).empty());
  EXPECT_EQ(table.take_overdue(t0 + 2900ms).size(), 1u);
  // Unknown registrations are not created.
  EXPECT_FALSE(table.cap(kOther, 1000ms, t0));
  EXPECT_TRUE(table.empty());
}

TEST(RenewalTable, ReadersOfOneHashAreRenewedTogether) {
  RenewalTable table(1000ms);
  table.add(kReader, kReader, t0);
  table.add(RenewalKey{"rw", "c2:9", RenewalKind::rwlock_read}, kReader, t0);
  table.add(kLock, kLock, t0);
  auto [hash, read] = all_due(table);
  EXPECT_EQ(hash.size(), 1u);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].reg().key, read[1].reg().key);
}

TEST(RenewalTable, ForceUnlockDropsEveryRegistrationOfTheKey) {
  RenewalTable table(1000ms);
  table.add(kLock, kLock, t0);
  table.add(RenewalKey{"lock", "c1:8"}, kLock, t0);
  table.add(kOther, kOther, t0);
  table.remove_all("lock");
  EXPECT_EQ(table.size(), 1u);
}

// Issue 34: each hold is renewed a third of the lease after its own acquire or last renewal,
// so holds taken at different times are renewed at different times, never all in one burst.
TEST(RenewalTable, EachHoldIsDueAThirdOfTheLeaseAfterItsOwnLastRenewal) {
  RenewalTable table(3000ms);
  EXPECT_EQ(table.renewal_interval(), 1000ms);
  EXPECT_FALSE(table.next_renewal_due());
  table.add(kLock, kLock, t0);
  table.add(kOther, kOther, t0 + 600ms);
  table.watch(RenewalKey{"fixed", "c1:7"}, RenewalKey{"fixed", "c1:7"}, 500ms, t0);
  EXPECT_EQ(table.next_renewal_due(), t0 + 1000ms);
  // Nothing is due before its time.
  auto none = table.take_due(t0 + 900ms, t0 + 999ms);
  EXPECT_TRUE(none.first.empty());
  EXPECT_TRUE(none.second.empty());
  // At 1 s only the first hold is due; sent then, it is due again at 2 s.
  auto first = table.take_due(t0 + 1000ms, t0 + 1100ms);
  ASSERT_EQ(first.first.size(), 1u);
  EXPECT_EQ(first.first[0].reg().key, "lock");
  EXPECT_EQ(table.next_renewal_due(), t0 + 1600ms);
  // Within the window given, the later one goes along (coalesced).
  auto second = table.take_due(t0 + 1500ms, t0 + 1600ms);
  ASSERT_EQ(second.first.size(), 1u);
  EXPECT_EQ(second.first[0].reg().key, "other");
  EXPECT_EQ(table.next_renewal_due(), t0 + 2000ms);
  // A released hold is never due again; the fixed lease never was.
  table.remove(kLock);
  EXPECT_EQ(table.next_renewal_due(), t0 + 2500ms);
  table.remove(kOther);
  EXPECT_FALSE(table.next_renewal_due());
  EXPECT_EQ(table.size(), 1u);
}

TEST(RenewalTable, AFixedLeaseReenteredInWatchdogModeComesDueAndAFixOnlyHoldDoesNot) {
  RenewalTable table(3000ms);
  table.watch(kLock, kLock, 6000ms, t0);
  EXPECT_FALSE(table.next_renewal_due());
  table.add(kLock, kLock, t0 + 100ms);
  EXPECT_EQ(table.next_renewal_due(), t0 + 1100ms);
  table.remove(kLock);
  table.fix(kLock, 6000ms, t0);
  EXPECT_FALSE(table.next_renewal_due());
}

// A renewal answered after its hold was released: nothing is reported, and the registration
// kept for that answer goes with it.
TEST(RenewalTable, ARenewalAnsweredAfterTheReleaseReportsNothing) {
  RenewalTable table(1000ms);
  table.add(kLock, kLock, t0);
  const auto tickets = all_due(table).first;
  ASSERT_EQ(tickets.size(), 1u);
  table.remove(kLock);
  EXPECT_TRUE(table.empty());
  EXPECT_FALSE(table.renewal_answered(tickets[0], t0 + 10ms, false));
  EXPECT_TRUE(table.empty());
  EXPECT_FALSE(table.next_deadline());
  EXPECT_FALSE(table.next_renewal_due());
}

// A renewal sent for an earlier hold of the same lock and field, answered after that hold was
// released and the lock taken again: the answer says nothing about the new hold. "Not
// renewed" ran between the release and the new acquire; it must not report the new hold
// lost. "Renewed" may have run before the release; it must not extend the new hold.
TEST(RenewalTable, ARenewalOfAnEarlierHoldSaysNothingAboutTheNextOne) {
  RenewalTable table(1000ms);
  table.add(kLock, kLock, t0);
  const auto before_release = all_due(table).first;
  ASSERT_EQ(before_release.size(), 1u);
  table.remove(kLock);
  table.add(kLock, kLock, t0 + 50ms);  // taken again
  EXPECT_FALSE(table.renewal_answered(before_release[0], t0 + 20ms, false));
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.next_deadline(), t0 + 950ms);  // counted from the new acquire
  const auto again = all_due(table).first;
  ASSERT_EQ(again.size(), 1u);
  table.remove(kLock);
  table.add(kLock, kLock, t0 + 100ms);
  EXPECT_FALSE(table.renewal_answered(again[0], t0 + 400ms, true));
  EXPECT_EQ(table.next_deadline(), t0 + 1000ms);  // not extended by the earlier hold's answer
  EXPECT_TRUE(table.take_overdue(t0 + 1000ms).size() == 1u);
}

TEST(RenewalTable, OneKeysDeadlineIsTheEarliestOfItsOwnHoldsAlone) {
  RenewalTable table(1000ms);
  const RenewalKey second_owner{"lock", "c1:8"};
  table.watch(kOther, kOther, 200ms, t0);  // another key, due first
  table.add(kLock, kLock, t0 + 100ms);
  table.watch(second_owner, second_owner, 500ms, t0 + 100ms);
  EXPECT_EQ(table.next_deadline(), t0 + 180ms);  // kOther's: 200 ms less its tenth
  EXPECT_EQ(table.next_deadline_of("lock"), t0 + 550ms);  // the second owner's fixed lease
  EXPECT_EQ(table.next_deadline_of("other"), t0 + 180ms);
  EXPECT_FALSE(table.next_deadline_of("lo"));  // a prefix of a key is not that key
  EXPECT_FALSE(table.next_deadline_of("nothing"));
  table.remove(second_owner);
  EXPECT_EQ(table.next_deadline_of("lock"), t0 + 1000ms);
  table.remove(kLock);
  EXPECT_FALSE(table.next_deadline_of("lock"));
}
