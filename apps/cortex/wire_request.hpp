// What the generating wire commands (cortex submit, cortex chat) share: their
// options, the submit message built from them, chat turns read from JSON,
// and reading one request's stream to its end.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <optional>

#include "apps/common/args.hpp"
#include "apps/cortex/wire_connection.hpp"

namespace cortex::cli {

// `specs` between --endpoint (first) and the connection options (last):
// --curve-server-key, --curve-key (curve_keys.hpp) and --timeout-ms.
std::vector<option_spec> with_endpoint(std::vector<option_spec> specs);

// The CURVE keys named by --curve-server-key / --curve-key (none:
// plaintext); nullopt after printing what is wrong (the command exits 2).
std::optional<curve_client_keys> curve_keys(args& a);

// Sampling and scheduling options: --max-tokens, --temperature, --top-k,
// --top-p, --min-p, --seed, --stop, --priority, --deadline-ms, --ignore-eos;
// and --api-key (the submit's `auth`, else $CORTEX_API_KEY).
std::vector<option_spec> generation_specs();

// {v, t: submit, priority, params, deadline_ms, auth} from
// generation_specs()'s options, without id or input; false after printing
// what is wrong (the command then exits 2).
bool build_generation_request(args& a, wire_json& msg);

// A request id unlikely to repeat: "cli-<random>".
std::string fresh_request_id();

// A JSON array of chat turns {role, content, ...} from `path` ('-' =
// stdin); false with `error` saying what to fix. Only the JSON shape is
// checked here; the server checks the turns.
bool read_messages_json(const std::string& path, wire_json& out, std::string& error);
// Sets msg.chat_template_kwargs from --chat-template-kwargs (a JSON object)
// when given; false after printing what is wrong (the command exits 2).
bool add_chat_template_kwargs(args& a, wire_json& msg);

// --timeout-ms, positive; nullopt after printing what is wrong (exit 2).
std::optional<long long> timeout_ms(args& a);
// "no message from ENDPOINT within N ms", or why the server refused c's
// CURVE handshake, to stderr.
void print_no_reply(args& a, const wire_connection& c, long long ms);

// Reads the messages of request `id` (others are dropped) up to its terminal
// one (`finished` or `error`), calling on_message for each, the terminal one
// included. False when nothing arrives for timeout_ms.
bool read_request(wire_connection& c, const std::string& id, int timeout_ms,
                  const std::function<void(const wire_json&)>& on_message, wire_json& terminal);

// "cortex: error 400 invalid_param: ..." for an `error` message, to stderr.
void print_error_reply(const wire_json& m);

}  // namespace cortex::cli
