// Embedding CortexStream in your own CAF program: start the engine graph in
// your actor system, submit prompts with a sink actor of your own, stream
// the chunks, cancel one request, and read the engine statistics.
//
//   cortex_embedded_example --model MODEL.gguf
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "actors/runtime/runtime.hpp"

namespace {

struct demo_config : caf::actor_system_config {
  demo_config() { cortex::register_types(*this); }
};

// Prints each request's stream; fulfils `done` once every request has had
// its single terminal event. Cancels "story-2" after its first chunk.
struct printer {
  std::mutex mu;
  std::map<std::string, std::string> text;
  std::map<std::string, std::string> ends;
  int expected = 0;
  std::promise<void> done;
};

cortex::request_sink_actor::behavior_type sink_fn(cortex::request_sink_actor::pointer self,
                                                   std::shared_ptr<printer> out, cortex::intake_actor intake) {
  auto finish_one = [out](const std::string& id, std::string how) {
    std::lock_guard<std::mutex> lk(out->mu);
    out->ends[id] = std::move(how);
    if (static_cast<int>(out->ends.size()) == out->expected) out->done.set_value();
  };
  return {
      [](cortex::request_accepted& a) {
        std::printf("[%s] accepted as rid %llu (%u prompt tokens)\n", a.client_id.c_str(), (unsigned long long)a.rid,
                    a.prompt_tokens);
      },
      [self, out, intake](cortex::request_chunk& c) {
        bool first;
        {
          std::lock_guard<std::mutex> lk(out->mu);
          first = out->text[c.client_id].empty();
          out->text[c.client_id] += c.text;
        }
        if (first && c.client_id == "story-2") {
          std::printf("[story-2] cancelling after its first chunk\n");
          self->send(intake, cortex::cancel_atom_v, c.rid, cortex::finish_reason::cancelled);
        }
      },
      [out, finish_one](cortex::request_finished& f) {
        std::string all;
        {
          std::lock_guard<std::mutex> lk(out->mu);
          all = out->text[f.client_id] + f.text;
        }
        std::printf("[%s] finished (%s, %u tokens, %.1f tok/s): %s\n", f.client_id.c_str(), cortex::finish_reason_name(f.reason),
                    f.completion_tokens, f.timings.tokens_per_s, all.c_str());
        finish_one(f.client_id, cortex::finish_reason_name(f.reason));
      },
      [finish_one](cortex::request_rejected& r) {
        std::printf("[%s] rejected: %s\n", r.client_id.c_str(), r.error.message.c_str());
        finish_one(r.client_id, "rejected");
      },
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--model") && i + 1 < argc) model_path = argv[++i];
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf("usage: cortex_embedded_example --model MODEL.gguf\n\n"
                  "Starts CortexStream inside this program's CAF actor system, streams three prompts,\n"
                  "cancels one, and prints the engine statistics.\n");
      return 0;
    }
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "cortex_embedded_example: --model MODEL.gguf is required\n");
    return 2;
  }
  demo_config cfg;
  caf::actor_system sys{cfg};
  cortex::runtime_config rc;
  rc.model_path = model_path;
  rc.log_level = "warn";
  auto rt = cortex::runtime::start(sys, rc);
  if (!rt) {
    std::fprintf(stderr, "cortex_embedded_example: %s\n", rt.error().message.c_str());
    return 1;
  }
  auto out = std::make_shared<printer>();
  const std::vector<std::pair<std::string, std::string>> prompts = {
      {"story-1", "Once upon a time"}, {"story-2", "The little dog was sad because"}, {"story-3", "Lily and Tom went to the park"}};
  out->expected = static_cast<int>(prompts.size());
  auto sink = sys.spawn(sink_fn, out, (*rt)->intake());
  for (auto& [id, text] : prompts) {
    cortex::generation_request req;
    req.client_id = id;
    req.prompt = text;
    req.params.max_tokens = 48;
    req.params.temperature = 0;
    caf::anon_send((*rt)->intake(), cortex::submit_atom_v, req, sink);
  }
  if (out->done.get_future().wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    std::fprintf(stderr, "cortex_embedded_example: requests did not finish within 120 s\n");
    return 1;
  }
  caf::scoped_actor self{sys};
  int rc_code = 0;
  self->request((*rt)->intake(), std::chrono::seconds(10), cortex::stats_atom_v)
      .receive(
          [&](cortex::engine_stats& s) {
            std::printf("engine: %llu steps, %.2f sequences per step on average, %llu tokens generated, %u KV blocks in use\n",
                        (unsigned long long)s.steps, s.step_seqs_mean, (unsigned long long)s.tokens_generated, s.kv_blocks_used);
          },
          [&](caf::error& e) {
            std::fprintf(stderr, "stats failed: %s\n", sys.render(e).c_str());
            rc_code = 1;
          });
  std::lock_guard<std::mutex> lk(out->mu);
  if (out->ends["story-2"] != "cancelled" || out->ends["story-1"] == "rejected" || out->ends["story-3"] == "rejected") {
    std::fprintf(stderr, "cortex_embedded_example: unexpected outcome\n");
    rc_code = 1;
  }
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  return rc_code;
}
