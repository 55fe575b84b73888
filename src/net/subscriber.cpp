// SPDX-License-Identifier: Apache-2.0
#include "net/subscriber.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "net/executor.h"
#include "net/io_thread.h"
#include "redisync/errors.h"

namespace redisync::net {

namespace {

/// True for a server's refusal of PING: "NOPERM ... run the 'ping' command" (ACL) or
/// "ERR unknown command 'PING'" (renamed).
bool refuses_ping(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text.find("'ping'") != std::string::npos;
}

}  // namespace

Channel::~Channel() {
  for (auto* w : sleepers_) w->queued_ = false;
}

void Channel::when_subscribed(std::function<void(std::exception_ptr)> done, Duration timeout) {
  if (subscribed_) return done(nullptr);
  const auto id = next_callback_id_++;
  auto timer = std::make_shared<asio::steady_timer>(io_, timeout);
  ready_callbacks_.push_back(ReadyCallback{id, std::move(done), timer});
  timer->async_wait([this, id, timeout](std::error_code ec) {
    if (ec) return;
    auto it = std::find_if(ready_callbacks_.begin(), ready_callbacks_.end(),
                           [id](const ReadyCallback& c) { return c.id == id; });
    if (it == ready_callbacks_.end()) return;
    auto cb = std::move(it->done);
    ready_callbacks_.erase(it);
    cb(std::make_exception_ptr(TimeoutError("subscription to channel '" + name_ +
                                            "' not confirmed within " +
                                            std::to_string(timeout.count()) + " ms")));
  });
}

void Channel::confirmed() {
  subscribed_ = true;
  auto callbacks = std::move(ready_callbacks_);
  ready_callbacks_.clear();
  for (auto& c : callbacks) {
    c.timer->cancel();
    c.done(nullptr);
  }
  // A release may have been published while we were not listening: everyone re-checks.
  if (was_subscribed_) wake_all();
  was_subscribed_ = true;
}

void Channel::fail_pending(std::exception_ptr error) {
  auto callbacks = std::move(ready_callbacks_);
  ready_callbacks_.clear();
  for (auto& c : callbacks) {
    c.timer->cancel();
    c.done(error);
  }
}

bool Channel::take_wakeup() {
  if (wakeups_ == 0) return false;
  --wakeups_;
  return true;
}

void Channel::sleep(Waiter* w) {
  if (w->queued_) return;
  sleepers_.push_back(w);
  w->pos_ = std::prev(sleepers_.end());
  w->queued_ = true;
}

void Channel::cancel(Waiter* w) {
  if (!w->queued_) return;
  sleepers_.erase(w->pos_);
  w->queued_ = false;
}

void Channel::wake_one() { wake(1); }

void Channel::wake(int n) {
  while (n > 0 && !sleepers_.empty()) {
    Waiter* w = sleepers_.front();
    sleepers_.pop_front();
    w->queued_ = false;
    --n;
    w->wake();
  }
  // Wake-ups for waiters whose attempt is still in flight: they retry instead of sleeping.
  const int awake = std::max(refs_ - static_cast<int>(sleepers_.size()), 0);
  wakeups_ = static_cast<int>(std::min<long long>(static_cast<long long>(wakeups_) + n, awake));
}

void Channel::wake_all() {
  auto sleepers = std::move(sleepers_);
  sleepers_.clear();
  for (auto* w : sleepers) w->queued_ = false;
  wakeups_ = std::max(refs_ - static_cast<int>(sleepers.size()), 0);
  for (auto* w : sleepers) w->wake();
}

Subscriber::Subscriber(asio::io_context& io, std::shared_ptr<Connection> connection,
                       Duration linger, Duration subscription_timeout)
    : io_(io),
      primary_(std::move(connection)),
      linger_(linger),
      subscription_timeout_(subscription_timeout) {}

Subscriber::Subscriber(asio::io_context& io, Route route, std::function<void()> refresh,
                       Duration linger, Duration subscription_timeout)
    : io_(io),
      route_(std::move(route)),
      refresh_(std::move(refresh)),
      linger_(linger),
      subscription_timeout_(subscription_timeout) {}

Subscriber::~Subscriber() { close(); }

void Subscriber::close() {
  if (closed_) return;
  closed_ = true;
  if (heartbeat_timer_) heartbeat_timer_->cancel();
  auto error = std::make_exception_ptr(ClientClosedError("client closed"));
  if (primary_) primary_->close();
  for (auto& [raw, link] : links_) link->connection->close();
  for (auto& [name, ch] : channels_) {
    if (ch->linger_) ch->linger_->cancel();
    ch->fail_pending(error);
    // Sleeping waiters retry now; with the connections closed their attempt fails with
    // ClientClosedError instead of hanging until a timer that will never run.
    ch->wake_all();
  }
}

Subscriber::Link* Subscriber::link_for(const std::string& channel) {
  auto connection = route_ ? route_(channel) : primary_;
  if (!connection) return nullptr;
  auto& link = links_[connection.get()];
  if (!link) {
    link = std::make_unique<Link>();
    link->connection = connection;
    Link* raw = link.get();
    connection->set_push_handler([this, raw](Reply r) { on_push(*raw, r); });
    connection->set_state_handler([this, raw](bool up) { on_state(*raw, up); });
  }
  return link.get();
}

Subscriber::Link* Subscriber::link_of(const Channel& channel) {
  auto it = links_.find(channel.link_);
  return it == links_.end() ? nullptr : it->second.get();
}

void Subscriber::place(const std::shared_ptr<Channel>& ch, Link& link) {
  ch->link_ = link.connection.get();
  if (link.connection->ready()) {
    send_subscribe(link, {ch->name_});
  } else {
    link.connection->connect();  // subscribes every channel of the link after the handshake
  }
}

std::shared_ptr<Channel> Subscriber::join(const std::string& name, MessagePolicy policy) {
  assert_io_thread(io_);
  arm_heartbeat();
  auto it = channels_.find(name);
  if (it == channels_.end()) {
    auto ch = std::make_shared<Channel>(io_, name, std::move(policy));
    it = channels_.emplace(ch->name(), ch).first;
    if (Link* link = link_for(name)) {
      place(ch, *link);
    } else if (refresh_) {
      refresh_();  // placed by reroute() once a master is known
    }
  }
  auto& ch = it->second;
  if (ch->linger_) ch->linger_->cancel();
  ++ch->refs_;
  return ch;
}

std::shared_ptr<Channel> Subscriber::join_if_subscribed(const std::string& name) {
  auto it = channels_.find(name);
  if (it == channels_.end() || !it->second->subscribed()) return nullptr;
  auto& ch = it->second;
  if (ch->linger_) ch->linger_->cancel();
  ++ch->refs_;
  return ch;
}

void Subscriber::leave(const std::shared_ptr<Channel>& ch) {
  if (--ch->refs_ > 0 || closed_) return;
  ch->wakeups_ = 0;
  std::weak_ptr<Channel> weak = ch;
  if (!ch->linger_) ch->linger_ = std::make_unique<WaitTimer>(io_);
  ch->linger_->expires_after(linger_);
  ch->linger_->async_wait([this, weak](std::error_code ec) {
    auto c = weak.lock();
    if (ec || !c || c->refs_ > 0 || closed_) return;
    channels_.erase(c->name_);
    Link* link = link_of(*c);
    if (link && link->connection->ready()) send_unsubscribe(*link, c->name_);
  });
}

void Subscriber::send_subscribe(Link& link, const std::vector<std::string>& names) {
  std::vector<std::string> args{sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE"};
  args.insert(args.end(), names.begin(), names.end());
  if (metrics_) {
    for (const auto& name : names) metrics_->increment({"channel", name}, Counter::subscriptions, 1);
  }
  link.connection->execute(args, nullptr);
}

void Subscriber::send_unsubscribe(Link& link, const std::string& name) {
  // A server also sends "sunsubscribe" on its own when the channel's slot moves away; ours
  // are remembered so that their acknowledgements are not mistaken for that.
  if (sharded_) link.unsubscribing.insert(name);
  link.connection->execute({sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", name}, nullptr);
}

void Subscriber::arm_heartbeat() {
  if (heartbeat_ <= Duration{0} || closed_) return;
  if (!heartbeat_timer_) heartbeat_timer_ = std::make_unique<WaitTimer>(io_);
  if (heartbeat_timer_->expiry() > Clock::now()) return;  // armed
  heartbeat_timer_->expires_after(heartbeat_);
  heartbeat_timer_->async_wait([this](std::error_code ec) {
    if (ec || closed_) return;
    send_heartbeats();
    if (!channels_.empty()) arm_heartbeat();  // the next join() arms it again
  });
}

void Subscriber::send_heartbeats() {
  // A connection that has this many unanswered is behind (a paused server): another PING
  // would date nothing sooner, and the queue stays bounded.
  constexpr std::size_t kMaxUnanswered = 4;
  if (heartbeat_ <= Duration{0}) return;  // refused since the timer was armed
  for (auto& [raw, link] : links_) {
    if (!link->connection->ready() || link->pings.size() >= kMaxUnanswered) continue;
    const std::uint64_t number = ++pings_sent_;
    link->pings.emplace_back(number, Clock::now());
    link->connection->execute({"PING", std::to_string(number)}, nullptr);
  }
}

void Subscriber::on_pong(Link& link, const std::string& number) {
  // Answers come in order: the ones before this were lost with nothing (cannot happen on one
  // socket), or are this one.
  while (!link.pings.empty()) {
    const auto [sent_number, sent] = link.pings.front();
    link.pings.pop_front();
    if (std::to_string(sent_number) == number) {
      link.answered = sent;
      return;
    }
  }
}

void Subscriber::reroute() {
  if (closed_ || !route_) return;
  std::map<Link*, std::vector<std::string>> subscribe;
  for (auto& [key, ch] : channels_) {
    const std::string& name = ch->name();
    Link* link = link_for(name);
    if (!link) continue;
    if (link->connection.get() != ch->link_) {
      // The channel's slot has a new master: leave the old one, join the new one.
      Link* old = link_of(*ch);
      if (old && old->connection->ready() && ch->subscribed_) send_unsubscribe(*old, name);
      ch->subscribed_ = false;
      ch->link_ = link->connection.get();
      subscribe[link].push_back(name);
    } else if (!ch->subscribed_) {
      subscribe[link].push_back(name);  // dropped by the server, or never confirmed
    }
  }
  for (auto& [link, names] : subscribe) {
    if (link->connection->ready()) {
      send_subscribe(*link, names);
    } else {
      link->connection->connect();
    }
  }
}

void Subscriber::on_state(Link& link, bool connected) {
  if (closed_) return;
  Connection* raw = link.connection.get();
  // Heartbeats date messages on the socket they were answered on.
  link.pings.clear();
  link.answered.reset();
  if (!connected) {
    link.unsubscribing.clear();
    for (auto& [name, ch] : channels_) {
      if (ch->link_ == raw) ch->subscribed_ = false;
    }
    if (refresh_) refresh_();  // the server may be gone for good (failover)
    return;
  }
  // After every (re)connect nothing is subscribed on the new socket: subscribe everything
  // that still has users; lingering channels without users are dropped instead.
  std::erase_if(channels_,
                [raw](const auto& kv) { return kv.second->link_ == raw && kv.second->refs_ == 0; });
  std::vector<std::string> names;
  for (auto& [name, ch] : channels_) {
    if (ch->link_ == raw) names.push_back(ch->name());
  }
  if (!names.empty()) send_subscribe(link, names);
}

void Subscriber::on_push(Link& link, const Reply& reply) {
  if (reply.is_error() && !link.pings.empty() && refuses_ping(reply.str)) {
    // This user may not PING (ACL), or the command is renamed: messages go undated (their
    // users then count from what they know themselves, e.g. a grant's registration).
    heartbeat_ = Duration{0};
    link.pings.pop_front();
    return;
  }
  if (reply.is_error()) {
    if (reply.str.rfind("NOPERM", 0) == 0) {
      // The user may not subscribe (ACL): the reply names no channel, so every subscription
      // still unconfirmed on this link hears it now rather than at its timeout (its waiters
      // then poll, AcquireFsm).
      auto error = server_error(reply, "SUBSCRIBE");
      for (auto& [name, ch] : channels_) {
        if (ch->link_ == link.connection.get() && !ch->subscribed_) ch->fail_pending(error);
      }
      return;
    }
    // A subscription sent to a server that no longer has the slot (MOVED): learn the new
    // map; reroute() resubscribes what is not confirmed.
    if (refresh_) refresh_();
    return;
  }
  if (reply.is_array() && reply.elements.size() == 2 && reply.elements[0].str == "pong") {
    on_pong(link, reply.elements[1].str);
    return;
  }
  if (!reply.is_array() || reply.elements.size() < 3) return;
  const std::string& kind = reply.elements[0].str;
  const std::string& name = reply.elements[1].str;
  if (kind == "sunsubscribe") {
    auto mine = link.unsubscribing.find(name);
    if (mine != link.unsubscribing.end()) {
      link.unsubscribing.erase(mine);
      return;
    }
  }
  auto it = channels_.find(name);
  if (it == channels_.end()) return;
  auto ch = it->second;  // keep alive while handlers run
  if (kind == "message" || kind == "smessage") {
    if (ch->policy_) ch->policy_(*ch, reply.elements[2].str, link.answered);
  } else if (kind == "subscribe" || kind == "ssubscribe") {
    if (ch->link_ == link.connection.get() && !ch->subscribed_) ch->confirmed();
  } else if (kind == "sunsubscribe" && ch->link_ == link.connection.get()) {
    // Not ours: the server dropped the channel because its slot moved to another master.
    ch->subscribed_ = false;
    if (refresh_) refresh_();
  }
}

}  // namespace redisync::net
