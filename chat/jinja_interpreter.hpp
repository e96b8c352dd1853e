// Renders a parsed template: Jinja2 3.1 semantics with the transformers
// environment (globals raise_exception, strftime_now, namespace, range,
// dict; loopcontrols). Scoping as Jinja2: a for iteration and a macro call
// open a scope, if/else do not (a set inside a top-level if is visible
// after it); namespace() carries state across iterations.
#pragma once

#include <ctime>
#include <functional>
#include <string>

#include "chat/jinja_parser.hpp"
#include "chat/jinja_value.hpp"
#include "base/expected.hpp"

namespace cortex::chat {

struct render_limits {
  size_t max_output_bytes = 16u << 20;
  uint64_t max_steps = 2'000'000;  // statements executed + loop iterations
  int max_call_depth = 64;          // nested macro calls
};

struct render_env {
  // The clock strftime_now formats (local time in production; fixed in tests).
  std::function<std::tm()> now;
  render_limits limits;
};

// `variables` must be a dict (the render context). A raise_exception(msg)
// fails with exactly msg; other errors start with "line N: ".
expected<std::string> render_parsed(const parsed_template& t, const value& variables, const render_env& env);

}  // namespace cortex::chat
