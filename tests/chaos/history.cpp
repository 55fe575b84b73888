// SPDX-License-Identifier: Apache-2.0
#include "chaos/history.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace redisync::chaos {

namespace {

constexpr long long kNever = std::numeric_limits<long long>::max();

double ms(long long ns) { return static_cast<double>(ns) / 1e6; }

// The end of a hold for the overlap check: the end of its critical section (R line, or the U
// line of a worker killed while releasing), or the SIGKILL of its worker; kNever if neither
// is known.
long long hold_end(const Section& s, const Expectations& expect) {
  if (s.closed || s.section_end > 0) return s.section_end;
  auto it = expect.killed.find(s.worker);
  return it == expect.killed.end() ? kNever : it->second;
}

// When the holder of `s` was first told its lock was lost: its lost-lock callback during the
// hold, or unlock() raising LockLostError; kNever if it never was.
long long told_at(const Section& s, const History& h) {
  long long told = kNever;
  const long long until = s.closed ? s.released : kNever;
  if (auto it = h.lost_times.find(s.worker); it != h.lost_times.end()) {
    for (const long long t : it->second) {
      if (t >= s.acquired && t <= until) told = std::min(told, t);
    }
  }
  if (s.closed && s.outcome == "lost") told = std::min(told, s.released);
  return told;
}

// A stopped holder cannot be told; once continued it needs to be scheduled before its
// deadline timer can fire, while the other workers run on. A notice within this long of the
// SIGCONT is as early as the holder could have been told. Its overdue timer fires as soon as
// its I/O thread runs, so the bound is scheduling, not the library: a ThreadSanitizer
// process resumed beside a loaded suite was seen to need 59 ms. A late deadline (the defects
// this check exists for) is late by a lease fraction or more: seconds at these leases.
constexpr long long kResumeSlackNs = 250'000'000;

// True when `worker` was stopped at `at`, or `at` fell between its SIGCONT and a notice
// `told` that came within kResumeSlackNs of that SIGCONT.
bool paused_at(int worker, long long at, long long told, const Expectations& expect) {
  auto it = expect.paused.find(worker);
  if (it == expect.paused.end()) return false;
  for (const auto& [from, to] : it->second) {
    if (from <= at && at <= to) return true;
    if (to < at && at <= told && told - to <= kResumeSlackNs) return true;
  }
  return false;
}

}  // namespace

History parse_history(const std::string& text) {
  History h;
  std::map<std::pair<int, long long>, std::size_t> open;  // (worker, seq) -> section index
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::istringstream in(line);
    char tag = 0;
    in >> tag;
    bool good = false;
    if (tag == 'A') {
      Section s;
      in >> s.worker >> s.pid >> s.seq >> s.wait_start >> s.acquired >> s.token >> s.field;
      good = static_cast<bool>(in) && !open.count({s.worker, s.seq});
      if (good) {
        open[{s.worker, s.seq}] = h.sections.size();
        h.sections.push_back(s);
      }
    } else if (tag == 'R') {
      int worker = -1;
      long long seq = 0;
      in >> worker >> seq;
      auto it = open.find({worker, seq});
      if (in && it != open.end()) {
        Section& s = h.sections[it->second];
        std::string wrote;
        in >> s.section_end >> s.released >> s.read >> wrote >> s.outcome;
        good = static_cast<bool>(in) && wrote.size() == 1;
        if (good) {
          s.wrote = wrote[0];
          s.closed = true;
          open.erase(it);
        }
      }
    } else if (tag == 'U') {
      // U <id> <seq> <section_end>: the section ended, unlock() is next.
      int worker = -1;
      long long seq = 0;
      long long end = 0;
      in >> worker >> seq >> end;
      auto it = open.find({worker, seq});
      good = static_cast<bool>(in) && it != open.end();
      if (good) h.sections[it->second].section_end = end;
    } else if (tag == 'T' || tag == 'E') {
      Attempt a;
      long long seq = 0;
      in >> a.worker >> seq >> a.wait_start >> a.end;
      if (tag == 'E') in >> a.error;
      good = static_cast<bool>(in);
      if (good) h.failed_attempts.push_back(a);
    } else if (tag == 'L') {
      int worker = -1;
      long long time = 0;
      in >> worker >> time;
      good = static_cast<bool>(in);
      if (good) {
        ++h.lost_callbacks[worker];
        h.lost_times[worker].push_back(time);
      }
    } else if (tag == 'F') {
      // F <id> <seq> <time> <Error class>: an unlock() attempt threw and was retried.
      int worker = -1;
      long long seq = 0;
      long long time = 0;
      std::string what;
      in >> worker >> seq >> time >> what;
      auto it = open.find({worker, seq});
      good = static_cast<bool>(in) && it != open.end();
      if (good) {
        ++h.sections[it->second].release_failures;
        h.sections[it->second].release_failure_classes.push_back(what);
      }
    }
    if (!good) h.malformed.push_back(line);
  }
  return h;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  return text.str();
}

History read_history(const std::string& path) { return parse_history(file_text(path)); }

Verdict check(const History& history, const Expectations& expect) {
  Verdict v;
  for (const auto& line : history.malformed) v.problems.push_back("malformed line: " + line);
  for (const auto& [worker, n] : history.lost_callbacks) v.lost_callbacks += n;

  std::vector<const Section*> holds;
  for (const auto& s : history.sections) holds.push_back(&s);
  std::sort(holds.begin(), holds.end(),
            [](const Section* a, const Section* b) { return a->acquired < b->acquired; });
  v.sections = static_cast<int>(holds.size());

  std::set<int> progressed;
  for (const Section* s : holds) {
    if (s->closed) {
      ++v.closed;
      if (s->wrote == '1') ++v.writes;
      if (s->wrote == 'r') ++v.rejected;
      if (s->outcome == "lost") ++v.lost_reported;
      // Progress is about starvation: a hold that ended with a lost-lock notice (a fault cut
      // it short; the notice's timeliness is checked below) still shows the worker got in.
      if (s->outcome == "ok" || s->outcome == "lost") progressed.insert(s->worker);
      v.release_failures += s->release_failures;
      for (const auto& what : s->release_failure_classes) ++v.retried_release_errors[what];
      if (s->outcome != "ok" && s->outcome != "lost") ++v.errors["release:" + s->outcome];
    } else if (expect.killed.count(s->worker)) {
      ++v.killed_open;
      progressed.insert(s->worker);  // it held the lock when it was killed: not starved
    } else {
      v.problems.push_back("worker " + std::to_string(s->worker) + " section " +
                           std::to_string(s->seq) + " never ended and the worker was not killed");
    }
  }

  // Exclusion: a hold acquired while `permits` or more conflicting earlier holds are still on
  // (two shared holds never conflict) makes an excess; each overlap of the excess needs one
  // of those earlier holds explained: its holder was told in time (or a fault the lease
  // cannot cover explains it). The best-explained earlier holds are taken as the stale ones.
  // With one permit every conflicting earlier hold still on is one overlap.
  enum class Why { in_time, pause, late, none };
  struct Earlier {
    const Section* hold;
    long long told;
    Why why;
  };
  auto shared = [&](const Section* s) { return expect.shared_workers.count(s->worker) > 0; };
  const int permits = std::max(expect.permits, 1);
  std::set<const Section*> stale;       // earlier holds of explained overlaps
  std::set<const Section*> stale_late;  // ... of those reported late
  for (std::size_t j = 0; j < holds.size(); ++j) {
    const long long acquired_j = holds[j]->acquired;
    std::vector<Earlier> on;
    int holds_on = 1;
    for (std::size_t i = 0; i < j; ++i) {
      if (hold_end(*holds[i], expect) <= acquired_j) continue;
      ++holds_on;
      if (shared(holds[i]) && shared(holds[j])) continue;
      const long long told = told_at(*holds[i], history);
      Why why = Why::none;
      if (told < acquired_j) {
        why = Why::in_time;
      } else if (told != kNever && paused_at(holds[i]->worker, acquired_j, told, expect)) {
        why = Why::pause;
      } else if (told != kNever && expect.data_loss_faults > 0) {
        why = Why::late;
      } else if (expect.data_loss_faults > 0 && told_at(*holds[j], history) != kNever) {
        // The *later* hold was the one lost: a data-loss fault (eviction, FLUSHALL) can drop a
        // hold between the server running its acquire and the client reading the reply, and
        // the lock then goes to another worker whose reply happens to come back first. The
        // order of acquire returns is then not the servers' order; the lost holder is told at
        // its next renewal or release, as for any data loss.
        why = Why::late;
      }
      on.push_back({holds[i], told, why});
    }
    v.max_holds_at_once = std::max(v.max_holds_at_once, holds_on);
    const int excess = static_cast<int>(on.size()) - (permits - 1);
    if (excess <= 0) continue;
    std::stable_sort(on.begin(), on.end(),
                     [](const Earlier& a, const Earlier& b) { return a.why < b.why; });
    for (int k = 0; k < excess; ++k) {
      const Earlier& e = on[static_cast<std::size_t>(k)];
      ++v.overlaps;
      if (e.told != kNever && e.told >= acquired_j) {
        v.max_notice_late_ms = std::max(v.max_notice_late_ms, ms(e.told - acquired_j));
      }
      if (e.why != Why::none) stale.insert(e.hold);
      if (e.why == Why::in_time) {
        ++v.explained_in_time;
        const double lead = ms(acquired_j - e.told);
        v.min_notice_lead_ms = v.min_notice_lead_ms < 0 ? lead : std::min(v.min_notice_lead_ms, lead);
        continue;
      }
      if (e.why == Why::pause) {
        ++v.explained_by_pause;
        continue;
      }
      if (e.why == Why::late) {
        ++v.reported_late;
        stale_late.insert(e.hold);
        continue;
      }
      ++v.unexplained_overlaps;
      if (v.unexplained_overlaps <= 5) {
        const std::string why =
            e.told == kNever ? "the earlier holder was never told"
                             : "the earlier holder was told " + std::to_string(ms(e.told - acquired_j)) +
                                   " ms after the later one acquired";
        const std::string limit =
            permits == 1 ? "" : "; " + std::to_string(on.size() + 1) + " holds of " +
                                    std::to_string(permits) + " permits";
        // The two sections' times (ms from the earlier acquisition), for the post-mortem of
        // a run that cannot be repeated: was the earlier hold cut off, or really not told?
        const auto at = [&](long long t) {
          return t == 0 ? std::string("-") : std::to_string(ms(t - e.hold->acquired));
        };
        const std::string times =
            "; earlier: ended " + at(e.hold->section_end) + " released " + at(e.hold->released) +
            " outcome " + (e.hold->closed ? e.hold->outcome : std::string("open")) +
            ", later acquired " + at(holds[j]->acquired) + " ms after it";
        v.problems.push_back("overlap without a timely lost-lock notice: worker " +
                             std::to_string(e.hold->worker) + " seq " +
                             std::to_string(e.hold->seq) + " and worker " +
                             std::to_string(holds[j]->worker) + " seq " +
                             std::to_string(holds[j]->seq) + " (" + why + limit + times + ")");
      }
    }
  }
  v.stale_holds = static_cast<int>(stale.size());
  if (expect.faults >= 0 && v.stale_holds > expect.faults) {
    v.problems.push_back(std::to_string(v.stale_holds) + " stale holds explain overlaps but only " +
                         std::to_string(expect.faults) + " faults were injected");
  }
  if (static_cast<int>(stale_late.size()) > expect.data_loss_faults) {
    v.problems.push_back(std::to_string(stale_late.size()) +
                         " holds were reported lost only after the next holder acquired, more "
                         "than the " + std::to_string(expect.data_loss_faults) +
                         " data-loss faults injected");
  }

  // The chain of reads: the successful sections in acquire order each read what the
  // previous one wrote. A break must be a stale holder's write (it was told: "lost") landing
  // in between (the next read is that write), or the writes of holders killed in their
  // sections since the previous successful one (read + 1 for each; two holders killed one
  // after the other can both have written).
  {
    std::set<long long> stale_writes;  // values written by told stale holders
    for (const Section* s : holds) {
      if (s->closed && s->outcome == "lost" && s->wrote == '1') stale_writes.insert(s->read + 1);
    }
    long long expected = 0;
    long long killed_since = 0;  // killed-in-section holders since the previous successful one
    for (const Section* s : holds) {
      if (!s->closed && expect.killed.count(s->worker)) ++killed_since;
      if (!s->closed || s->outcome != "ok" || s->wrote != '1') continue;
      if (s->read != expected) {
        ++v.chain_breaks;
        const bool explained = stale_writes.count(s->read) > 0 ||
                               (s->read > expected && s->read - expected <= killed_since);
        if (!explained) {
          ++v.unexplained_breaks;
          if (v.unexplained_breaks <= 5) {
            v.problems.push_back("worker " + std::to_string(s->worker) + " seq " +
                                 std::to_string(s->seq) + " read " + std::to_string(s->read) +
                                 " but the previous holder wrote " + std::to_string(expected));
          }
        }
      }
      expected = s->read + 1;
      killed_since = 0;
    }
  }

  // The counter: each overlap can lose at most one increment; a killed holder may or may not
  // have written.
  if (expect.counter < v.writes) v.lost_updates = v.writes - expect.counter;
  if (expect.counter > v.writes + v.killed_open) {
    v.problems.push_back("counter " + std::to_string(expect.counter) + " exceeds writes " +
                         std::to_string(v.writes) + " + killed holders " +
                         std::to_string(v.killed_open));
  }
  if (v.lost_updates > v.overlaps - v.unexplained_overlaps) {
    v.problems.push_back(std::to_string(v.lost_updates) + " lost updates but only " +
                         std::to_string(v.overlaps - v.unexplained_overlaps) +
                         " reported overlaps to explain them");
  }

  // Fencing tokens: strictly increasing in acquisition order.
  if (expect.tokens) {
    for (std::size_t i = 1; i < holds.size(); ++i) {
      if (holds[i]->token <= holds[i - 1]->token) {
        ++v.token_regressions;
        if (v.token_regressions <= 5) {
          v.problems.push_back("token " + std::to_string(holds[i]->token) + " (worker " +
                               std::to_string(holds[i]->worker) + ") after token " +
                               std::to_string(holds[i - 1]->token));
        }
      }
    }
  }

  // Progress.
  for (int w = 0; w < expect.workers; ++w) {
    if (!progressed.count(w)) {
      v.idle_workers.push_back(w);
      v.problems.push_back("worker " + std::to_string(w) + " never held the lock (no section ended ok or lost, none open at a kill)");
    }
  }

  // Liveness: how long attempts took, and how long a waiter stayed blocked once the lock
  // was free (the previous holder's unlock() had returned).
  auto attempt = [&](long long start, long long end) {
    const long long took = end - start;
    v.max_attempt_ms = std::max(v.max_attempt_ms, ms(took));
    if (expect.wait_ns > 0 && took > expect.wait_ns + expect.hang_slack_ns) ++v.hung_attempts;
  };
  for (const auto& a : history.failed_attempts) {
    attempt(a.wait_start, a.end);
    if (a.error.empty()) {
      ++v.timeouts;
    } else {
      ++v.errors["acquire:" + a.error];
    }
  }
  for (std::size_t j = 0; j < holds.size(); ++j) {
    attempt(holds[j]->wait_start, holds[j]->acquired);
    if (j == 0) continue;
    const Section& prev = *holds[j - 1];
    if (prev.closed && prev.outcome == "ok" && holds[j]->wait_start < prev.released &&
        holds[j]->acquired > prev.released) {
      v.max_blocked_after_free_ms =
          std::max(v.max_blocked_after_free_ms, ms(holds[j]->acquired - prev.released));
    }
  }
  for (const auto& [worker, at] : expect.killed) {
    long long next = kNever;
    for (const Section* s : holds) {
      if (s->acquired > at && s->worker != worker) next = std::min(next, s->acquired);
    }
    if (next != kNever) v.max_recovery_ms = std::max(v.max_recovery_ms, ms(next - at));
  }
  if (v.hung_attempts > 0) {
    v.problems.push_back(std::to_string(v.hung_attempts) +
                         " lock attempts outlived their wait by more than the slack (longest " +
                         std::to_string(v.max_attempt_ms) + " ms)");
  }
  return v;
}

std::string counts_text(const std::map<std::string, int>& counts) {
  std::string text = "{";
  for (const auto& [name, n] : counts) {
    if (text.size() > 1) text += ",";
    text += name + ":" + std::to_string(n);
  }
  return text + "}";
}

std::string Verdict::summary(const std::string& label) const {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << "chaos " << label << ": sections=" << sections << " writes=" << writes
      << " rejected_stale_writes=" << rejected << " killed_in_section=" << killed_open
      << " max_holds_at_once=" << max_holds_at_once
      << " overlaps=" << overlaps << " unexplained_overlaps=" << unexplained_overlaps
      << " lost_updates=" << lost_updates << " chain_breaks=" << chain_breaks
      << " lost_reported=" << lost_reported
      << " lost_callbacks=" << lost_callbacks << " token_regressions=" << token_regressions
      << " explained_in_time=" << explained_in_time << " explained_by_pause=" << explained_by_pause
      << " reported_late=" << reported_late << " stale_holds=" << stale_holds
      << " min_notice_lead_ms=" << min_notice_lead_ms << " max_notice_late_ms=" << max_notice_late_ms
      << " release_failures=" << release_failures << " " << counts_text(retried_release_errors)
      << " wait_timeouts=" << timeouts << " errors=" << counts_text(errors)
      << " max_blocked_after_free_ms=" << max_blocked_after_free_ms
      << " max_attempt_ms=" << max_attempt_ms << " max_recovery_after_kill_ms=" << max_recovery_ms;
  return out.str();
}

}  // namespace redisync::chaos
