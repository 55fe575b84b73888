// SPDX-License-Identifier: Apache-2.0
// The chaos suite's checker: parses the history file the chaos workers append to (format in
// chaos_worker.cpp) and verifies exclusion, the counter, fencing tokens, progress and liveness.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace redisync::chaos {

/// One critical section: an "A" line and, unless the worker died inside it, its "R" line.
struct Section {
  int worker = -1;
  long long pid = 0;
  long long seq = 0;
  long long wait_start = 0;  // CLOCK_MONOTONIC ns
  long long acquired = 0;
  std::uint64_t token = 0;
  std::string field;         // owner field in the lock hash
  bool closed = false;       // the R line was seen
  long long section_end = 0;  // from the R line, or the U line before it (0: not ended)
  long long released = 0;    // unlock() returned
  long long read = 0;        // counter value read
  char wrote = '0';          // '1' written, 'r' rejected by the fencing check, 's' skipped
                             // (the holder had been told its lock was lost), '0' not written,
                             // 'n' none due (a reader or a permit holder only reads)
  std::string outcome;       // ok | lost | notowner | failed:<class>
  int release_failures = 0;  // F lines: unlock() attempts that threw before the last one
  std::vector<std::string> release_failure_classes;  // their Error classes, in order
};

/// A lock attempt that did not acquire: "T" (wait ran out) or "E" (threw).
struct Attempt {
  int worker = -1;
  long long wait_start = 0;
  long long end = 0;
  std::string error;  // "" for T lines, the Error class for E lines
};

struct History {
  std::vector<Section> sections;          // in file order
  std::vector<Attempt> failed_attempts;   // T and E lines
  std::map<int, int> lost_callbacks;      // worker -> L lines
  std::map<int, std::vector<long long>> lost_times;  // worker -> times of its L lines
  std::vector<std::string> malformed;     // lines that did not parse
};

/// Parses history text (the whole file). Never throws; bad lines go to History::malformed.
History parse_history(const std::string& text);
/// Reads and parses a history file (an absent file is an empty history).
History read_history(const std::string& path);
/// The whole text of the file at `path`, empty when it cannot be read (read_history() and
/// read_latch_history() parse it).
std::string file_text(const std::string& path);
/// Counts by name as the summaries print them: "{a:1,b:2}" ("{}" when empty).
std::string counts_text(const std::map<std::string, int>& counts);

/// What the checker is told about the run.
struct Expectations {
  int workers = 0;                  // ids 0..workers-1 must each complete a section
  long long counter = 0;            // the counter's final value on the resource
  bool tokens = false;              // the kind hands out fencing tokens
  long long wait_ns = 0;            // the wait each attempt was given
  long long hang_slack_ns = 0;      // an attempt longer than wait + slack counts as hung
  std::map<int, long long> killed;  // worker -> CLOCK_MONOTONIC ns of its SIGKILL
  /// worker -> [from, to] ns intervals the test kept it stopped (SIGSTOP ... SIGCONT).
  std::map<int, std::vector<std::pair<long long, long long>>> paused;
  /// Faults injected (>= 0): the stale holds that explain overlaps may not outnumber them.
  /// -1: no bound (hand-written histories that do not count).
  int faults = -1;
  /// Of those, faults that can make the server forget a lock (restart without persistence,
  /// FLUSHALL, eviction, failover to a replica that missed the write). Only these can excuse
  /// a holder told after the next holder acquired ("reported late"), at most one stale hold
  /// each.
  int data_loss_faults = 0;
  /// Holds allowed at once: 1 for the locks, N for a semaphore of N permits.
  int permits = 1;
  /// Workers whose holds are shared (the readers of a read-write lock): two of them never
  /// conflict; a shared hold and any other hold do.
  std::set<int> shared_workers;
};

struct Verdict {
  int sections = 0;               // acquisitions seen
  int closed = 0;                 // ... with a release line
  long long writes = 0;           // counter writes that succeeded
  int rejected = 0;               // writes refused by the fencing check
  int killed_open = 0;            // sections ended by SIGKILL (their write is unknown)
  int overlaps = 0;               // holds over the limit: with one permit, pairs of
                                  // conflicting holds that overlapped in time; with N, each
                                  // hold acquired while N or more were on counts the excess
  int max_holds_at_once = 0;      // most holds on at one time (readers included)
  int unexplained_overlaps = 0;   // ... not explained by one of the three below
  int explained_in_time = 0;      // the earlier holder was told before the later acquired
  int explained_by_pause = 0;     // the earlier holder was SIGSTOPped by the test then (no
                                  // lease can tell a stopped process), and told afterwards
  int reported_late = 0;          // told only after the later holder acquired, with a
                                  // data-loss fault injected (the server forgot the lock)
  int stale_holds = 0;            // distinct earlier holds of explained overlaps
  double min_notice_lead_ms = -1; // least lead of an in-time notice over the next acquire
  double max_notice_late_ms = -1; // worst lateness of a notice after the next acquire
  int release_failures = 0;       // unlock() attempts that threw and were retried
  std::map<std::string, int> retried_release_errors;  // ... by Error class
  long long lost_updates = 0;     // writes - counter (0 when the counter is within bounds)
  int chain_breaks = 0;           // an ok section read other than its predecessor's write
  int unexplained_breaks = 0;     // ... not explained by a told stale holder's or a killed
                                  // holder's write
  int lost_reported = 0;          // sections whose unlock() raised LockLostError
  int lost_callbacks = 0;         // lost-lock callbacks
  int token_regressions = 0;      // tokens not strictly increasing in acquire order
  int timeouts = 0;               // T lines (wait ran out)
  std::map<std::string, int> errors;  // acquire errors (E) and failed releases, by class
  std::vector<int> idle_workers;  // workers that never held the lock (starved)
  int hung_attempts = 0;          // attempts that took longer than wait + slack
  double max_attempt_ms = 0;      // longest attempt (acquired or not)
  double max_blocked_after_free_ms = 0;  // longest wait past the previous holder's release
  double max_recovery_ms = 0;     // longest time from a SIGKILL to the next acquisition
  std::vector<std::string> problems;  // human-readable failures; empty = pass

  bool ok() const { return problems.empty(); }
  /// One line for the log: the figures above.
  std::string summary(const std::string& label) const;
};

/// Checks the history against the expectations.
/// Pass criteria: no malformed lines; no open section except those of killed workers; never
/// more than `permits` conflicting holds at once (two shared holds do not conflict) unless
/// the excess is explained: the earlier holder was told (lost-lock callback, or LockLostError
/// from unlock()) BEFORE the later one acquired, or it was stopped by the test at that moment
/// and told afterwards, or it was told afterwards and a data-loss fault was injected; the
/// distinct stale holds explaining overlaps number at most the faults injected (and those
/// reported late at most the data-loss faults); counter within
/// [writes - overlaps, writes + killed_open] and equal to writes when nothing overlapped;
/// the chain of reads holds: each successful section (acquire order) read what the previous
/// one wrote, unless a stale holder that was told (or a killed holder) wrote in between;
/// tokens strictly increasing in acquire order; every worker completed a section; no
/// attempt outlived its wait by more than the slack.
Verdict check(const History& history, const Expectations& expect);

}  // namespace redisync::chaos
