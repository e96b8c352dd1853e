// The fixed date shared/golden/chat renders strftime_now with:
// 2026-11-23 00:00:00 (a Monday).
#pragma once

#include <ctime>

#include "chat/jinja_interpreter.hpp"

namespace cortex::testing {

inline chat::render_env fixed_chat_clock() {
  chat::render_env env;
  env.now = [] {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 10;
    tm.tm_mday = 23;
    tm.tm_wday = 1;
    tm.tm_yday = 326;
    return tm;
  };
  return env;
}

}  // namespace cortex::testing
