// cortex_load: the load benchmark. Sends the same load over the wire
// (ZeroMQ) or HTTP to a running cortexd, or through the embedded API in this
// process, and
// reports aggregate throughput, TTFT and ITL percentiles, errors, and (wire
// mode) the client's own CPU time, so a slow client is visible.
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/common/args.hpp"
#include "apps/common/curve_keys.hpp"
#include "bench/load/http_transport.hpp"
#include "bench/load/inprocess_transport.hpp"
#include "bench/load/load_report.hpp"
#include "bench/load/wire_transport.hpp"
#include "model/model.hpp"

namespace {

using json = nlohmann::json;
using namespace cortex::load;

const char* k_summary =
    "The load benchmark. N concurrent streams send R requests, each a prompt of exactly P token ids\n"
    "(random ids from --seed) generating exactly O tokens (greedy, max_tokens = O, ignore_eos), either\n"
    "  --endpoint E    over ZeroMQ to a running cortexd (one DEALER socket per stream, one client thread), or\n"
    "  --http URL      over HTTP to a running cortexd's OpenAI API (URL http://HOST:PORT; one keep-alive\n"
    "                  connection per stream, streamed POST /v1/completions read as server-sent events;\n"
    "                  --model names the GGUF file cortexd serves, read for its vocabulary size only), or\n"
    "  --in-process    through the embedded API in this process (--model and the runtime options below), or\n"
    "  --llama-server URL  over HTTP to llama.cpp's llama-server (its POST /completion, streamed; the same client\n"
    "                  code and prompts as --http; --model as for --http), for a comparison timed alike:\n"
    "                  bench/load/compare_llama_server.sh.\n"
    "Same --seed and load options = the same prompts in every mode; bench/load/compare_wire_vs_inprocess.sh\n"
    "and bench/load/compare_http_vs_wire.sh run two modes alternately, bench/load/compare_curve.sh the wire\n"
    "mode against a plaintext and a CURVE cortexd (--curve-server-key FILE --curve-key NAME).\n"
    "\n"
    "Arrivals: closed loop by default (each stream sends its next request when its previous one ended);\n"
    "--rate X sends requests at Poisson times with X requests/s on average (round-robin over the streams).\n"
    "--warmup K runs K requests first, outside the measured window.\n"
    "\n"
    "Reported (stdout, and all of it in --json FILE):\n"
    "  throughput  completion tokens / wall time (first submit to last terminal message)\n"
    "  req/s       requests ended / wall time\n"
    "  TTFT        submit -> first chunk carrying text or tokens, client clock, p50/p90/p99\n"
    "  ITL         gap between consecutive token-carrying chunks of a request, per token\n"
    "              (a chunk of k tokens counts k intervals of gap/k), p50/p90/p99; over HTTP, which names\n"
    "              no tokens, each event with text counts as one unless --http-logprobs: on models whose\n"
    "              tokens rarely complete text (random weights), TTFT and ITL then need --http-logprobs\n"
    "  errors      requests that did not finish with length/stop, by protocol code or finish reason\n"
    "  CPU         wire and HTTP: this client's CPU time over the window (if it nears 100% of a core, the client\n"
    "              is the bottleneck), and cortexd's with --server-pid; in-process: the whole process.\n"
    "              On a shared machine CPU per token is steadier than tok/s.\n"
    "Exit code: 0 when every request finished with length or stop, 1 otherwise, 2 on bad options.";

std::vector<cortex::cli::option_spec> option_specs() {
  std::vector<cortex::cli::option_spec> specs = {
      {"endpoint", "E", "wire mode: cortexd's endpoint (tcp://127.0.0.1:PORT or ipc://PATH)", ""},
      {"http", "URL", "HTTP mode: cortexd's HTTP address, http://HOST:PORT (needs --model)", ""},
      {"llama-server", "URL", "llama-server mode: its address, http://HOST:PORT (needs --model)", ""},
      {"in-process", "", "in-process mode: run the engine in this process (needs --model)", ""},
      {"model", "PATH", "in-process: GGUF model file; HTTP: the file cortexd serves (for its vocabulary size)", ""},
      {"http-logprobs", "", "HTTP: ask logprobs: 0, so TTFT and ITL count every token (the server computes a logprob each)", ""},
      {"threads", "N", "in-process: compute threads; 0 = one per core", "0"},
      {"kv-memory-mb", "MB", "in-process: memory for the K/V cache", "1024"},
      {"max-batch-tokens", "N", "in-process: tokens computed per engine step", "512"},
      {"max-running", "N", "in-process: sequences running at once", "64"},
      {"max-prefill-with-decode", "N", "in-process: prefill tokens per step while requests decode; 0 = up to the budget", "128"},
      {"itl-target-ms", "MS", "in-process: time budget of a step carrying decode tokens; 0 = auto, -1 = off (cortexd --help)", "0"},
      {"streams", "N", "concurrent clients", "16"},
      {"requests", "R", "measured requests in total; default = --streams", ""},
      {"prompt-tokens", "P", "prompt length in token ids", "128"},
      {"output-tokens", "O", "tokens generated per request", "64"},
      {"rate", "X", "Poisson arrivals, X requests/s; 0 = closed loop", "0"},
      {"seed", "S", "seed of prompts and arrival times", "1"},
      {"warmup", "K", "requests run before the measured window", "0"},
      {"timeout", "S", "give up when no event arrives for S seconds", "300"},
      {"api-key", "SECRET", "wire: API key sent as every submit's auth (cortexd --auth without CURVE)", ""},
      {"server-pid", "PID", "wire, HTTP: cortexd's process id (same machine); its CPU time over the window is reported too", ""},
      {"ready-timeout", "S", "wire, HTTP: wait up to S seconds for cortexd to be ready", "300"},
      {"json", "FILE", "write the load, the settings and every figure as JSON", ""},
      {"quiet", "", "print only the summary", ""},
  };
  for (auto& o : cortex::cli::curve_client_specs()) specs.push_back(std::move(o));  // wire mode
  return specs;
}

int fail(const std::string& msg, int code = 2) {
  std::fprintf(stderr, "cortex_load: %s\n", msg.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines show up at once when piped to a log
  cortex::cli::args a("cortex_load", k_summary, option_specs(), "");
  if (!a.parse(argc - 1, argv + 1)) return fail(a.error());
  if (a.help_requested()) {
    std::fputs(a.usage().c_str(), stdout);
    return 0;
  }
  const bool in_process = a.has("in-process"), llama = a.has("llama-server"), over_http = a.has("http") || llama;
  if (int(in_process) + int(a.has("http")) + int(llama) + int(a.has("endpoint")) != 1) {
    return fail("give exactly one of --endpoint E (wire), --http URL, --llama-server URL or --in-process (see --help)");
  }
  // "wire-curve": the wire mode over CURVE (its own name, so comparisons label it).
  const char* mode = in_process ? "in-process" : llama ? "llama-server" : over_http ? "http" : a.has("curve-key") ? "wire-curve" : "wire";
  if ((in_process || over_http) && a.get("model").empty()) return fail(std::string("--") + mode + " needs --model PATH (a GGUF file)");
  if (!a.has("http") && a.has("http-logprobs")) return fail("--http-logprobs applies to --http only");
  for (const char* o : {"curve-server-key", "curve-key", "api-key"}) {
    if (!a.has("endpoint") && a.has(o)) return fail(std::string("--") + o + " applies to --endpoint (wire) only");
  }
  if (!in_process) {
    for (const char* o : {"threads", "kv-memory-mb", "max-batch-tokens", "max-running", "max-prefill-with-decode", "itl-target-ms"}) {
      if (a.has(o)) return fail(std::string("--") + o + " applies to --in-process only; give it to cortexd instead");
    }
    if (!over_http && a.has("model")) return fail("--model applies to --in-process, --http and --llama-server only; give it to cortexd instead");
  }

  load_spec spec;
  cortex::runtime_config rc;
  int itl_target_ms = 0;  // scheduler_config's is a double: whole ms here
  struct int_opt { const char* name; long long lo, hi; int* out; };
  const std::vector<int_opt> ints = {
      {"streams", 1, 4096, &spec.streams},           {"prompt-tokens", 1, 1 << 20, &spec.prompt_tokens},
      {"output-tokens", 1, 1 << 20, &spec.output_tokens}, {"warmup", 0, 1 << 20, &spec.warmup},
      {"threads", 0, 1024, &rc.threads},             {"kv-memory-mb", 1, 1 << 20, &rc.kv_memory_mb},
      {"max-batch-tokens", 1, 1 << 20, &rc.scheduler.max_batch_tokens}, {"max-running", 1, 1 << 16, &rc.scheduler.max_running},
      {"max-prefill-with-decode", 0, 1 << 20, &rc.scheduler.max_prefill_with_decode},
      {"itl-target-ms", -1, 600000, &itl_target_ms},
  };
  for (auto& o : ints) {
    auto v = a.get_int(o.name);
    if (!v) return fail(a.error());
    if (*v < o.lo || *v > o.hi) {
      return fail(std::string("--") + o.name + " must be in [" + std::to_string(o.lo) + ", " + std::to_string(o.hi) + "], got " +
                  std::to_string(*v));
    }
    *o.out = int(*v);
  }
  rc.scheduler.itl_target_ms = itl_target_ms;
  spec.requests = spec.streams;
  if (a.has("requests")) {
    auto v = a.get_int("requests");
    if (!v) return fail(a.error());
    if (*v < 1 || *v > (1 << 24)) return fail("--requests must be at least 1");
    spec.requests = int(*v);
  }
  auto rate = a.get_float("rate"), timeout = a.get_float("timeout"), ready_timeout = a.get_float("ready-timeout");
  auto seed = a.get_int("seed");
  if (!rate || !timeout || !ready_timeout || !seed) return fail(a.error());
  if (*rate < 0) return fail("--rate must be >= 0 (0 = closed loop)");
  if (*timeout <= 0 || *ready_timeout <= 0) return fail("--timeout and --ready-timeout must be > 0");
  spec.rate = *rate;
  spec.timeout_s = *timeout;
  spec.seed = uint64_t(*seed);
  const bool quiet = a.has("quiet");
  std::optional<long long> server_pid_opt;
  if (a.has("server-pid")) {
    if (in_process) return fail("--server-pid applies to the wire and HTTP modes only");
    server_pid_opt = a.get_int("server-pid");
    if (!server_pid_opt) return fail(a.error());
    if (pid_cpu_seconds(int(*server_pid_opt)) < 0) {
      return fail("--server-pid " + a.get("server-pid") + ": no such process on this machine (cannot read /proc/PID/stat)");
    }
  }

  // The engine: started (in-process) or reached (wire); both say vocab and context.
  std::unique_ptr<load_transport> transport;
  wire_transport* wire = nullptr;  // set in wire mode (for the server's stats)
  int n_vocab = 0, n_ctx = 0;
  json target;
  if (in_process) {
    rc.model_path = a.get("model");
    rc.log_level = "warn";
    if (auto s = rc.validate(); !s) return fail(s.message);
    if (!quiet) std::printf("loading %s in process...\n", rc.model_path.c_str());
    auto t = inprocess_transport::start(rc);
    if (!t) return fail("cannot start the engine: " + t.error().message, 1);
    n_vocab = (*t)->n_vocab();
    n_ctx = (*t)->n_ctx();
    target = {{"model", rc.model_path}, {"threads", rc.threads}, {"kv_memory_mb", rc.kv_memory_mb},
              {"max_batch_tokens", rc.scheduler.max_batch_tokens}, {"max_running", rc.scheduler.max_running},
              {"max_prefill_with_decode", rc.scheduler.max_prefill_with_decode}, {"itl_target_ms", rc.scheduler.itl_target_ms}};
    transport = std::move(*t);
  } else if (over_http) {
    const std::string url = a.get(llama ? "llama-server" : "http");
    auto vocab = cortex::model::load_vocab_only(a.get("model"));
    if (!vocab) return fail("--model: " + vocab.error().message);
    n_vocab = (*vocab)->hparams().n_vocab;  // the context is the server's to enforce (a 400 counts as an error)
    if (!quiet) std::printf("connecting %d streams to %s...\n", spec.streams, url.c_str());
    auto t = http_transport::connect(url, spec.streams, *ready_timeout, a.has("http-logprobs"),
                                     llama ? completion_format::llama_server : completion_format::openai);
    if (!t) return fail(t.error().message, 1);
    target = {{llama ? "llama_server" : "http", url}, {"model", (*t)->model_id()}, {"model_file", a.get("model")},
              {"logprobs", a.has("http-logprobs")}};
    transport = std::move(*t);
  } else {
    const std::string endpoint = a.get("endpoint");
    if (!quiet) std::printf("connecting %d streams to %s...\n", spec.streams, endpoint.c_str());
    cortex::cli::curve_client_keys curve;
    std::string curve_error;
    if (!cortex::cli::curve_client_keys_from_args(a, curve, curve_error)) return fail(curve_error);
    auto t = wire_transport::connect(endpoint, spec.streams, *ready_timeout, curve, a.get("api-key"));
    if (!t) return fail(t.error().message, 1);
    n_vocab = (*t)->model_info().n_vocab;
    n_ctx = (*t)->model_info().n_ctx;
    wire = t->get();
    target = {{"endpoint", endpoint}, {"model", (*t)->model_info().name}, {"quant", (*t)->model_info().quant},
              {"curve", curve.enabled()}};
    transport = std::move(*t);
  }
  if (n_ctx > 0 && spec.prompt_tokens + spec.output_tokens > n_ctx) {
    return fail("--prompt-tokens + --output-tokens = " + std::to_string(spec.prompt_tokens + spec.output_tokens) +
                " exceeds the model's context of " + std::to_string(n_ctx) + " tokens");
  }
  const auto plan = make_plan(spec, n_vocab);

  if (spec.warmup > 0) {
    if (!quiet) std::printf("warmup: %d requests...\n", spec.warmup);
    auto w = run_phase(*transport, spec, plan, true);
    if (w.timed_out) return fail("warmup: no event for " + std::to_string(int(spec.timeout_s)) + " s; giving up", 1);
  }
  if (!quiet) {
    std::printf("measuring: %d requests, %d streams, prompt %d, output %d, %s\n", spec.requests, spec.streams, spec.prompt_tokens,
                spec.output_tokens, spec.rate > 0 ? ("Poisson " + std::to_string(spec.rate) + " req/s").c_str() : "closed loop");
  }
  const int server_pid = server_pid_opt ? int(*server_pid_opt) : 0;
  const double cpu0 = process_cpu_seconds(), server_cpu0 = server_pid ? pid_cpu_seconds(server_pid) : -1;
  auto res = run_phase(*transport, spec, plan, false);
  const double cpu1 = process_cpu_seconds(), server_cpu1 = server_pid ? pid_cpu_seconds(server_pid) : -1;
  auto summary = summarize(res);
  summary.cpu_s = cpu1 - cpu0;
  if (server_cpu0 >= 0 && server_cpu1 >= 0) summary.server_cpu_s = server_cpu1 - server_cpu0;
  const json loadavg = load_average_json();

  std::printf("== cortex_load %s ==\n", mode);
  std::fputs(summary_text(summary, in_process ? "process" : "client").c_str(), stdout);
  std::printf("load average  %.2f %.2f %.2f\n", loadavg[0].get<double>(), loadavg[1].get<double>(), loadavg[2].get<double>());
  if (res.timed_out) std::fprintf(stderr, "cortex_load: no event for %.0f s; stopped waiting\n", spec.timeout_s);

  if (a.has("json")) {
    json out = {{"mode", mode},
                {"target", target},
                {"load",
                 {{"streams", spec.streams}, {"requests", spec.requests}, {"prompt_tokens", spec.prompt_tokens},
                  {"output_tokens", spec.output_tokens}, {"rate", spec.rate}, {"seed", spec.seed}, {"warmup", spec.warmup}}},
                {"results", summary_json(summary)},
                {"cpu_scope", in_process ? "process (engine included)" : "client (server_cpu_s: cortexd, with --server-pid)"},
                {"load_average", loadavg},
                {"timed_out", res.timed_out}};
    json per_request = json::array();
    for (auto& r : res.requests) {
      auto ms = [&](load_clock::time_point t) { return std::chrono::duration<double, std::milli>(t - res.start).count(); };
      json j = {{"id", r.index}, {"outcome", r.outcome}, {"completion_tokens", r.completion_tokens}, {"tokens_seen", r.tokens_seen},
                {"submit_ms", ms(r.submitted)}};
      if (r.got_first) j["ttft_ms"] = ms(r.first_token) - ms(r.submitted);
      if (r.done) j["end_ms"] = ms(r.ended);
      per_request.push_back(std::move(j));
    }
    out["requests"] = std::move(per_request);
    if (wire) {
      auto st = wire->server_stats();
      out["server_stats"] = st ? json::parse(*st, nullptr, false) : json(st.error().message);
    }
    std::ofstream f(a.get("json"));
    if (!f) return fail("cannot write '" + a.get("json") + "'", 1);
    f << out.dump(2) << "\n";
  }
  return summary.requests_ok == summary.requests_total ? 0 : 1;
}
