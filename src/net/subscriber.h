// SPDX-License-Identifier: Apache-2.0
// The shared pub/sub side of a Client: one subscription connection per server (in a cluster,
// per master that has subscribed channels: a channel lives on the master of its slot),
// channels reference-counted by local waiters, and the wake-up queues that waiters sleep on.
//
// Threading: io thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <asio/steady_timer.hpp>

#include "net/connection.h"
#include "net/io_thread.h"
#include "redisync/metrics.h"

namespace redisync::net {

class Channel;

/// Something sleeping on a channel until a message (or its own timer) wakes it.
class Waiter {
 public:
  virtual ~Waiter() = default;
  /// Called on the io thread when a message (or a resubscription) wakes this waiter. The
  /// waiter has already been removed from the channel's queue.
  virtual void wake() = 0;

 private:
  friend class Channel;
  bool queued_ = false;
  std::list<Waiter*>::iterator pos_;
};

/// A lower bound on when a message was published, in this process's clock: the send time of
/// the latest heartbeat PING answered on the same connection before the message came
/// (Subscriber::set_heartbeat). A server answers in order, so the message was published
/// after that PING reached it. nullopt when no heartbeat was answered on the connection yet.
using PublishedAfter = std::optional<Clock::time_point>;

/// What a message on a channel means for its local waiters (lock: "0" wakes one, "1" all;
/// semaphore: wakes as many as permits were released...).
using MessagePolicy =
    std::function<void(Channel&, const std::string& payload, PublishedAfter published_after)>;

/// One subscribed channel and its local waiters.
class Channel {
 public:
  Channel(asio::io_context& io, std::string name, MessagePolicy policy)
      : io_(io), name_(std::move(name)), policy_(std::move(policy)) {}
  ~Channel();

  const std::string& name() const { return name_; }
  bool subscribed() const { return subscribed_; }
  /// Local users of this channel (waiters between join and leave).
  int references() const { return refs_; }

  /// Calls `done(nullptr)` once the server has confirmed the subscription (at once if it
  /// has), or `done(TimeoutError)` after `timeout`.
  void when_subscribed(std::function<void(std::exception_ptr)> done, Duration timeout);

  /// Consumes a wake-up that arrived while no waiter was asleep (its attempt was in flight).
  /// True means: retry now instead of sleeping.
  bool take_wakeup();
  /// Queues `w` to be woken by a message. Use take_wakeup() first.
  void sleep(Waiter* w);
  /// Removes `w` from the queue if it is there (its timer fired first, or it gave up).
  void cancel(Waiter* w);

  /// Wakes the longest-sleeping waiter; with none asleep, remembers the wake-up for the next
  /// waiter that would sleep (bounded by the number of local users).
  void wake_one();
  /// Wakes up to n waiters, remembering the rest as above.
  void wake(int n);
  /// Wakes every sleeping waiter, and lets every waiter whose attempt is in flight retry.
  void wake_all();
  /// Waiters asleep right now.
  std::size_t sleeping() const { return sleepers_.size(); }
  /// Messages the channel's policy marked as events a waiter must not miss even when the
  /// state they announce has changed again by the time it looks (a latch's openings).
  std::uint64_t marks() const { return marks_; }
  void mark() { ++marks_; }

 private:
  friend class Subscriber;
  void confirmed();
  void fail_pending(std::exception_ptr error);

  asio::io_context& io_;
  std::string name_;
  MessagePolicy policy_;
  int refs_ = 0;
  bool subscribed_ = false;
  bool was_subscribed_ = false;  // a confirmation after a reconnect wakes everyone
  Connection* link_ = nullptr;   // the connection it is subscribed (or subscribing) on
  int wakeups_ = 0;
  std::uint64_t marks_ = 0;
  std::list<Waiter*> sleepers_;
  struct ReadyCallback {
    std::uint64_t id;
    std::function<void(std::exception_ptr)> done;
    std::shared_ptr<asio::steady_timer> timer;
  };
  std::list<ReadyCallback> ready_callbacks_;
  std::uint64_t next_callback_id_ = 0;
  // Made at the first leave: a channel in use never lingers, and 20,000 of them kept a timer
  // each for nothing (issue 34, a waiter's bytes).
  std::unique_ptr<WaitTimer> linger_;
};

class Subscriber {
 public:
  /// Cluster: the pub/sub connection serving `channel` (the master of its slot), or nullptr
  /// when no master is known.
  using Route = std::function<std::shared_ptr<Connection>(const std::string& channel)>;

  /// One server: every channel on `connection`.
  Subscriber(asio::io_context& io, std::shared_ptr<Connection> connection, Duration linger,
             Duration subscription_timeout);
  /// Several servers: `route` places each channel; `refresh` asks for a fresh topology (the
  /// owner calls reroute() when it has one).
  Subscriber(asio::io_context& io, Route route, std::function<void()> refresh, Duration linger,
             Duration subscription_timeout);
  ~Subscriber();

  /// Joins `channel` (subscribing if this is its first local user); pair with leave().
  /// `policy` is used when the channel entry is created (all users of one channel name are
  /// the same kind of primitive, so they agree on it).
  std::shared_ptr<Channel> join(const std::string& channel, MessagePolicy policy);
  /// Joins `channel` only if it is subscribed already (in use by other waiters, or lingering
  /// after recent ones); nullptr otherwise. Never subscribes.
  std::shared_ptr<Channel> join_if_subscribed(const std::string& channel);
  /// Leaves; the last user's leave unsubscribes after the linger period.
  void leave(const std::shared_ptr<Channel>& channel);

  /// Channels with an entry (subscribed, subscribing or lingering).
  std::size_t channel_count() const { return channels_.size(); }
  Duration subscription_timeout() const { return subscription_timeout_; }
  /// The connection of the one-server form (Sentinel failover drops it to move it).
  Connection& connection() { return *primary_; }
  /// Use SSUBSCRIBE/SUNSUBSCRIBE (sharded pub/sub, cluster on Redis 7+) instead of SUBSCRIBE.
  void set_sharded(bool sharded) { sharded_ = sharded; }
  /// Sends a PING on each pub/sub connection every `every` while channels are in use, so
  /// that each message is dated (PublishedAfter). Zero (the default): never. A server that
  /// refuses PING (ACL, renamed command) turns it off; messages are then undated. Set before
  /// the first join().
  void set_heartbeat(Duration every) { heartbeat_ = every; }
  /// Where subscriptions are counted (null: nowhere). Set before the first subscribe.
  void set_metrics(Metrics* metrics) { metrics_ = metrics; }
  bool sharded() const { return sharded_; }
  /// After a topology change: moves every channel whose route changed to its new server and
  /// resubscribes channels the server dropped. Their waiters are woken once resubscribed.
  void reroute();
  /// Servers with a pub/sub connection (for tests).
  std::size_t connection_count() const { return links_.size(); }
  void close();

 private:
  struct Link {
    std::shared_ptr<Connection> connection;
    std::multiset<std::string> unsubscribing;  // our own SUNSUBSCRIBEs not yet acknowledged
    /// Heartbeat PINGs sent on the current socket and not answered yet: number, send time.
    std::deque<std::pair<std::uint64_t, Clock::time_point>> pings;
    PublishedAfter answered;  // the send time of the latest PING answered on this socket
  };
  Link* link_for(const std::string& channel);
  Link* link_of(const Channel& channel);
  void place(const std::shared_ptr<Channel>& channel, Link& link);
  void on_push(Link& link, const Reply& reply);
  void on_state(Link& link, bool connected);
  void send_subscribe(Link& link, const std::vector<std::string>& channels);
  void send_unsubscribe(Link& link, const std::string& channel);
  /// Arms the heartbeat timer unless it is armed or there is no heartbeat.
  void arm_heartbeat();
  /// Sends a PING on every ready connection that has not fallen behind answering them.
  void send_heartbeats();
  /// A heartbeat's answer ("pong", its number): dates the messages after it.
  void on_pong(Link& link, const std::string& number);

  asio::io_context& io_;
  std::shared_ptr<Connection> primary_;  // one-server form
  Route route_;                          // cluster form
  std::function<void()> refresh_;
  std::map<Connection*, std::unique_ptr<Link>> links_;
  Duration linger_;
  Duration subscription_timeout_;
  bool sharded_ = false;
  Duration heartbeat_{0};
  std::unique_ptr<WaitTimer> heartbeat_timer_;  // made at the first arm
  std::uint64_t pings_sent_ = 0;
  Metrics* metrics_ = nullptr;
  bool closed_ = false;
  // Keyed by a view of the Channel's own name (one copy of each name: issue 34, a waiter's
  // bytes); a node and its Channel go together.
  std::map<std::string_view, std::shared_ptr<Channel>, std::less<>> channels_;
};

}  // namespace redisync::net
