#include "actors/auth/access_policy.hpp"

#include <algorithm>

#include "actors/auth/secrets.hpp"

namespace cortex::auth {

admission_ticket::admission_ticket(std::shared_ptr<access_policy> policy, std::string key_id, uint32_t prompt_tokens,
                                   uint32_t max_tokens, bool group_open)
    : policy_(std::move(policy)),
      key_id_(std::move(key_id)),
      prompt_tokens_(prompt_tokens),
      max_tokens_(max_tokens),
      open_(group_open) {}

admission_ticket::~admission_ticket() {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return;
  done_ = true;
  policy_->release(key_id_, prompt_tokens_, max_tokens_, static_cast<uint32_t>(std::min<uint64_t>(completion_, max_tokens_)));
}

void admission_ticket::release_if_done() {
  if (done_ || members_ > 0 || open_) return;
  done_ = true;
  policy_->release(key_id_, prompt_tokens_, max_tokens_, static_cast<uint32_t>(std::min<uint64_t>(completion_, max_tokens_)));
}

void admission_ticket::finish(uint32_t completion_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || members_ == 0) return;
  --members_;
  completion_ += completion_tokens;
  release_if_done();
}

void admission_ticket::join(uint32_t prompt_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || !open_) return;
  ++members_;
  prompt_tokens_ += prompt_tokens;
  if (prompt_tokens) policy_->charge_unchecked(key_id_, prompt_tokens);
}

void admission_ticket::close_group() {
  std::lock_guard<std::mutex> lock(mu_);
  open_ = false;
  release_if_done();
}

void admission_ticket::revert() {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return;
  done_ = true;
  policy_->revert(key_id_, prompt_tokens_, max_tokens_);
}

std::shared_ptr<access_policy> access_policy::create(keys_config cfg, clock_fn clock) {
  return std::shared_ptr<access_policy>(new access_policy(std::move(cfg), std::move(clock)));
}

access_policy::access_policy(keys_config cfg, clock_fn clock) : clock_(std::move(clock)) {
  std::lock_guard<std::mutex> lock(mu_);
  apply(std::move(cfg));
}

std::chrono::steady_clock::time_point access_policy::now() const {
  return clock_ ? clock_() : std::chrono::steady_clock::now();
}

void access_policy::apply(keys_config cfg) {
  const auto t = now();
  std::map<std::string, key_state> next;
  for (auto& k : cfg.keys) {
    key_state st;
    auto old = keys_.find(k.id);
    if (old != keys_.end()) st = std::move(old->second);  // buckets, counters and running requests carry over
    const tier_limits& lim = cfg.tiers.at(k.tier);
    auto adopt = [&](std::optional<token_bucket>& b, const std::optional<double>& per_minute) {
      if (!per_minute) {
        b.reset();
      } else if (b) {
        b->set_per_minute(*per_minute, t);
      } else {
        b.emplace(*per_minute, t);
      }
    };
    adopt(st.requests, lim.requests_per_minute);
    adopt(st.tokens, lim.tokens_per_minute);
    st.revoked = false;
    st.entry = std::move(k);
    next.emplace(st.entry.id, std::move(st));
  }
  for (auto& [id, st] : keys_) {  // removed keys stay, revoked, while their requests run
    if (next.count(id) || st.use.running == 0) continue;
    st.revoked = true;
    next.emplace(id, std::move(st));
  }
  keys_ = std::move(next);
  tiers_ = std::move(cfg.tiers);
}

void access_policy::reload(keys_config cfg) {
  std::lock_guard<std::mutex> lock(mu_);
  apply(std::move(cfg));
}

std::optional<std::string> access_policy::authenticate_secret(std::string_view secret) const {
  const std::string h = sha256_hex(secret);
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<std::string> found;
  for (const auto& [id, st] : keys_) {  // every key is compared: the time does not depend on which one matched
    if (!st.revoked && equal_constant_time(h, st.entry.sha256) && !found) found = id;
  }
  return found;
}

std::optional<std::string> access_policy::authenticate_curve(std::string_view z85_public) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, st] : keys_) {
    if (!st.revoked && !st.entry.curve_public.empty() && st.entry.curve_public == z85_public) return id;
  }
  return std::nullopt;
}

std::optional<uint32_t> access_policy::max_tokens_cap(const std::string& key_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(key_id);
  if (it == keys_.end() || it->second.revoked) return std::nullopt;
  return tiers_.at(it->second.entry.tier).max_tokens;
}

namespace {

std::string fmt_rate(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

access_policy::admit_result access_policy::admit(const admission_request& r, bool group_open) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(r.key_id);
  if (it == keys_.end() || it->second.revoked) {
    if (it != keys_.end()) ++it->second.use.rejected_revoked;
    return {{errc::unauthenticated, "API key '" + r.key_id + "' is no longer valid (revoked); use another key", 0}, nullptr};
  }
  key_state& st = it->second;
  const tier_limits& lim = tiers_.at(st.entry.tier);
  const std::string who = "key '" + r.key_id + "' (tier '" + st.entry.tier + "')";
  auto forbid = [&](std::string msg) {
    ++st.use.rejected_forbidden;
    return admit_result{{errc::forbidden, std::move(msg), 0}, nullptr};
  };
  if (lim.max_tokens && r.max_tokens_asked > *lim.max_tokens)
    return forbid("max_tokens " + std::to_string(r.max_tokens_asked) + " is above the cap of " + who + ", " +
                  std::to_string(*lim.max_tokens) + "; ask for at most that");
  if (lim.max_priority && r.priority > *lim.max_priority)
    return forbid("priority " + std::to_string(r.priority) + " is above what " + who + " may use, " +
                  std::to_string(*lim.max_priority));
  const double charge = double(r.prompt_tokens) + double(r.max_tokens);
  if (lim.tokens_per_minute && charge > *lim.tokens_per_minute)
    return forbid("this request needs " + fmt_rate(charge) + " tokens (" + std::to_string(r.prompt_tokens) + " prompt + " +
                  std::to_string(r.max_tokens) + " max_tokens), more than " + who + " may use in a minute, " +
                  fmt_rate(*lim.tokens_per_minute) + "; shorten the prompt or lower max_tokens");

  auto limited = [&](std::string msg, uint64_t wait_ms) {
    ++st.use.rejected_limited;
    const auto ms = static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(wait_ms, 1), 3600000));
    return admit_result{{errc::rate_limited, std::move(msg), ms}, nullptr};
  };
  if (lim.max_concurrent && st.use.running >= *lim.max_concurrent)
    return limited(who + " already has " + std::to_string(st.use.running) + " requests running, the most its tier allows; " +
                       "retry when one ends",
                   1000);
  const auto t = now();
  const uint64_t wait_requests = st.requests ? st.requests->wait_ms(1, t) : 0;
  const uint64_t wait_tokens = st.tokens ? st.tokens->wait_ms(charge, t) : 0;
  if (wait_requests || wait_tokens) {
    const bool by_requests = wait_requests >= wait_tokens;
    return limited(who + " is over its " +
                       (by_requests ? fmt_rate(*lim.requests_per_minute) + " requests per minute"
                                    : fmt_rate(*lim.tokens_per_minute) + " tokens per minute (this request needs " +
                                          fmt_rate(charge) + ")") +
                       "; retry after the wait given",
                   std::max(wait_requests, wait_tokens));
  }
  if (st.requests) st.requests->take(1, t);
  if (st.tokens) st.tokens->take(charge, t);
  ++st.use.running;
  ++st.use.admitted;
  return {status::ok(),
          std::make_shared<admission_ticket>(shared_from_this(), r.key_id, r.prompt_tokens, r.max_tokens, group_open)};
}

void access_policy::end_one(std::map<std::string, key_state>::iterator it) {
  if (it->second.use.running > 0) --it->second.use.running;
  if (it->second.revoked && it->second.use.running == 0) keys_.erase(it);  // its last request ended
}

void access_policy::release(const std::string& key_id, uint32_t prompt_tokens, uint32_t max_tokens, uint32_t completion_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(key_id);
  if (it == keys_.end()) return;
  key_state& st = it->second;
  const uint32_t used = std::min(completion_tokens, max_tokens);
  if (st.tokens) st.tokens->refund(double(max_tokens - used), now());
  st.use.tokens += uint64_t(prompt_tokens) + used;
  end_one(it);
}

void access_policy::charge_unchecked(const std::string& key_id, uint32_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(key_id);
  if (it != keys_.end() && it->second.tokens) it->second.tokens->take(tokens, now());
}

void access_policy::revert(const std::string& key_id, uint32_t prompt_tokens, uint32_t max_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(key_id);
  if (it == keys_.end()) return;
  key_state& st = it->second;
  const auto t = now();
  if (st.requests) st.requests->refund(1, t);
  if (st.tokens) st.tokens->refund(double(prompt_tokens) + double(max_tokens), t);
  if (st.use.admitted > 0) --st.use.admitted;
  end_one(it);
}

std::vector<key_usage> access_policy::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<key_usage> out;
  for (const auto& [id, st] : keys_) {
    key_usage u = st.use;
    u.id = id;
    u.tier = st.entry.tier;
    u.revoked = st.revoked;
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace cortex::auth
