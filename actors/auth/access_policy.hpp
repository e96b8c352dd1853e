// Access control (../shared/docs/auth.md): who a credential belongs to and
// what that key's tier lets it do. One CAF-free policy object shared by every
// gateway and the intake; thread-safe (one internal lock).
//
// Flow: a gateway turns a credential into a key id (authenticate_secret for
// HTTP's Bearer and the wire's `auth` field, authenticate_curve for the ZAP
// handler); 401 when it names no key. Intake, once the prompt is tokenized,
// calls admit(): the key must still exist (a key revoked by a reload gets
// 401), the tier must allow the request (403), and the key's buckets and
// concurrency must have room (429 with the wait). An admitted request gets a
// ticket; its session finishes the ticket at its terminal event (any
// reason), which frees the concurrency slot and refunds the unused part of
// max_tokens. A refused request consumes nothing.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/auth/keys_file.hpp"
#include "actors/auth/token_bucket.hpp"
#include "messages/errors.hpp"

namespace cortex::auth {

// What a request asks of its key's tier.
struct admission_request {
  std::string key_id;
  uint32_t prompt_tokens = 0;
  uint32_t max_tokens = 0;        // after capping to the context: charged at admission
  uint32_t max_tokens_asked = 0;  // as the request asked (0: not given; checked against the cap)
  int32_t priority = 0;
};

// Per-key figures for `stats` and /metrics (never the secret).
struct key_usage {
  std::string id;
  std::string tier;
  bool revoked = false;             // gone from the file, requests still running
  uint32_t running = 0;
  uint64_t admitted = 0;
  uint64_t rejected_forbidden = 0;  // 403
  uint64_t rejected_limited = 0;    // 429
  uint64_t rejected_revoked = 0;    // 401 after a reload removed the key
  uint64_t tokens = 0;              // prompt + completion tokens of ended requests
};

class access_policy;

// An admitted request's hold on its key (a concurrency slot and the charged
// tokens), shared by the engine sequences the request became: one, or
// several for an HTTP request with n > 1 choices or several embedding
// inputs (a group: one request for the tier, auth.md "max_concurrent:
// requests admitted"). Each member's finish() adds its completion tokens;
// once every member has finished and the group is closed (no member can
// join any more), the slot is released and the unused part of max_tokens
// refunded. A ticket destroyed unreleased (a session that died without a
// terminal event: a bug) releases with what it has, so no slot leaks.
// Thread-safe (members end on different threads).
class admission_ticket {
 public:
  // `group_open`: more members may join() until close_group().
  admission_ticket(std::shared_ptr<access_policy> policy, std::string key_id, uint32_t prompt_tokens, uint32_t max_tokens,
                   bool group_open = false);
  admission_ticket(const admission_ticket&) = delete;
  admission_ticket& operator=(const admission_ticket&) = delete;
  ~admission_ticket();
  // One member ended (any reason) having generated `completion_tokens`.
  void finish(uint32_t completion_tokens);
  // Another member of the admitted request: its own prompt tokens are
  // charged without a check (the request was admitted; the bucket may go
  // into debt, delaying the key's next requests). REQUIRES: the group is open.
  void join(uint32_t prompt_tokens);
  // No member joins any more (all did, or the request ended early).
  void close_group();
  // Undoes the admission as if it never happened (the request was refused
  // later, e.g. the server's own queue was full): everything charged is
  // refunded. Instead of finish(), before any member joined; once.
  void revert();

 private:
  void release_if_done();  // REQUIRES: mu_ held

  std::shared_ptr<access_policy> policy_;
  std::string key_id_;
  std::mutex mu_;
  uint32_t prompt_tokens_, max_tokens_;
  uint32_t members_ = 1;     // joined and not finished
  uint64_t completion_ = 0;  // of the finished members
  bool open_;
  bool done_ = false;
};

class access_policy : public std::enable_shared_from_this<access_policy> {
 public:
  using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

  // REQUIRES: `cfg` came from parse_keys_file (consistent).
  static std::shared_ptr<access_policy> create(keys_config cfg, clock_fn clock = {});

  // The key id a secret belongs to, or nullopt. The secret is hashed and the
  // hash compared with every key's in constant time (no early exit).
  std::optional<std::string> authenticate_secret(std::string_view secret) const;
  // The key id a CURVE client public key (Z85) is listed for, or nullopt.
  std::optional<std::string> authenticate_curve(std::string_view z85_public) const;

  // Admits a request of `r.key_id` or says why not: 401 unauthenticated (the
  // key is no longer in the file), 403 forbidden (max_tokens or priority
  // above the tier's cap, or a charge no bucket could ever hold), 429
  // rate_limited with retry_after_ms (a bucket lacks tokens, or
  // max_concurrent requests are running). On success the ticket holds the
  // charge (prompt_tokens + max_tokens) and the concurrency slot.
  struct admit_result {
    status error;                       // ok: admitted
    std::shared_ptr<admission_ticket> ticket; // when admitted
  };
  // `group_open`: the request has more members, which join() the ticket.
  admit_result admit(const admission_request& r, bool group_open = false);

  // Replaces tiers and keys (a reloaded file). Running requests keep their
  // admission; surviving keys keep their buckets (clamped to the new tier);
  // a removed key's next admit is 401.
  void reload(keys_config cfg);

  // The max_tokens a request gets when it does not ask (the tier's cap
  // bounds the default rather than forbidding it); nullopt: no cap.
  std::optional<uint32_t> max_tokens_cap(const std::string& key_id) const;

  std::vector<key_usage> usage() const;

 private:
  friend class admission_ticket;
  struct key_state {
    key_entry entry;
    std::optional<token_bucket> requests, tokens;
    bool revoked = false;  // gone from the file, requests still running
    key_usage use;         // the counters (id, tier, revoked are filled by usage())
  };

  access_policy(keys_config cfg, clock_fn clock);
  void apply(keys_config cfg);  // REQUIRES: mu_ held
  void release(const std::string& key_id, uint32_t prompt_tokens, uint32_t max_tokens, uint32_t completion_tokens);
  void revert(const std::string& key_id, uint32_t prompt_tokens, uint32_t max_tokens);
  void charge_unchecked(const std::string& key_id, uint32_t tokens);
  // A request of `it` ended: its slot is free; a revoked key is forgotten with its last request. REQUIRES: mu_ held.
  void end_one(std::map<std::string, key_state>::iterator it);
  std::chrono::steady_clock::time_point now() const;

  clock_fn clock_;
  mutable std::mutex mu_;
  std::map<std::string, tier_limits> tiers_;
  std::map<std::string, key_state> keys_;  // by id; revoked entries stay while requests run
};

}  // namespace cortex::auth
