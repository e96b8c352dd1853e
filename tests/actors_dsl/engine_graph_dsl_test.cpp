// Deterministic tests of the engine graph (intake -> session -> scheduler ->
// executor) on CAF's test coordinator: no threads, one message at a time,
// time only moves when the test says so. The real intake, scheduler and
// session actors run with the real stories260K tokenizer; the executor (a
// detached actor, not schedulable by the test coordinator) is replaced by a
// scripted fake that answers each step with token = f(rid, position) from a
// plain-ASCII slice of the vocabulary, can fail the next n steps
// (fail_atom, the executor interface's own hook) and can hold its replies so
// a step stays in flight while the test sends cancels or moves the clock.
//
// Built as its own executable with CAF's unit-test main (summary at the
// end, exit code 1 on any failed check; a failed CAF_REQUIRE aborts).
#define CAF_SUITE actors_dsl

#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>  // main() of this executable

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "actors/intake/intake_actor.hpp"
#include "actors/runtime/runtime.hpp"
#include "actors/scheduler/scheduler_actor.hpp"
#include "actors/session/session_actor.hpp"
#include "messages/actors.hpp"
#include "model/model.hpp"
#include "text/tokenizer.hpp"

using namespace cortex;

namespace {

// -- the model ----------------------------------------------------------------

std::shared_ptr<const model> stories260k() {
  static std::shared_ptr<const model> m = [] {
    auto loaded = model::load(std::string(CORTEX_SOURCE_DIR) + "/models/stories260K.gguf");
    if (!loaded) {
      CAF_FAIL("cannot load stories260K: " << loaded.error().message);
    }
    return std::shared_ptr<const model>(std::move(*loaded));
  }();
  return m;
}

// -- the scripted executor ------------------------------------------------------

// Shared between the fake executor and the test. Only touched from inside the
// fake's handlers or by the test between scheduler runs (single-threaded).
struct exec_script {
  std::vector<int32_t> vocab;  // tokens the fake emits: letters and spaces only, never EOG
  int32_t block_size = 16;
  bool hold = false;            // keep replies until (ready_atom)
  uint32_t fail_next = 0;       // set by (fail_atom, n)
  std::set<request_id> open;    // samplers the scheduler opened and has not closed
  std::set<request_id> ever_opened;
  uint64_t steps = 0, failed_steps = 0;
  std::vector<std::string> violations;  // contract breaches seen by the fake
  std::vector<std::pair<caf::typed_response_promise<engine_step_result>, engine_step_result>> held;

  int32_t token_at(request_id rid, int32_t pos) const {
    return vocab[static_cast<size_t>((rid * 7919u + static_cast<uint64_t>(pos) * 104729u) % vocab.size())];
  }
};

caf::behavior fake_executor(caf::event_based_actor* self, std::shared_ptr<exec_script> s) {
  return {
      [s](sequence_open& o) {
        if (!s->open.insert(o.rid).second) s->violations.push_back("rid " + std::to_string(o.rid) + " opened twice");
        s->ever_opened.insert(o.rid);
      },
      [self, s](engine_step& step) -> caf::result<engine_step_result> {
        for (auto rid : step.closed) {
          if (!s->open.erase(rid)) s->violations.push_back("closed rid " + std::to_string(rid) + " was not open");
        }
        s->steps++;
        engine_step_result res;
        res.step_id = step.step_id;
        if (s->fail_next > 0) {
          s->fail_next--;
          s->failed_steps++;
          res.error = fail(errc::internal, "injected failure");
        } else {
          for (const auto& e : step.entries) {
            if (!s->open.count(e.rid)) s->violations.push_back("step for unopened rid " + std::to_string(e.rid));
            const auto end = e.pos0 + static_cast<int32_t>(e.tokens.size());
            if (static_cast<int64_t>(e.block_table.size()) * s->block_size < end)
              s->violations.push_back("block table of rid " + std::to_string(e.rid) + " does not cover the step");
            if (e.sample) res.outputs.push_back({e.rid, s->token_at(e.rid, end), {}});
          }
        }
        if (s->hold) {
          auto rp = self->make_response_promise<engine_step_result>();
          s->held.emplace_back(rp, std::move(res));
          return rp;
        }
        return res;
      },
      [s](fail_atom, uint32_t n) { s->fail_next += n; },
      // Closes the scheduler sends when idle (no step to carry them).
      [s](cancel_atom, request_id rid) {
        if (!s->open.erase(rid)) s->violations.push_back("closed rid " + std::to_string(rid) + " was not open");
      },
      [s](ready_atom) {
        s->hold = false;
        auto held = std::move(s->held);
        s->held.clear();
        for (auto& h : held) h.first.deliver(std::move(h.second));
      },
  };
}

// -- the recording sink -----------------------------------------------------------

enum class ev { accepted, chunk, finished, rejected };

struct sink_event {
  ev kind = ev::accepted;
  request_id rid = 0;
  std::string client_id;
  std::string text;
  std::vector<int32_t> ids;
  finish_reason reason = finish_reason::stop;
  status error;  // the request's error, when it failed
  uint32_t prompt_tokens = 0, completion_tokens = 0;
};

struct sink_log {
  std::vector<sink_event> events;  // in arrival order, all requests
};

request_sink_actor::behavior_type recording_sink(request_sink_actor::pointer, std::shared_ptr<sink_log> log) {
  return {
      [log](request_accepted& a) {
        sink_event e;
        e.kind = ev::accepted;
        e.rid = a.rid;
        e.client_id = a.client_id;
        e.prompt_tokens = a.prompt_tokens;
        log->events.push_back(std::move(e));
      },
      [log](request_chunk& c) {
        sink_event e;
        e.kind = ev::chunk;
        e.rid = c.rid;
        e.client_id = c.client_id;
        e.text = c.text;
        e.ids = c.token_ids;
        log->events.push_back(std::move(e));
      },
      [log](request_finished& f) {
        sink_event e;
        e.kind = ev::finished;
        e.rid = f.rid;
        e.client_id = f.client_id;
        e.text = f.text;
        e.ids = f.token_ids;
        e.reason = f.reason;
        e.error = f.error;
        e.prompt_tokens = f.prompt_tokens;
        e.completion_tokens = f.completion_tokens;
        log->events.push_back(std::move(e));
      },
      [log](request_rejected& r) {
        sink_event e;
        e.kind = ev::rejected;
        e.client_id = r.client_id;
        e.error = r.error;
        log->events.push_back(std::move(e));
      },
  };
}

// One request's events, checked against the sink contract: accepted first,
// then chunks, then exactly one finished and nothing after it.
struct request_view {
  std::string problem;  // empty when the sequence of events is well formed
  request_id rid = 0;
  uint32_t prompt_tokens = 0, completion_tokens = 0;
  size_t n_accepted = 0, n_chunks = 0, n_finished = 0, n_rejected = 0;
  std::string text;          // chunks + finished
  std::vector<int32_t> ids;  // chunks + finished
  finish_reason reason = finish_reason::stop;
  status error;  // the request's error, when it failed
};

request_view view_of(const sink_log& log, const std::string& client_id) {
  request_view v;
  auto complain = [&](const std::string& what) {
    if (v.problem.empty()) v.problem = what;
  };
  for (const auto& e : log.events) {
    if (e.client_id != client_id) continue;
    if (v.n_finished > 0) complain("an event after finished");
    switch (e.kind) {
      case ev::accepted:
        if (v.n_accepted + v.n_chunks > 0) complain("accepted twice or after a chunk");
        v.n_accepted++;
        v.rid = e.rid;
        v.prompt_tokens = e.prompt_tokens;
        break;
      case ev::chunk:
        if (v.n_accepted == 0) complain("a chunk before accepted");
        if (e.rid != v.rid) complain("a chunk with another rid");
        v.n_chunks++;
        v.text += e.text;
        v.ids.insert(v.ids.end(), e.ids.begin(), e.ids.end());
        break;
      case ev::finished:
        if (v.n_accepted == 0) complain("finished before accepted");
        if (e.rid != v.rid) complain("finished with another rid");
        v.n_finished++;
        v.text += e.text;
        v.ids.insert(v.ids.end(), e.ids.begin(), e.ids.end());
        v.reason = e.reason;
        v.error = e.error;
        v.completion_tokens = e.completion_tokens;
        break;
      case ev::rejected:
        v.n_rejected++;
        v.error = e.error;
        break;
    }
  }
  if (v.n_rejected > 0 && v.n_accepted + v.n_chunks + v.n_finished > 0) complain("rejected and accepted");
  if (v.n_rejected == 0 && v.n_finished != 1) complain("not exactly one finished");
  return v;
}

std::string reason_name(finish_reason r) { return finish_reason_name(r); }

generation_request make_request(const std::string& id, const std::string& prompt, uint32_t max_tokens) {
  generation_request r;
  r.client_id = id;
  r.prompt = prompt;
  r.want_token_ids = true;
  r.params.max_tokens = max_tokens;
  r.params.temperature = 0;
  r.params.has_seed = true;
  r.params.seed = 7;
  return r;
}

// -- the fixture ------------------------------------------------------------------

struct dsl_config : caf::actor_system_config {
  dsl_config() { register_types(*this); }
};

struct fixture : test_coordinator_fixture<dsl_config> {
  std::shared_ptr<const model> mdl = stories260k();
  std::shared_ptr<exec_script> script = std::make_shared<exec_script>();
  std::shared_ptr<sink_log> log = std::make_shared<sink_log>();
  caf::actor exec_raw;
  executor_actor exec;
  scheduler_actor scheduler;
  intake_actor intake;
  request_sink_actor sink;
  static constexpr int32_t k_block_size = 16;

  fixture() {
    spdlog::set_level(spdlog::level::err);
    const auto& tok = mdl->tokenizer();
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
      const auto piece = tok.token_to_piece(id);
      if (piece.empty() || tok.is_eog(id) || id == tok.bos_id() || tok.rendered_piece(id) != piece) continue;
      bool plain = true;
      for (char c : piece) plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ' ');
      if (plain) script->vocab.push_back(id);
    }
    CAF_REQUIRE(script->vocab.size() > 50);
    script->block_size = k_block_size;
  }

  // Spawns the graph; each test picks its limits.
  void spawn_graph(int32_t max_running, int32_t n_blocks = 64, uint32_t max_waiting = 256) {
    exec_raw = sys.spawn(fake_executor, script);
    exec = caf::actor_cast<executor_actor>(exec_raw);
    scheduler_config sc;
    sc.max_batch_tokens = 64;
    sc.max_running = max_running;
    kv_cache_config kc;
    kc.n_blocks = n_blocks;
    kc.block_size = k_block_size;
    kc.enable_prefix_caching = true;
    const std::shared_ptr<const tokenizer> tok(mdl, &mdl->tokenizer());
    scheduler = spawn_scheduler(sys, tok, exec, sc, kc);
    intake_config ic;
    ic.limits.n_ctx = std::min(mdl->hparams().n_ctx_train, n_blocks * k_block_size);  // as runtime::start
    ic.max_waiting = max_waiting;
    ic.limits.n_vocab = mdl->tokenizer().n_vocab();
    ic.seed = 1;
    intake = spawn_intake(sys, tok, scheduler, ic, spawn_session);
    sink = sys.spawn(recording_sink, log);
    run();
  }

  ~fixture() override {
    for (const auto& a : {caf::actor_cast<caf::actor>(intake), caf::actor_cast<caf::actor>(scheduler), exec_raw,
                          caf::actor_cast<caf::actor>(sink)}) {
      if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    }
    run();
  }

  void submit(generation_request req) { self->send(intake, submit_atom_v, std::move(req), sink); }

  // Scheduler statistics without triggering timeouts (unlike request<T>()).
  engine_stats stats() {
    auto h = self->request(scheduler, caf::infinite, stats_atom_v);
    consume_messages();
    engine_stats out;
    bool got = false;
    h.receive([&](engine_stats& s) { out = std::move(s), got = true; },
              [&](caf::error& err) { CAF_FAIL("stats failed: " << sys.render(err)); });
    CAF_REQUIRE(got);
    return out;
  }

  uint64_t finished_by(const engine_stats& s, finish_reason r) {
    const auto i = static_cast<size_t>(r);
    return i < s.finished_by_reason.size() ? s.finished_by_reason[i] : 0;
  }

  // The ids the fake executor produces for a request, and their text.
  std::vector<int32_t> expected_ids(const request_view& v, uint32_t n) const {
    std::vector<int32_t> ids;
    for (uint32_t i = 0; i < n; ++i) ids.push_back(script->token_at(v.rid, static_cast<int32_t>(v.prompt_tokens + i)));
    return ids;
  }
  std::string text_of(const std::vector<int32_t>& ids) const {
    std::string s;
    for (auto id : ids) s += mdl->tokenizer().token_to_piece(id);
    return s;
  }

  // A request that ran to max_tokens with the fake's tokens, events in order.
  void check_completed(const std::string& id, uint32_t n) {
    auto v = view_of(*log, id);
    CAF_CHECK_EQUAL(v.problem, "");
    CAF_CHECK_EQUAL(v.n_finished, 1u);
    CAF_CHECK_EQUAL(reason_name(v.reason), "length");
    CAF_CHECK_EQUAL(v.completion_tokens, n);
    CAF_CHECK_EQUAL(v.ids, expected_ids(v, n));
    CAF_CHECK_EQUAL(v.text, text_of(expected_ids(v, n)));
  }

  // Nothing left in the engine: no sequence, no KV block, no sampler.
  void check_idle() {
    auto s = stats();
    CAF_CHECK_EQUAL(s.running, 0u);
    CAF_CHECK_EQUAL(s.waiting, 0u);
    CAF_CHECK_EQUAL(s.kv_blocks_used, 0u);
    CAF_CHECK_EQUAL(script->violations, std::vector<std::string>{});
    // Idle, the scheduler has closed every sampler it opened (a recurrent
    // model's state slot goes with it).
    CAF_CHECK(script->open.empty());
  }
};

}  // namespace

CAF_TEST_FIXTURE_SCOPE(engine_graph, fixture)

CAF_TEST(invalid submit gets exactly one rejected and spawns nothing) {
  spawn_graph(8);
  const auto running_before = sys.registry().running();
  auto bad_token = make_request("bad-token", "", 4);
  bad_token.use_tokens = true;
  bad_token.tokens = {1, mdl->tokenizer().n_vocab() + 5};  // id >= vocab
  submit(bad_token);
  expect((submit_atom, generation_request, request_sink_actor), from(self).to(intake));
  expect((request_rejected), from(intake).to(sink));
  CAF_CHECK(!sched.has_job());  // no session spawned, nothing sent to the scheduler
  auto bad_param = make_request("bad-param", "Once upon a time", 4);
  bad_param.params.top_p = 0;  // must be in (0, 1]
  submit(bad_param);
  expect((submit_atom, generation_request, request_sink_actor), from(self).to(intake));
  expect((request_rejected), from(intake).to(sink));
  CAF_CHECK(!sched.has_job());
  run();
  CAF_CHECK_EQUAL(sys.registry().running(), running_before);
  CAF_REQUIRE_EQUAL(log->events.size(), 2u);
  for (const char* id : {"bad-token", "bad-param"}) {
    auto v = view_of(*log, id);
    CAF_CHECK_EQUAL(v.problem, "");
    CAF_CHECK_EQUAL(v.n_rejected, 1u);
    CAF_CHECK_EQUAL(std::string(errc_name(v.error.code)), std::string(errc_name(errc::invalid_param)));
  }
  auto s = stats();
  CAF_CHECK_EQUAL(s.steps, 0u);
  CAF_CHECK_EQUAL(script->steps, 0u);
  CAF_CHECK(script->ever_opened.empty());
}

CAF_TEST(valid submit flows intake to session to scheduler to executor and back) {
  spawn_graph(8);
  submit(make_request("one", "Once upon a time", 4));
  expect((submit_atom, generation_request, request_sink_actor), from(self).to(intake));
  // Intake spawned the session and handed the sequence to the scheduler.
  auto session = std::get<2>(extract<admit_atom, sequence_admission, session_actor>(scheduler));
  CAF_REQUIRE(session != nullptr);
  expect((admit_atom, sequence_admission, session_actor), from(intake).to(scheduler));
  // The scheduler planned a step: the session hears it started; the running
  // session has said accepted first and frees its admission slot.
  expect((session_update), from(scheduler).to(session));
  expect((request_accepted), from(session).to(sink));
  expect((dequeued_atom, request_id, uint32_t), from(session).to(intake));
  // The executor gets the sampler, then the step.
  expect((sequence_open), from(scheduler).to(exec));
  expect((engine_step), from(scheduler).to(exec));
  expect((engine_step_result), from(exec).to(scheduler));
  // The first token goes to the session and out as a chunk.
  expect((session_update), from(scheduler).to(session));
  expect((request_chunk), from(session).to(sink));
  CAF_REQUIRE_EQUAL(log->events.size(), 2u);
  const auto first_ids = log->events[1].ids;
  // The remaining three steps.
  run();
  check_completed("one", 4);
  auto v = view_of(*log, "one");
  CAF_CHECK_EQUAL(v.n_accepted, 1u);
  CAF_CHECK_GREATER_OR_EQUAL(v.n_chunks, 1u);
  CAF_CHECK_EQUAL(first_ids, std::vector<int32_t>{script->token_at(v.rid, static_cast<int32_t>(v.prompt_tokens))});
  CAF_CHECK_EQUAL(script->steps, 4u);  // one prefill step + three decode steps
  auto s = stats();
  CAF_CHECK_EQUAL(s.steps, 4u);
  CAF_CHECK_EQUAL(s.tokens_generated, 4u);
  CAF_CHECK_EQUAL(finished_by(s, finish_reason::length), 1u);
  check_idle();
}

CAF_TEST(cancel of a waiting request gives one cancelled and holds no blocks) {
  spawn_graph(1);  // one running sequence: the second request waits
  script->hold = true;
  submit(make_request("runner", "Once upon a time", 6));
  submit(make_request("waiter", "The little dog was sad because", 6));
  consume_messages();  // the runner's first step is in flight (held)
  CAF_REQUIRE_EQUAL(script->held.size(), 1u);
  auto s = stats();
  CAF_CHECK_EQUAL(s.running, 1u);
  CAF_CHECK_EQUAL(s.waiting, 1u);
  const auto waiter = view_of(*log, "waiter");
  CAF_REQUIRE_EQUAL(waiter.n_accepted, 1u);
  self->send(intake, cancel_atom_v, waiter.rid, finish_reason::cancelled);
  consume_messages();
  auto v = view_of(*log, "waiter");
  CAF_CHECK_EQUAL(v.problem, "");
  CAF_CHECK_EQUAL(v.n_finished, 1u);
  CAF_CHECK_EQUAL(reason_name(v.reason), "cancelled");
  CAF_CHECK_EQUAL(v.n_chunks, 0u);
  CAF_CHECK_EQUAL(v.completion_tokens, 0u);
  s = stats();
  CAF_CHECK_EQUAL(s.waiting, 0u);
  CAF_CHECK_EQUAL(s.running, 1u);
  CAF_CHECK_EQUAL(finished_by(s, finish_reason::cancelled), 1u);
  CAF_CHECK_EQUAL(script->ever_opened.count(waiter.rid), 0u);  // never reached the executor
  // A second cancel of the same request changes nothing.
  self->send(intake, cancel_atom_v, waiter.rid, finish_reason::cancelled);
  self->send(exec_raw, ready_atom_v);
  run();
  CAF_CHECK_EQUAL(view_of(*log, "waiter").n_finished, 1u);
  check_completed("runner", 6);
  check_idle();
  CAF_CHECK_EQUAL(finished_by(stats(), finish_reason::cancelled), 1u);
}

CAF_TEST(cancel while the step of the request is in flight ends it once) {
  spawn_graph(8);
  script->hold = true;
  submit(make_request("victim", "Once upon a time", 6));
  consume_messages();
  CAF_REQUIRE_EQUAL(script->held.size(), 1u);
  const auto rid = view_of(*log, "victim").rid;
  self->send(intake, cancel_atom_v, rid, finish_reason::cancelled);
  consume_messages();
  // Cancel takes effect at the step boundary (scheduler_core's contract):
  // nothing ends while the step is in flight.
  CAF_CHECK_EQUAL(view_of(*log, "victim").n_finished, 0u);
  // The step comes back: its token is the request's last output, then it
  // ends with cancelled, once.
  self->send(exec_raw, ready_atom_v);
  run();
  auto v = view_of(*log, "victim");
  CAF_CHECK_EQUAL(v.problem, "");
  CAF_CHECK_EQUAL(v.n_finished, 1u);
  CAF_CHECK_EQUAL(reason_name(v.reason), "cancelled");
  CAF_CHECK_EQUAL(v.completion_tokens, 1u);
  CAF_CHECK_EQUAL(v.ids, expected_ids(v, 1));
  CAF_CHECK_EQUAL(script->steps, 1u);  // no step after the cancel
  CAF_CHECK_EQUAL(finished_by(stats(), finish_reason::cancelled), 1u);
  check_idle();
  submit(make_request("after", "The sun was", 5));
  run();
  check_completed("after", 5);
  check_idle();
}

CAF_TEST(a failing step ends only its requests with error and the next succeed) {
  spawn_graph(2);  // a and b share a step; c waits for a free slot
  script->hold = true;
  submit(make_request("a", "Once upon a time", 5));
  consume_messages();  // a's prefill step is held
  submit(make_request("b", "Lily and Tom went to the park", 5));
  submit(make_request("c", "The sun was", 5));
  consume_messages();
  CAF_REQUIRE_EQUAL(script->held.size(), 1u);
  // The next step (a's decode + b's prefill) fails; the held one succeeded.
  self->send(exec, fail_atom_v, uint32_t{1});
  expect((fail_atom, uint32_t), from(self).to(exec));
  self->send(exec_raw, ready_atom_v);
  run();
  CAF_CHECK_EQUAL(script->failed_steps, 1u);
  for (const char* id : {"a", "b"}) {
    auto v = view_of(*log, id);
    CAF_CHECK_EQUAL(v.problem, "");
    CAF_CHECK_EQUAL(reason_name(v.reason), "error");
    CAF_CHECK_EQUAL(std::string(errc_name(v.error.code)), std::string(errc_name(errc::internal)));
  }
  CAF_CHECK_EQUAL(view_of(*log, "a").n_chunks, 1u);  // its first token came from the good step
  check_completed("c", 5);
  submit(make_request("d", "Mom said", 3));
  run();
  check_completed("d", 3);
  auto s = stats();
  CAF_CHECK_EQUAL(s.failed_steps, 1u);
  CAF_CHECK_EQUAL(finished_by(s, finish_reason::error), 2u);
  CAF_CHECK_EQUAL(finished_by(s, finish_reason::length), 2u);
  check_idle();
}

CAF_TEST(deadline fires on the test clock and ends the request once) {
  spawn_graph(8);
  script->hold = true;
  auto req = make_request("late", "Once upon a time", 8);
  req.deadline_ms = 100;
  submit(req);
  submit(make_request("no-deadline", "The sun was", 3));
  consume_messages();  // no timeouts: the clock stands still
  CAF_REQUIRE(sched.clock().has_pending_timeout());
  CAF_CHECK_EQUAL(advance_time(std::chrono::milliseconds(99)), 0u);
  consume_messages();
  CAF_CHECK_EQUAL(view_of(*log, "late").n_finished, 0u);
  CAF_CHECK_EQUAL(advance_time(std::chrono::milliseconds(3)), 1u);
  consume_messages();
  auto v = view_of(*log, "late");
  CAF_CHECK_EQUAL(v.n_finished, 1u);
  CAF_CHECK_EQUAL(reason_name(v.reason), "deadline");
  // The held step returns a token for the ended request; the other goes on.
  self->send(exec_raw, ready_atom_v);
  run();
  v = view_of(*log, "late");
  CAF_CHECK_EQUAL(v.problem, "");
  CAF_CHECK_EQUAL(v.n_finished, 1u);
  CAF_CHECK_EQUAL(reason_name(v.reason), "deadline");
  check_completed("no-deadline", 3);
  auto s = stats();
  CAF_CHECK_EQUAL(finished_by(s, finish_reason::deadline), 1u);
  check_idle();
}

CAF_TEST(events of concurrent requests arrive in order per request) {
  spawn_graph(8);
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Ben liked to", "It was a rainy day",
                                            "Sue found a box"};
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto req = make_request("r" + std::to_string(i), prompts[i], static_cast<uint32_t>(3 + 2 * i));
    req.stream = (i != 2);  // one only gets accepted and finished
    submit(req);
  }
  run();
  for (size_t i = 0; i < prompts.size(); ++i) check_completed("r" + std::to_string(i), static_cast<uint32_t>(3 + 2 * i));
  CAF_CHECK_EQUAL(view_of(*log, "r2").n_chunks, 0u);
  CAF_CHECK_GREATER(view_of(*log, "r4").n_chunks, 1u);
  auto s = stats();
  CAF_CHECK_GREATER(s.step_seqs_max, 1u);  // they shared steps
  CAF_CHECK_EQUAL(finished_by(s, finish_reason::length), prompts.size());
  std::set<request_id> rids;
  for (size_t i = 0; i < prompts.size(); ++i) rids.insert(view_of(*log, "r" + std::to_string(i)).rid);
  CAF_CHECK_EQUAL(rids.size(), prompts.size());
  check_idle();
}

CAF_TEST(a full waiting queue rejects with overloaded until a request starts) {
  spawn_graph(1, 64, 1);  // one waiting request at most
  script->hold = true;
  submit(make_request("first", "Once upon a time", 3));
  submit(make_request("second", "The sun was", 3));
  expect((submit_atom, generation_request, request_sink_actor), from(self).to(intake));
  expect((submit_atom, generation_request, request_sink_actor), from(self).to(intake));
  expect((request_rejected), from(intake).to(sink));
  auto v = view_of(*log, "second");
  CAF_CHECK_EQUAL(v.problem, "");
  CAF_CHECK_EQUAL(v.n_rejected, 1u);
  CAF_CHECK_EQUAL(std::string(errc_name(v.error.code)), std::string(errc_name(errc::overloaded)));
  consume_messages();  // "first" started (its slot is free again); its step is held
  submit(make_request("third", "Mom said", 3));
  consume_messages();
  CAF_CHECK_EQUAL(view_of(*log, "third").n_accepted, 1u);
  self->send(exec_raw, ready_atom_v);
  run();
  check_completed("first", 3);
  check_completed("third", 3);
  check_idle();
}

CAF_TEST(shutdown ends running and waiting requests once and refuses new ones) {
  spawn_graph(1);
  script->hold = true;
  submit(make_request("running", "Once upon a time", 8));
  submit(make_request("waiting", "The sun was", 8));
  consume_messages();
  CAF_REQUIRE_EQUAL(script->held.size(), 1u);
  self->send(intake, shutdown_atom_v);
  consume_messages();
  auto w = view_of(*log, "waiting");
  CAF_CHECK_EQUAL(w.problem, "");
  CAF_CHECK_EQUAL(reason_name(w.reason), "shutdown");
  CAF_CHECK_EQUAL(view_of(*log, "running").n_finished, 0u);  // at the step boundary
  self->send(exec_raw, ready_atom_v);
  run();
  auto r = view_of(*log, "running");
  CAF_CHECK_EQUAL(r.problem, "");
  CAF_CHECK_EQUAL(reason_name(r.reason), "shutdown");
  CAF_CHECK_EQUAL(r.ids, expected_ids(r, 1));
  submit(make_request("too-late", "Mom said", 3));
  run();
  auto late = view_of(*log, "too-late");
  CAF_CHECK_EQUAL(late.n_rejected, 1u);
  CAF_CHECK_EQUAL(std::string(errc_name(late.error.code)), std::string(errc_name(errc::draining)));
  CAF_CHECK_EQUAL(finished_by(stats(), finish_reason::shutdown), 2u);
  check_idle();
}

CAF_TEST(a KV pool too small for both requests preempts and both finish correctly) {
  spawn_graph(8, 4);  // 64 token slots; each request needs 45
  submit(make_request("p0", "Once upon a time", 40));
  submit(make_request("p1", "The little dog", 40));
  run();
  check_completed("p0", 40);
  check_completed("p1", 40);
  auto s = stats();
  CAF_CHECK_GREATER(s.preemptions, 0u);
  CAF_CHECK_EQUAL(s.kv_blocks_total, 4u);
  check_idle();
}

CAF_TEST_FIXTURE_SCOPE_END()
