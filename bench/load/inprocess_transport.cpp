#include "bench/load/inprocess_transport.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include "actors/runtime/runtime.hpp"
#include "model/model.hpp"

namespace cortex::load {

namespace {

// As cortexd's (apps/cortexd/main.cpp), so both modes schedule actors alike.
struct load_caf_config : caf::actor_system_config {
  load_caf_config() {
    register_types(*this);
    set("scheduler.policy", caf::atom("sharing"));
    set("logger.verbosity", caf::atom("quiet"));
  }
};

// Events handed from the sink (CAF worker threads) to the controller thread.
struct event_queue {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<load_event> events;
  void push(load_event e) {
    {
      std::lock_guard<std::mutex> lk(mu);
      events.push_back(std::move(e));
    }
    cv.notify_one();
  }
};

// An event of request `client_id`, stamped now (the in-process equivalent of
// the client receiving a frame).
load_event stamped(const std::string& client_id, load_event::kind what) {
  load_event e;
  e.at = load_clock::now();
  e.request = std::atoi(client_id.c_str());
  e.what = what;
  return e;
}

request_sink_actor::behavior_type stamping_sink(request_sink_actor::pointer, std::shared_ptr<event_queue> q) {
  using kind = load_event::kind;
  return {
      [q](request_accepted& a) { q->push(stamped(a.client_id, kind::accepted)); },
      [q](request_chunk& c) {
        auto e = stamped(c.client_id, kind::chunk);
        e.n_tokens = int(c.token_ids.size());
        e.has_text = !c.text.empty();
        q->push(std::move(e));
      },
      [q](request_finished& f) {
        auto e = stamped(f.client_id, kind::finished);
        e.n_tokens = int(f.token_ids.size());
        e.has_text = !f.text.empty();
        e.reason = finish_reason_name(f.reason);
        e.completion_tokens = int(f.completion_tokens);
        q->push(std::move(e));
      },
      [q](request_rejected& r) {
        auto e = stamped(r.client_id, kind::error);
        e.error_code = errc_code(r.error.code);
        e.error_name = errc_name(r.error.code);
        q->push(std::move(e));
      },
  };
}

}  // namespace

struct inprocess_transport::impl {
  load_caf_config cfg;
  caf::actor_system sys{cfg};
  std::unique_ptr<runtime> rt;
  std::shared_ptr<event_queue> queue = std::make_shared<event_queue>();
  request_sink_actor sink;
};

expected<std::unique_ptr<inprocess_transport>> inprocess_transport::start(const runtime_config& cfg) {
  std::unique_ptr<inprocess_transport> t(new inprocess_transport());
  t->impl_ = std::make_unique<impl>();
  auto rt = runtime::start(t->impl_->sys, cfg);
  if (!rt) return rt.error();
  t->impl_->rt = std::move(*rt);
  t->impl_->sink = t->impl_->sys.spawn(stamping_sink, t->impl_->queue);
  return t;
}

inprocess_transport::~inprocess_transport() {
  if (!impl_) return;
  impl_->rt.reset();
  if (impl_->sink) caf::anon_send_exit(impl_->sink, caf::exit_reason::user_shutdown);
}

int inprocess_transport::n_vocab() const { return impl_->rt->loaded_model().hparams().n_vocab; }
int inprocess_transport::n_ctx() const { return impl_->rt->n_ctx(); }

void inprocess_transport::submit(const planned_request& r) {
  generation_request req;
  req.client_id = std::to_string(r.index);
  req.tokens = r.tokens;
  req.use_tokens = true;
  req.stream = true;
  req.want_text = true;
  req.want_token_ids = true;
  req.params.max_tokens = uint32_t(r.max_tokens);
  req.params.temperature = 0;
  req.params.ignore_eos = true;
  caf::anon_send(impl_->rt->intake(), submit_atom_v, std::move(req), impl_->sink);
}

void inprocess_transport::poll(std::vector<load_event>& out, std::chrono::milliseconds timeout) {
  auto& q = *impl_->queue;
  std::unique_lock<std::mutex> lk(q.mu);
  q.cv.wait_for(lk, timeout, [&] { return !q.events.empty(); });
  for (auto& e : q.events) out.push_back(std::move(e));
  q.events.clear();
}

}  // namespace cortex::load
