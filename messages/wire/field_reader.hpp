// Internal to messages/wire: typed reads of client message fields with the
// error rules of client_decode.hpp. Every read_* returns true on success;
// on failure it records the error (the first one wins: later failures do
// not overwrite it) in the decode_result and returns false. Field names in
// messages are dotted paths as the client wrote them ("params.top_p",
// "params.stop[3]"), so that the message says what to fix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>

#include "messages/wire/client_decode.hpp"
#include "messages/wire/msgpack_bounded.hpp"

namespace cortex::wire::detail {

enum class field_status { known, unknown, failed };

// "1.5", "-3", "1e+30": a number for an error message.
std::string format_number(double v);
// `"text"` when short printable UTF-8, else "<N-byte string>": safe to put
// client-supplied text into an error message.
std::string quote_for_message(std::string_view s);

class field_reader {
 public:
  field_reader(decode_result& out, const decode_limits& lim) : lim(lim), out_(out) {}

  bool failed() const { return !out_.ok(); }
  // Records `code` / `message` unless an error is already recorded. Returns false.
  bool fail(errc code, std::string message);
  // 400 malformed: "<field> must be <expected>, got <msgpack type of o>".
  bool type_error(const std::string& field, const char* expected, const msgpack::object& o);
  // 400 invalid_param: "<field> must be <range>, got <value>".
  bool range_error(const std::string& field, const std::string& range, const std::string& value);

  // Keys of `map` (REQUIRES: a map) are strings, each at most once; else 400
  // malformed naming `where` ("the message", "params"...).
  bool check_keys(const msgpack::object& map, const std::string& where);

  bool read_bool(const msgpack::object& o, const std::string& field, bool& out);
  // A msgpack integer >= 0 (negative or float: invalid_param) not above `max`
  // (`range` words the allowed range for the message, e.g. "in 0..20").
  bool read_uint(const msgpack::object& o, const std::string& field, uint64_t max, const char* range, uint64_t& out);
  // A msgpack integer in [lo, hi] (float: invalid_param).
  bool read_int(const msgpack::object& o, const std::string& field, int64_t lo, int64_t hi, const char* range,
                int64_t& out);
  // Any msgpack number that is finite and fits a float.
  bool read_float(const msgpack::object& o, const std::string& field, double& out);
  // A msgpack string holding valid UTF-8.
  bool read_text(const msgpack::object& o, const std::string& field, std::string& out);
  // A request id: a string of 1..max_id_bytes bytes of valid UTF-8.
  bool read_id(const msgpack::object& o, const std::string& field, std::string& out);
  // A token id: an integer in [0, 2^31) (< vocab is intake's check).
  bool read_token_id(const msgpack::object& o, const std::string& field, int32_t& out);
  // An array of at most `max` token ids (more: 413 too_large).
  bool read_token_ids(const msgpack::object& o, const std::string& field, uint32_t max, std::vector<int32_t>& out);

  // Calls on_entry(key, value) for each entry of `map` in order (REQUIRES:
  // check_keys passed) and lists the keys it answers `unknown` for as
  // ignored, prefixed by `prefix` ("" or "params."). Stops at `failed`.
  template <class F>
  bool for_each_field(const msgpack::object& map, const std::string& prefix, F&& on_entry) {
    for (uint32_t i = 0; i < map.via.map.size; ++i) {
      const msgpack::object_kv& kv = map.via.map.ptr[i];
      const std::string_view key = str_view(kv.key);
      const field_status s = on_entry(key, kv.val);
      if (s == field_status::failed) return false;
      if (s == field_status::unknown) note_ignored(prefix, key);
    }
    return true;
  }

  // Adds "<prefix><key>" to the ignored list, within lim.max_ignored.
  void note_ignored(const std::string& prefix, std::string_view key);
  // Appends the "... and N more" entry if keys were left off. Call once, last.
  void finish_ignored();

  static field_status status(bool ok) { return ok ? field_status::known : field_status::failed; }

  const decode_limits& lim;

 private:
  decode_result& out_;
  uint64_t n_ignored_unlisted_ = 0;
};

}  // namespace cortex::wire::detail
