// Encoding server -> client messages (protocol.md "Server to client"). Each
// is one msgpack map with `v` = 1, `t`, then `id` and `seq` when the reply
// belongs to a request (`id` non-empty; `seq` is the caller's per-request
// counter, from 0) and the type's own keys. CAF-free; nothing throws except
// std::bad_alloc.
//
// Shapes chosen where protocol.md leaves them open:
//   - stats, health and models put their fields at the top level of the map
//     (`models` under the key "models"); a reply to a ping/stats/health/
//     models that carried an id echoes it (with seq).
//   - finished.stop.value is the token id (uint) for kind eos|token, the stop
//     string for kind string.
//   - `text` is left out of chunk and finished when the client set
//     want.text = false; `token_ids` / `logprobs` appear only when asked.
//   - requests_finished lists every finish reason, 0 when none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/engine.hpp"
#include "messages/gateway.hpp"
#include "messages/errors.hpp"
#include "messages/request.hpp"

namespace cortex::wire {

using wire_bytes = std::vector<uint8_t>;

// Which optional outputs a request asked for (its `want`), and what an
// encoder request's finished carries instead of a stop (embed: `embedding`,
// rerank: `score`).
struct output_fields {
  bool text = true;
  bool token_ids = false;
  bool logprobs = false;
  bool embedding = false;
  bool score = false;
};
output_fields output_fields_of(const generation_request& r);

struct latency_percentiles {
  double p50 = 0, p90 = 0, p99 = 0;
};

// Everything the `stats` reply reports: the engine's counters plus the
// gateway's own.
// One API key's figures (access control on; auth.md): by key id, never the secret.
struct key_stats {
  std::string id, tier;
  bool revoked = false;  // removed by a reload, requests still running
  uint32_t running = 0;
  uint64_t admitted = 0, rejected_forbidden = 0, rejected_limited = 0, rejected_revoked = 0, tokens = 0;
};

struct server_stats {
  engine_stats engine;              // finished_by_reason indexed by finish_reason
  uint64_t malformed_messages = 0;  // counted by the gateway
  latency_percentiles ttft_ms;      // time to first token
  latency_percentiles itl_ms;       // inter-token latency
  double uptime_s = 0;
  bool access_control = false;      // true: `keys` (a map by key id) is sent
  std::vector<key_stats> keys;
};

using cortex::health_status;  // messages/gateway.hpp
const char* health_status_name(health_status s);

using cortex::model_info;  // messages/gateway.hpp

// `ignored`: decode_result::ignored of the submit; tags and id come from `a`.
wire_bytes encode_accepted(const request_accepted& a, uint64_t seq, const std::vector<std::string>& ignored);
wire_bytes encode_chunk(const request_chunk& c, uint64_t seq, const output_fields& want);
wire_bytes encode_finished(const request_finished& f, uint64_t seq, const output_fields& want);
// `id` "" when the message that failed had no readable id (then no seq).
// code/name from e.code; retryable and retry_after_ms from errc_retryable;
// `supported: [1]` for unsupported_version. `terminal` (protocol.md): true
// when this error is the request's terminal message (its submit was
// rejected: seq 0); false when it only rejects another message naming a
// live request's id, or a message that is no request (then no seq).
wire_bytes encode_error(const std::string& id, uint64_t seq, const status& e, bool terminal);
// `nonce`: the ping's nonce as msgpack bytes (decode_result::nonce), copied
// verbatim; empty: no nonce key.
wire_bytes encode_pong(const std::string& id, uint64_t seq, const std::vector<uint8_t>& nonce, uint64_t server_time_ms);
wire_bytes encode_stats(const std::string& id, uint64_t seq, const server_stats& s);
wire_bytes encode_health(const std::string& id, uint64_t seq, health_status status, bool model_loaded);
wire_bytes encode_models(const std::string& id, uint64_t seq, const std::vector<model_info>& models);

}  // namespace cortex::wire
