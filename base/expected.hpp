// A value or an error (base/status.hpp: code and message), for plain code.
// Functions that can fail on outside input return expected<T>; nothing
// below actors/ throws across its API.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/status.hpp"

namespace cortex {

template <class T>
class expected {
 public:
  expected(T value) : v_(std::move(value)) {}               // NOLINT: implicit by design
  expected(status err) : v_(std::move(err)) {}              // NOLINT: REQUIRES !err.is_ok()
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  // REQUIRES: !has_value().
  const status& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, status> v_;
};

}  // namespace cortex
