// Render helpers shared by the chat template tests: a template text and a
// JSON context in, the rendered text (or the error) out, with a GoogleTest
// failure when the outcome is not the one the test expects.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "chat/chat_template.hpp"

namespace cortex::testing {

inline expected<std::string> render_template(const std::string& text, const std::string& context_json = "{}",
                                              const chat::render_env& env = {}) {
  auto t = chat_template::parse(text);
  if (!t) return fail(t.error().code, "parse: " + t.error().message);
  return t->render(nlohmann::ordered_json::parse(context_json), env);
}

// The rendered text; a failed render is a test failure.
inline std::string render_ok(const std::string& text, const std::string& context_json = "{}") {
  auto r = render_template(text, context_json);
  EXPECT_TRUE(r.has_value()) << text << "\n-> " << r.error();
  return r.has_value() ? *r : "<error: " + r.error().message + ">";
}

// The error of a render (or parse) expected to fail.
inline std::string render_fails(const std::string& text, const std::string& context_json = "{}") {
  auto r = render_template(text, context_json);
  EXPECT_FALSE(r.has_value()) << text << "\n-> rendered: " << *r;
  return r.has_value() ? "" : r.error().message;
}

// The error of a template expected not to parse.
inline std::string parse_fails(const std::string& text) {
  auto t = chat_template::parse(text);
  EXPECT_FALSE(t.has_value()) << text;
  return t.has_value() ? "" : t.error().message;
}

}  // namespace cortex::testing
