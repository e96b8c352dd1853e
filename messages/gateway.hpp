// Messages between cortexd, the gateway actor and its ZeroMQ thread.
#pragma once

#include <cstdint>
#include <string>

namespace cortex {

// A frame from a client, as the ZeroMQ thread received it (unchecked).
struct gateway_inbound {
  std::string peer;
  std::string payload;
  bool delimiter = false;
  bool extra_frames = false;
  std::string user_id;  // with CURVE: the key id the ZAP handler bound the connection to
  std::string peer_address;  // the client's address, for logs ("" when unknown)
};

// An HTTP request as the HTTP gateway's I/O thread read it (complete head
// and body; the body is unchecked).
struct http_inbound {
  uint64_t conn = 0;           // connection id, unique for the server's life
  std::string method;          // "GET", "POST"...
  std::string target;          // path and query as sent
  std::string content_type;
  std::string body;
  std::string peer;            // the client's address ("ip:port"), for logs
  std::string key_id;          // the API key the head check bound it to ("" with access control off)
};

// A request head, complete, before its body is read (http_server's on_head).
struct http_head {
  std::string method;
  std::string target;
  std::string authorization;
  std::string api_key;  // `x-api-key` (Anthropic's clients send the key there)
  std::string peer;
};

// What `models` reports about the loaded model.
struct model_info {
  std::string name;
  std::string arch;   // "llama", "qwen2"
  uint32_t n_ctx = 0;
  uint32_t n_vocab = 0;
  std::string quant;  // "q4_0"...
  uint64_t n_params = 0;
};

enum class health_status : uint8_t { starting, ready, draining };

}  // namespace cortex
