// Every case of shared/golden/chat/cases.json (rendered by Python's jinja2
// the way transformers does) must render byte for byte; error cases must
// fail with the template's raise_exception message.
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "chat/chat_template.hpp"
#include "tests/chat/chat_fixed_clock.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

std::string chat_dir() { return testing::shared_dir() + "/golden/chat"; }

nlohmann::ordered_json load_cases() {
  return nlohmann::ordered_json::parse(testing::read_file(chat_dir() + "/cases.json"), nullptr, false);
}

chat_render_input input_of(const nlohmann::ordered_json& c) {
  chat_render_input in;
  in.messages = c["messages"];
  in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
  if (c["bos_token"].is_string()) in.bos_token = c["bos_token"].get<std::string>();
  if (c["eos_token"].is_string()) in.eos_token = c["eos_token"].get<std::string>();
  in.extra = c["vars"];
  return in;
}

TEST(chat_template_golden, every_case_matches_python_jinja2) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const auto doc = load_cases();
  ASSERT_TRUE(doc.is_object()) << "cannot read " << chat_dir() << "/cases.json";
  std::map<std::string, chat_template> templates;
  int passed = 0, total = 0;
  for (const auto& c : doc["cases"]) {
    ++total;
    const std::string name = c["template"].get<std::string>();
    const std::string id = c["id"].get<std::string>();
    if (!templates.count(name)) {
      auto t = chat_template::parse(testing::read_file(chat_dir() + "/templates/" + name + ".jinja"));
      ASSERT_TRUE(t.has_value()) << name << ": " << t.error();
      EXPECT_TRUE(t->warnings().empty()) << name << ": " << t->warnings().front();
      templates.emplace(name, std::move(*t));
    }
    const auto out = templates.at(name).render(make_chat_context(input_of(c)), testing::fixed_chat_clock());
    if (c.contains("expected")) {
      const std::string want = c["expected"].get<std::string>();
      EXPECT_TRUE(out.has_value()) << id << ": " << out.error();
      if (!out.has_value()) continue;
      EXPECT_EQ(*out, want) << id;
      passed += *out == want;
    } else {
      const std::string want = c["expected_error"].get<std::string>();
      EXPECT_FALSE(out.has_value()) << id << " rendered: " << *out;
      if (out.has_value()) continue;
      EXPECT_EQ("TemplateError: " + out.error().message, want) << id;
      passed += "TemplateError: " + out.error().message == want;
    }
  }
  EXPECT_EQ(total, 102);
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace cortex
