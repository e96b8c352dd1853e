// A real actor system running the engine graph, and a sink actor that
// records every event per request for tests to wait on (with timeouts;
// nothing sleeps and hopes).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/runtime/runtime.hpp"

namespace cortex::testing {

// The waits' default limits are for an optimized build; a sanitized one runs
// the engine several times slower (TSan 5-15x), so they grow with it and a
// slow build fails no test (style.md rule 7).
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int k_wait_scale = 4;  // 480 s, inside CTest's 600 s per test
#else
constexpr int k_wait_scale = 1;
#endif

struct request_record {
  std::optional<request_accepted> accepted;
  std::vector<request_chunk> chunks;
  std::optional<request_finished> finished;
  std::optional<request_rejected> rejected;
  int n_terminal = 0;
  uint64_t first_token_order = 0;  // global event counter at the first chunk with tokens
  uint64_t finished_order = 0;
  std::string text() const {
    std::string t;
    for (auto& c : chunks) t += c.text;
    if (finished) t += finished->text;
    return t;
  }
  std::vector<int32_t> token_ids() const {
    std::vector<int32_t> ids;
    for (auto& c : chunks) ids.insert(ids.end(), c.token_ids.begin(), c.token_ids.end());
    if (finished) ids.insert(ids.end(), finished->token_ids.begin(), finished->token_ids.end());
    return ids;
  }
};

class event_log {
 public:
  template <class F>
  void update(const std::string& id, F f) {
    std::lock_guard<std::mutex> lk(mu_);
    f(records_[id], ++counter_);
    cv_.notify_all();
  }
  // Waits until pred(records) holds; false on timeout.
  template <class Pred>
  bool wait_for(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(120 * k_wait_scale)) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return pred(records_); });
  }
  bool wait_done(const std::vector<std::string>& ids,
                 std::chrono::milliseconds timeout = std::chrono::seconds(120 * k_wait_scale)) {
    return wait_for(
        [&](const std::map<std::string, request_record>& r) {
          for (auto& id : ids) {
            auto it = r.find(id);
            if (it == r.end() || it->second.n_terminal == 0) return false;
          }
          return true;
        },
        timeout);
  }
  request_record get(const std::string& id) {
    std::lock_guard<std::mutex> lk(mu_);
    return records_[id];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, request_record> records_;
  uint64_t counter_ = 0;
};

inline request_sink_actor::behavior_type recording_sink(request_sink_actor::pointer, std::shared_ptr<event_log> log) {
  return {
      [log](request_accepted& a) { log->update(a.client_id, [&](request_record& r, uint64_t) { r.accepted = a; }); },
      [log](request_chunk& c) {
        log->update(c.client_id, [&](request_record& r, uint64_t n) {
          if (!r.first_token_order && (!c.token_ids.empty() || !c.text.empty())) r.first_token_order = n;
          r.chunks.push_back(c);
        });
      },
      [log](request_finished& f) {
        log->update(f.client_id, [&](request_record& r, uint64_t n) {
          if (!r.first_token_order && f.completion_tokens > 0) r.first_token_order = n;
          r.finished = f;
          r.finished_order = n;
          r.n_terminal++;
        });
      },
      [log](request_rejected& x) {
        log->update(x.client_id, [&](request_record& r, uint64_t n) {
          r.rejected = x;
          r.finished_order = n;
          r.n_terminal++;
        });
      },
  };
}

struct system_config : caf::actor_system_config {
  system_config() {
    register_types(*this);
    set("scheduler.max-threads", 2);
    set("scheduler.policy", caf::atom("sharing"));
    set("logger.verbosity", caf::atom("quiet"));
  }
};

// A runtime for a test: the model, 2 threads, an F32 cache (goldens were
// made with one), logging at CORTEX_TEST_LOG's level (warn when unset); the
// test sets the rest.
inline runtime_config test_runtime_config(const std::string& model_path) {
  runtime_config c;
  c.model_path = model_path;
  c.threads = 2;
  c.kv_type = kernels::kv_type::f32;
  c.log_level = std::getenv("CORTEX_TEST_LOG") ? std::getenv("CORTEX_TEST_LOG") : "warn";
  return c;
}

// One actor system + runtime + recording sink per test.
class runtime_fixture {
 public:
  explicit runtime_fixture(runtime_config cfg) : sys_(cfg_) {
    auto rt = runtime::start(sys_, cfg);
    if (!rt) {
      error_ = rt.error().message;
      return;
    }
    rt_ = std::move(*rt);
    sink_ = sys_.spawn(recording_sink, log_);
  }
  ~runtime_fixture() {
    rt_.reset();
    caf::anon_send_exit(sink_, caf::exit_reason::user_shutdown);
  }
  bool ok() const { return rt_ != nullptr; }
  const std::string& error() const { return error_; }
  runtime& rt() { return *rt_; }
  event_log& log() { return *log_; }
  caf::actor_system& sys() { return sys_; }

  void submit(generation_request req) { caf::anon_send(rt_->intake(), submit_atom_v, std::move(req), sink_); }
  void cancel(request_id rid) { caf::anon_send(rt_->intake(), cancel_atom_v, rid, finish_reason::cancelled); }
  engine_stats stats() {
    caf::scoped_actor self{sys_};
    engine_stats out;
    self->request(rt_->intake(), std::chrono::seconds(30), stats_atom_v)
        .receive([&](engine_stats& s) { out = std::move(s); }, [&](caf::error&) {});
    return out;
  }
  // Waits until the engine holds no sequence and no KV block.
  bool wait_idle(std::chrono::milliseconds timeout = std::chrono::seconds(30 * k_wait_scale)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      auto s = stats();
      if (s.running == 0 && s.waiting == 0 && s.kv_blocks_used == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a condition, bounded by `timeout`
    }
    return false;
  }

 private:
  system_config cfg_;
  caf::actor_system sys_;
  std::unique_ptr<runtime> rt_;
  std::shared_ptr<event_log> log_ = std::make_shared<event_log>();
  request_sink_actor sink_;
  std::string error_;
};

inline generation_request greedy_request(const std::string& id, const std::string& prompt, uint32_t max_tokens) {
  generation_request r;
  r.client_id = id;
  r.prompt = prompt;
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  return r;
}

}  // namespace cortex::testing
