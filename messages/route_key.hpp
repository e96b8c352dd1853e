// A route key: the client_id a relay (a gateway, the cluster router)
// submits a request under on its client's behalf, so that the events the
// engine sends back for it find their route: "g17" from a gateway, "r5.2"
// (the router's id and attempt) from the router. It is not the client's own
// id, which the relay restores on every event before it goes out.
//
// In messages it travels as the request's and the events' `client_id` (a
// string: an embedding program's sink gets its own ids there, and the wire
// format has one id field); inside the relays it is this type, so that a
// key and a client id cannot be mixed up. Convert at that boundary only:
// route_key::of_client_id when an event arrives, str() when a submit leaves.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace cortex {

class route_key {
 public:
  route_key() = default;
  explicit route_key(std::string text) : text_(std::move(text)) {}

  // The key an event of a relayed request names in its client_id.
  static route_key of_client_id(const std::string& client_id) { return route_key(client_id); }

  // The text to set as the relayed request's client_id.
  const std::string& str() const { return text_; }
  bool empty() const { return text_.empty(); }

  friend bool operator==(const route_key& a, const route_key& b) { return a.text_ == b.text_; }
  friend bool operator!=(const route_key& a, const route_key& b) { return a.text_ != b.text_; }
  friend bool operator<(const route_key& a, const route_key& b) { return a.text_ < b.text_; }

 private:
  std::string text_;
};

}  // namespace cortex

template <>
struct std::hash<cortex::route_key> {
  size_t operator()(const cortex::route_key& k) const noexcept { return std::hash<std::string>{}(k.str()); }
};
