// A value or an error message, for CAF-free code (model/, apps/ helpers).
// Errors are values: functions that can fail on outside input return
// expected<T>; nothing in model/ throws across its API.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace cortex {

struct error_info {
  std::string message;  // says what is wrong and, where possible, what to fix
};

template <class T>
class expected {
 public:
  expected(T value) : v_(std::move(value)) {}                // NOLINT: implicit by design
  expected(error_info err) : v_(std::move(err)) {}          // NOLINT
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::string& error() const { return std::get<1>(v_).message; }

 private:
  std::variant<T, error_info> v_;
};

inline error_info make_error(std::string msg) { return error_info{std::move(msg)}; }

// For functions with no value: an empty message means success.
struct status {
  std::string message;
  static status ok() { return {}; }
  bool is_ok() const { return message.empty(); }
  explicit operator bool() const { return is_ok(); }
};
inline status fail(std::string msg) { return status{std::move(msg)}; }

}  // namespace cortex
