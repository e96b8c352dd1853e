// The API references list exactly the fields the decoders accept.
//
// docs/http-api.md and docs/wire-protocol.md mark each request type's field
// table with `<!-- fields: NAME -->`; the first cell of each row is the field
// in backticks. This test finds, for each request type, which names the
// decoder actually reads, by probing it (not by reading its code):
//
// - HTTP: a valid minimal body plus the candidate field set to a probe value
//   (true, a string, a negative fraction, an object, an array). The field is
//   read when some probe makes the parser fail naming it as `param` (every
//   field has a type it refuses). Unknown fields are ignored, so they never
//   fail.
// - Wire: a valid minimal message plus the candidate key set to nil. The
//   decoder treats nil as "absent" for every key it knows and lists every key
//   it does not know in `ignored`, so the key is read when it is not listed.
//
// The candidates are every snake_case string literal of the decoders' source
// files plus every documented name, so a field added to a decoder and not to
// its table (or documented and not read) fails here, naming it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/http_gateway/anthropic_messages.hpp"
#include "actors/http_gateway/openai_request.hpp"
#include "actors/http_gateway/responses_api.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace {

using nlohmann::json;
using field_set = std::set<std::string>;

std::string read_source(const std::string& relative) {
  std::ifstream in(std::string(CORTEX_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << "cannot read " << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Tables of `doc` marked <!-- fields: NAME -->: NAME -> the backticked names
// in the first column of the table that follows the marker.
std::map<std::string, field_set> documented_fields(const std::string& doc) {
  std::map<std::string, field_set> out;
  std::istringstream in(read_source(doc));
  static const std::regex marker(R"(<!--\s*fields:\s*([a-z0-9_.]+)\s*-->)");
  static const std::regex row(R"(^\|\s*`([a-z0-9_]+)`\s*\|)");
  std::string line, table;
  bool in_table = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, marker)) {
      table = m[1];
      out[table];
      in_table = false;
      continue;
    }
    if (table.empty()) continue;
    if (line.rfind("|", 0) != 0) {
      if (in_table) table.clear();  // the table ended
      continue;
    }
    in_table = true;
    if (std::regex_search(line, m, row)) out[table].insert(m[1]);
  }
  return out;
}

// Every string literal that could be a field name in the given sources.
field_set literals(const std::vector<std::string>& sources) {
  field_set out;
  static const std::regex lit(R"re("([a-z][a-z0-9_]*)")re");
  for (const std::string& s : sources) {
    const std::string text = read_source(s);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), lit); it != std::sregex_iterator(); ++it)
      out.insert((*it)[1]);
  }
  return out;
}

std::string describe(const field_set& s) {
  std::string out;
  for (const std::string& f : s) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "(none)" : out;
}

// EXPECTs that `read` (what the decoder reads of `candidates`) equals `doc`.
void expect_same(const std::string& table, const field_set& doc, const field_set& read) {
  field_set undocumented, unread;
  for (const std::string& f : read)
    if (!doc.count(f)) undocumented.insert(f);
  for (const std::string& f : doc)
    if (!read.count(f)) unread.insert(f);
  EXPECT_TRUE(undocumented.empty()) << table << ": the decoder reads fields its table does not list: "
                                    << describe(undocumented);
  EXPECT_TRUE(unread.empty()) << table << ": the table lists fields the decoder does not read: " << describe(unread);
}

field_set with(field_set a, const field_set& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// ---- HTTP ----------------------------------------------------------------

struct http_parse {
  bool failed = false;
  std::string param;
};

using http_parser = http_parse (*)(const std::string& body);

http_parse openai(cortex::http::openai_endpoint e, const std::string& body) {
  cortex::http::openai_limits lim;
  lim.model_name = "m";
  lim.n_embd = 8;
  const auto r = cortex::http::parse_openai_request(e, body, lim);
  return {!r.ok(), r.error.param};
}

http_parse chat(const std::string& b) { return openai(cortex::http::openai_endpoint::chat_completions, b); }
http_parse completions(const std::string& b) { return openai(cortex::http::openai_endpoint::completions, b); }
http_parse embeddings(const std::string& b) { return openai(cortex::http::openai_endpoint::embeddings, b); }
http_parse responses(const std::string& b) {
  const auto r = cortex::http::parse_responses_request(b, cortex::http::openai_limits{});
  return {!r.ok(), r.error.param};
}
http_parse messages(const std::string& b) {
  const auto r = cortex::http::parse_anthropic_request(b, cortex::http::openai_limits{});
  return {!r.ok(), r.error.param};
}
http_parse count_tokens(const std::string& b) {
  const auto r = cortex::http::parse_anthropic_request(b, cortex::http::openai_limits{}, true);
  return {!r.ok(), r.error.param};
}

bool names(const std::string& param, const std::string& field) {
  if (param.compare(0, field.size(), field) != 0) return false;
  return param.size() == field.size() || param[field.size()] == '.' || param[field.size()] == '[';
}

// The fields of `candidates` that `parse` reads, probed on `base` (a valid body).
field_set http_fields_read(http_parser parse, const json& base, const field_set& candidates) {
  EXPECT_FALSE(parse(base.dump()).failed) << "the base body must parse: " << base.dump();
  static const json probes[] = {true, "__probe__", -1.5, json::object({{"__probe__", json::array({1})}}),
                                json::array({json::array({-1})})};
  field_set read;
  for (const std::string& f : candidates) {
    for (const json& p : probes) {
      json body = base;
      body[f] = p;
      const http_parse r = parse(body.dump());
      if (r.failed && names(r.param, f)) {
        read.insert(f);
        break;
      }
    }
  }
  return read;
}

const std::vector<std::string> http_sources = {
    "actors/http_gateway/openai_request.cpp", "actors/http_gateway/responses_api.cpp",
    "actors/http_gateway/anthropic_messages.cpp", "actors/http_gateway/api_request.cpp"};

TEST(DocsApiFields, HttpTablesListWhatEachDecoderReads) {
  const auto doc = documented_fields("docs/http-api.md");
  field_set candidates = literals(http_sources);
  for (const auto& [table, fields] : doc) candidates = with(candidates, fields);

  const json user_turn = json::array({{{"role", "user"}, {"content", "hi"}}});
  struct request_type {
    const char* table;
    http_parser parse;
    json base;
  };
  const request_type types[] = {
      {"http.chat_completions", chat, {{"messages", user_turn}}},
      {"http.completions", completions, {{"prompt", "hi"}}},
      {"http.embeddings", embeddings, {{"input", "hi"}}},
      {"http.responses", responses, {{"input", "hi"}}},
      {"http.messages", messages, {{"max_tokens", 8}, {"messages", user_turn}}},
      {"http.count_tokens", count_tokens, {{"messages", user_turn}}},
  };
  for (const request_type& t : types) {
    SCOPED_TRACE(t.table);
    ASSERT_TRUE(doc.count(t.table)) << "docs/http-api.md has no table marked <!-- fields: " << t.table << " -->";
    expect_same(t.table, doc.at(t.table), http_fields_read(t.parse, t.base, candidates));
  }
}

// ---- Wire ----------------------------------------------------------------

using cortex::wire::test::decode;
using cortex::wire::test::mp;

// The keys of `candidates` that the decoder knows inside the map reached by
// `path` ("" = the message itself, else "params", "params.speculative"...).
field_set wire_keys_read(const mp& base, const std::string& path, const field_set& candidates) {
  const auto ok = decode(base);
  EXPECT_TRUE(ok.ok()) << path << ": the base message must decode: " << ok.error.message;
  field_set read;
  for (const std::string& key : candidates) {
    mp m = base;
    mp* target = &m;
    for (size_t pos = 0; !path.empty() && pos <= path.size();) {
      const size_t dot = std::min(path.find('.', pos), path.size());
      target = &target->at(path.substr(pos, dot - pos));
      pos = dot + 1;
    }
    bool in_base = false;
    for (const auto& [k, v] : target->entries) in_base = in_base || (k.k == mp::kind::str && k.s == key);
    if (in_base) {  // the base message needs it: read
      read.insert(key);
      continue;
    }
    target->set(key, mp::nil());
    const auto r = decode(m);
    const std::string listed = path.empty() ? key : path + "." + key;
    bool ignored = false;
    for (const std::string& i : r.ignored) ignored = ignored || i == listed;
    if (r.ok() && !ignored) read.insert(key);
  }
  return read;
}

mp map_of(std::vector<std::pair<mp, mp>> entries) { return mp::map(std::move(entries)); }

TEST(DocsApiFields, WireTablesListWhatTheDecoderReads) {
  const auto doc = documented_fields("docs/wire-protocol.md");
  field_set candidates = literals({"messages/wire/submit_decode.cpp", "messages/wire/client_decode.cpp",
                                   "messages/wire/chat_decode.cpp", "messages/wire/field_reader.cpp",
                                   "messages/wire/embed_decode.cpp"});
  for (const auto& [table, fields] : doc) candidates = with(candidates, fields);
  const field_set envelope = {"v", "t"};

  const mp submit = map_of({{"v", 1}, {"t", "submit"}, {"id", "p"}, {"prompt", "hi"},
                            {"params", map_of({{"speculative", map_of({})}})}, {"want", map_of({})}});
  struct request_type {
    const char* table;
    mp base;
    const char* path;
    bool with_envelope;
  };
  const request_type types[] = {
      {"wire.submit", submit, "", true},
      {"wire.submit.params", submit, "params", false},
      {"wire.submit.params.speculative", submit, "params.speculative", false},
      {"wire.submit.want", submit, "want", false},
      {"wire.embed", map_of({{"v", 1}, {"t", "embed"}, {"id", "p"}, {"prompt", "hi"}}), "", true},
      {"wire.rerank", map_of({{"v", 1}, {"t", "rerank"}, {"id", "p"}, {"query", "q"}, {"document", "d"}}), "", true},
      {"wire.cancel", map_of({{"v", 1}, {"t", "cancel"}, {"id", "p"}}), "", true},
      {"wire.ping", map_of({{"v", 1}, {"t", "ping"}}), "", true},
      {"wire.stats", map_of({{"v", 1}, {"t", "stats"}}), "", true},
      {"wire.stats", map_of({{"v", 1}, {"t", "health"}}), "", true},
      {"wire.stats", map_of({{"v", 1}, {"t", "models"}}), "", true},
  };
  for (const request_type& t : types) {
    SCOPED_TRACE(t.table);
    ASSERT_TRUE(doc.count(t.table)) << "docs/wire-protocol.md has no table marked <!-- fields: " << t.table << " -->";
    field_set expected = doc.at(t.table);
    if (t.with_envelope) expected = with(expected, envelope);
    expect_same(t.table, expected, wire_keys_read(t.base, t.path, candidates));
  }
}

// The probes find what they must: a documented field's removal from a
// decoder would show (guards the test against probing nothing).
TEST(DocsApiFields, ProbesTellReadFieldsFromIgnoredOnes) {
  const json base = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  const field_set read = http_fields_read(chat, base, {"temperature", "tools", "not_a_field"});
  EXPECT_EQ(read, (field_set{"temperature", "tools"}));
  const mp submit = map_of({{"v", 1}, {"t", "submit"}, {"id", "p"}, {"prompt", "hi"}});
  EXPECT_EQ(wire_keys_read(submit, "", {"stream", "not_a_field"}), (field_set{"stream"}));
}

}  // namespace
