#include "bench/load/load_run.hpp"

#include <algorithm>
#include <deque>

namespace cortex::load {

namespace {

double ms_between(load_clock::time_point a, load_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Applies one event to its request's outcome; returns true when it is the
// request's terminal event.
bool apply_event(const load_event& e, request_outcome& r, phase_result& res) {
  if (r.done) return false;  // nothing may follow a terminal event; ignore if it does
  const bool carries = e.n_tokens > 0 || e.has_text;
  if ((e.what == load_event::kind::chunk || e.what == load_event::kind::finished) && carries) {
    if (!r.got_first) {
      r.got_first = true;
      r.first_token = e.at;
      res.ttft_ms.push_back(ms_between(r.submitted, e.at));
    } else if (e.n_tokens > 0) {
      const double per_token = ms_between(r.last_token, e.at) / e.n_tokens;
      res.itl_ms.insert(res.itl_ms.end(), size_t(e.n_tokens), per_token);
    }
    if (e.n_tokens > 0 || !r.tokens_seen) r.last_token = e.at;
    r.tokens_seen += e.n_tokens;
  }
  if (e.what == load_event::kind::finished) {
    r.done = true;
    r.ended = e.at;
    r.completion_tokens = e.completion_tokens;
    r.ok = e.reason == "length" || e.reason == "stop";
    r.outcome = r.ok ? e.reason : "finished:" + e.reason;
    return true;
  }
  if (e.what == load_event::kind::error) {
    r.done = true;
    r.ended = e.at;
    r.outcome = "error:" + std::to_string(e.error_code) + " " + e.error_name;
    return true;
  }
  return false;
}

}  // namespace

phase_result run_phase(load_transport& t, const load_spec& spec, const std::vector<planned_request>& plan, bool warmup) {
  phase_result res;
  std::vector<const planned_request*> todo;
  for (auto& r : plan) {
    if (r.warmup == warmup) todo.push_back(&r);
  }
  if (todo.empty()) return res;
  const int base = todo.front()->index;
  res.requests.resize(todo.size());
  for (size_t i = 0; i < todo.size(); ++i) res.requests[i].index = todo[i]->index;

  // Closed loop: per stream, the queue of its requests in plan order.
  std::vector<std::deque<const planned_request*>> per_stream(size_t(spec.streams));
  for (auto* r : todo) per_stream[size_t(r->stream)].push_back(r);

  size_t next_poisson = 0, n_done = 0;
  res.start = load_clock::now();
  auto send = [&](const planned_request* r) {
    auto& o = res.requests[size_t(r->index - base)];
    o.submitted = load_clock::now();
    t.submit(*r);
  };
  if (spec.rate <= 0) {
    for (auto& q : per_stream) {
      if (!q.empty()) {
        send(q.front());
        q.pop_front();
      }
    }
  }
  std::vector<load_event> events;
  auto last_event = load_clock::now();
  while (n_done < todo.size()) {
    auto timeout = std::chrono::milliseconds(100);
    if (spec.rate > 0) {
      const auto now = load_clock::now();
      while (next_poisson < todo.size() &&
             res.start + std::chrono::duration<double>(todo[next_poisson]->arrival_s) <= now) {
        send(todo[next_poisson++]);
      }
      if (next_poisson < todo.size()) {
        const auto due = res.start + std::chrono::duration<double>(todo[next_poisson]->arrival_s);
        timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::milliseconds>(due - now) +
                                        std::chrono::milliseconds(1));
      }
    }
    events.clear();
    t.poll(events, timeout);
    for (auto& e : events) {
      const int k = e.request - base;
      if (k < 0 || k >= int(res.requests.size())) continue;  // a stray event of another phase
      last_event = e.at;
      if (!apply_event(e, res.requests[size_t(k)], res)) continue;
      ++n_done;
      res.end = e.at;
      auto& q = per_stream[size_t(todo[size_t(k)]->stream)];
      if (spec.rate <= 0 && !q.empty()) {
        send(q.front());
        q.pop_front();
      }
    }
    if (std::chrono::duration<double>(load_clock::now() - last_event).count() > spec.timeout_s) {
      res.timed_out = true;
      break;
    }
  }
  if (res.timed_out) {
    res.end = load_clock::now();
    for (auto& r : res.requests) {
      if (!r.done) r.outcome = "timeout";
    }
  }
  return res;
}

}  // namespace cortex::load
