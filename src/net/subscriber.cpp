#include "net/subscriber.h"

#include <algorithm>

#include "redisync/errors.h"

namespace redisync::net {

Channel::~Channel() {
  for (auto* w : sleepers_) w->queued_ = false;
}

void Channel::when_subscribed(std::function<void(std::exception_ptr)> done, Duration timeout) {
  if (subscribed_) return done(nullptr);
  const auto id = next_callback_id_++;
  auto timer = std::make_shared<asio::steady_timer>(linger_.get_executor(), timeout);
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
      connection_(std::move(connection)),
      linger_(linger),
      subscription_timeout_(subscription_timeout) {
  connection_->set_push_handler([this](Reply r) { on_push(r); });
  connection_->set_state_handler([this](bool up) { on_state(up); });
}

Subscriber::~Subscriber() { close(); }

void Subscriber::close() {
  if (closed_) return;
  closed_ = true;
  auto error = std::make_exception_ptr(ClientClosedError("client closed"));
  connection_->close();
  for (auto& [name, ch] : channels_) {
    ch->linger_.cancel();
    ch->fail_pending(error);
    // Sleeping waiters retry now; with the connections closed their attempt fails with
    // ClientClosedError instead of hanging until a timer that will never run.
    ch->wake_all();
  }
}

std::shared_ptr<Channel> Subscriber::join(const std::string& name, MessagePolicy policy) {
  auto it = channels_.find(name);
  if (it == channels_.end()) {
    auto ch = std::make_shared<Channel>(io_, name, std::move(policy));
    it = channels_.emplace(name, ch).first;
    if (connection_->ready()) {
      send_subscribe({name});
    } else {
      connection_->connect();  // subscribes every channel once the handshake is done
    }
  }
  auto& ch = it->second;
  ch->linger_.cancel();
  ++ch->refs_;
  return ch;
}

void Subscriber::leave(const std::shared_ptr<Channel>& ch) {
  if (--ch->refs_ > 0 || closed_) return;
  ch->wakeups_ = 0;
  std::weak_ptr<Channel> weak = ch;
  ch->linger_.expires_after(linger_);
  ch->linger_.async_wait([this, weak](std::error_code ec) {
    auto c = weak.lock();
    if (ec || !c || c->refs_ > 0 || closed_) return;
    channels_.erase(c->name_);
    if (connection_->ready()) {
      connection_->execute({sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", c->name_}, nullptr);
    }
  });
}

void Subscriber::send_subscribe(const std::vector<std::string>& names) {
  std::vector<std::string> args{sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE"};
  args.insert(args.end(), names.begin(), names.end());
  connection_->execute(args, nullptr);
}

void Subscriber::on_state(bool connected) {
  if (closed_) return;
  if (!connected) {
    for (auto& [name, ch] : channels_) ch->subscribed_ = false;
    return;
  }
  // After every (re)connect nothing is subscribed on the new socket: subscribe everything
  // that still has users; lingering channels without users are dropped instead.
  std::erase_if(channels_, [](const auto& kv) { return kv.second->refs_ == 0; });
  std::vector<std::string> names;
  for (auto& [name, ch] : channels_) names.push_back(name);
  if (!names.empty()) send_subscribe(names);
}

void Subscriber::on_push(const Reply& reply) {
  if (!reply.is_array() || reply.elements.size() < 3) return;
  const std::string& kind = reply.elements[0].str;
  const std::string& name = reply.elements[1].str;
  auto it = channels_.find(name);
  if (it == channels_.end()) return;
  auto ch = it->second;  // keep alive while handlers run
  if (kind == "message" || kind == "smessage") {
    if (ch->policy_) ch->policy_(*ch, reply.elements[2].str);
  } else if (kind == "subscribe" || kind == "ssubscribe") {
    if (!ch->subscribed_) ch->confirmed();
  }
}

}  // namespace redisync::net
