#include "bench/load/load_plan.hpp"

#include <cmath>
#include <random>

namespace cortex::load {

std::vector<planned_request> make_plan(const load_spec& spec, int n_vocab) {
  const int n_measured = spec.requests > 0 ? spec.requests : spec.streams;
  const int lo = n_vocab > 259 + 16 ? 259 : 0;
  std::mt19937_64 rng(spec.seed);
  // Uniform draws from the raw engine (not std::uniform_*_distribution,
  // whose output differs between standard libraries).
  auto uniform01 = [&] { return double(rng() >> 11) * 0x1.0p-53; };
  std::vector<planned_request> plan;
  plan.reserve(size_t(spec.warmup + n_measured));
  double t_warmup = 0, t_measured = 0;
  for (int i = 0; i < spec.warmup + n_measured; ++i) {
    planned_request r;
    r.index = i;
    r.warmup = i < spec.warmup;
    const int phase_pos = r.warmup ? i : i - spec.warmup;
    r.stream = phase_pos % spec.streams;
    r.max_tokens = spec.output_tokens;
    r.tokens.resize(size_t(spec.prompt_tokens));
    for (auto& t : r.tokens) t = lo + int32_t(rng() % uint64_t(n_vocab - lo));
    if (spec.rate > 0) {
      double& t = r.warmup ? t_warmup : t_measured;
      r.arrival_s = t;  // the first request of a phase goes at once
      t += -std::log(1.0 - uniform01()) / spec.rate;
    }
    plan.push_back(std::move(r));
  }
  return plan;
}

}  // namespace cortex::load
