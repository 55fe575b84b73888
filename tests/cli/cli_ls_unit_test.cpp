// SPDX-License-Identifier: Apache-2.0
// Unit tests of the pure pieces of `ls`, `unlock --force` and the name rule (no Redis).
#include <gtest/gtest.h>

#include "cli_error.h"
#include "json_writer.h"
#include "ls_scan.h"
#include "names.h"
#include "unlock_kinds.h"

namespace redisync::cli {
namespace {

TEST(CliNames, EmptyNameIsAUsageErrorNamingTheCommand) {
  try {
    check_name("", "status");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_NE(std::string(e.what()).find("status: the NAME must not be empty"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(check_name(" ", "status"));  // only empty is refused here
}

// A listed name's exact bytes go out as name_hex and come back through --name-hex.
TEST(CliNames, HexRoundTripsAnyBytes) {
  const std::string bytes("a\xff\0\n\"", 5);
  EXPECT_EQ(name_hex(bytes), "61ff000a22");
  EXPECT_EQ(given_name("", name_hex(bytes), "status"), bytes);
  EXPECT_EQ(given_name("", std::string("61FF000A22"), "status"), bytes);
  EXPECT_EQ(given_name("plain", std::nullopt, "status"), "plain");
  JsonWriter w;
  w.begin_object();
  write_name_fields(w, bytes);
  w.end_object();
  EXPECT_EQ(w.str(), R"({"name_hex":"61ff000a22"})") << "not UTF-8: no lossy name";
  JsonWriter utf8;
  utf8.begin_object();
  write_name_fields(utf8, "caf\xc3\xa9 \"x\"");
  utf8.end_object();
  EXPECT_EQ(utf8.str(), R"({"name":"café \"x\"","name_hex":"636166c3a920227822"})");
}

TEST(CliOwnerField, OnlyClientColonIntegerIsAnOwner) {
  EXPECT_TRUE(is_owner_field("0b7e3f2a-1111-2222-3333-444455556666:17"));
  EXPECT_TRUE(is_owner_field("someone:-3"));
  EXPECT_FALSE(is_owner_field("mode"));
  EXPECT_FALSE(is_owner_field(":17"));
  EXPECT_FALSE(is_owner_field("client:"));
  EXPECT_FALSE(is_owner_field("client:12abc"));
}

TEST(CliLsRender, EmptyTextAndJsonAndLeaseCells) {
  EXPECT_EQ(render_ls_text({}), "");
  EXPECT_EQ(render_ls_json({}), "[]");
  EXPECT_EQ(lease_cell(std::nullopt), "-");
  EXPECT_EQ(lease_cell(-1), "none");
  EXPECT_EQ(lease_cell(850), "850ms");
  EXPECT_EQ(lease_cell(12345), "12.3s");
}

TEST(CliLsRender, OneLinePerEntryWithAlignedColumns) {
  LsEntry lock;
  lock.name = "orders";
  lock.kind = Kind::lock;
  lock.holders = {"0b7e3f2a-1111-2222-3333-444455556666:17"};
  lock.lease_ms = 29000;
  LsEntry sem;
  sem.name = "pool";
  sem.kind = {Kind::semaphore, Kind::permit_expirable_semaphore, Kind::count_down_latch};
  sem.may_be_data = true;
  sem.permits = 3;
  const std::string text = render_ls_text({lock, sem});
  EXPECT_EQ(text,
            "KIND       NAME    HOLDERS          LEASE  WAITERS  PERMITS  DETAIL\n"
            "lock       orders  1 0b7e3f2a..:17  29.0s  -        -\n"
            "ambiguous  pool    -                -      -        3        semaphore, "
            "permit-expirable-semaphore or count-down-latch, or data\n")
      << text;
  const std::string json = render_ls_json({sem});
  EXPECT_NE(json.find(R"("kind":"ambiguous","candidates":["semaphore",)"
                      R"("permit-expirable-semaphore","count-down-latch"],"may_be_data":true)"),
            std::string::npos)
      << json;
}

// The columns of a row are separated by spaces: a name "a b" printed as it is read as a name
// "a" and a HOLDERS cell "b", every later column shifted (awk '{print $2}' got "a"). A space in
// a name or a holder's owner is "\x20", as printable() escapes control bytes: each stays one
// word (--json keeps the exact bytes).
TEST(CliLsRender, SpacesInNamesAndOwnersAreEscapedSoEachStaysOneWord) {
  LsEntry lock;
  lock.name = "nightly report";
  lock.kind = Kind::lock;
  lock.holders = {"x y:1"};
  lock.lease_ms = 29000;
  const std::string text = render_ls_text({lock});
  EXPECT_EQ(text,
            "KIND  NAME               HOLDERS     LEASE  WAITERS  PERMITS  DETAIL\n"
            "lock  nightly\\x20report  1 x\\x20y:1  29.0s  -        -\n")
      << text;
  EXPECT_NE(render_ls_json({lock}).find("\"nightly report\""), std::string::npos);
}

}  // namespace
}  // namespace redisync::cli
