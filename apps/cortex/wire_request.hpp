// What the generating wire commands (cortex submit, cortex chat) share: their
// options, the submit message built from them, chat turns read from JSON,
// and reading one request's stream to its end.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "apps/common/args.hpp"
#include "apps/cortex/wire_connection.hpp"

namespace cortex::cli {

// `specs` between --endpoint (first) and --timeout-ms (last).
std::vector<option_spec> with_endpoint(std::vector<option_spec> specs);

// Sampling and scheduling options: --max-tokens, --temperature, --top-k,
// --top-p, --min-p, --seed, --stop, --priority, --deadline-ms, --ignore-eos.
std::vector<option_spec> generation_specs();

// {v, t: submit, priority, params, deadline_ms} from generation_specs()'s
// options, without id or input; false after printing what is wrong (the
// command then exits 2).
bool build_generation_request(args& a, wire_json& msg);

// A request id unlikely to repeat: "cli-<random>".
std::string fresh_request_id();

// A JSON array of chat turns {role, content, ...} from `path` ('-' =
// stdin); false with `error` saying what to fix. Only the JSON shape is
// checked here; the server checks the turns.
bool read_messages_json(const std::string& path, wire_json& out, std::string& error);
// A JSON object (--chat-template-kwargs); false with `error`.
bool parse_json_object(const std::string& text, const char* what, wire_json& out, std::string& error);

// Reads the messages of request `id` (others are dropped) up to its terminal
// one (`finished` or `error`), calling on_message for each, the terminal one
// included. False when nothing arrives for timeout_ms.
bool read_request(wire_connection& c, const std::string& id, int timeout_ms,
                  const std::function<void(const wire_json&)>& on_message, wire_json& terminal);

// "cortex: error 400 invalid_param: ..." for an `error` message, to stderr.
void print_error_reply(const wire_json& m);

}  // namespace cortex::cli
