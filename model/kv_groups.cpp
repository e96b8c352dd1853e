#include "model/kv_groups.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace cortex {

kv_group_layout kv_group_layout::single(const model_hparams& hp) {
  kv_group_layout g;
  g.groups.resize(1);
  g.group_of.assign(static_cast<size_t>(hp.n_layer), 0);
  g.slot_of.assign(static_cast<size_t>(hp.n_layer), 0);
  for (int l = 0; l < hp.n_layer; ++l) {
    if (!hp.holds_kv(l)) continue;
    g.slot_of[static_cast<size_t>(l)] = static_cast<int>(g.groups[0].layers.size());
    g.groups[0].layers.push_back(l);
  }
  g.n_layer = static_cast<int>(g.groups[0].layers.size());
  g.layers_per_group = g.n_layer;
  g.share_sources(hp);
  return g;
}

void kv_group_layout::share_sources(const model_hparams& hp) {
  // A layer that reads an earlier layer's cache reads it where that layer lives.
  for (int l = 0; l < hp.n_layer; ++l) {
    const size_t src = static_cast<size_t>(hp.kv_layer_of(l));
    group_of[static_cast<size_t>(l)] = group_of[src];
    slot_of[static_cast<size_t>(l)] = slot_of[src];
  }
}

kv_group_layout kv_group_layout::by_window(const model_hparams& hp) {
  // Kinds in order: full attention first, then windows by first layer.
  std::vector<std::pair<int, std::vector<int>>> kinds;
  const auto window_of = [&](int l) { return static_cast<size_t>(l) < hp.attn.size() ? hp.attn[static_cast<size_t>(l)].window : 0; };
  for (int pass = 0; pass < 2; ++pass) {
    for (int l = 0; l < hp.n_layer; ++l) {
      if (!hp.holds_kv(l)) continue;  // no K/V memory of its own
      const int w = window_of(l);
      if ((w == 0) != (pass == 0)) continue;
      auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == w; });
      if (it == kinds.end()) it = kinds.insert(kinds.end(), {w, {}});
      it->second.push_back(l);
    }
  }
  kv_group_layout g = single(hp);
  if (kinds.size() <= 1) {
    if (!kinds.empty()) g.groups[0].window = kinds[0].first;
    return g;
  }
  size_t n_min = SIZE_MAX, n_max = 0;
  for (const auto& k : kinds) {
    n_min = std::min(n_min, k.second.size());
    n_max = std::max(n_max, k.second.size());
  }
  const size_t size = 2 * n_max < 3 * n_min ? n_max : n_min;
  g.layers_per_group = static_cast<int>(size);
  g.groups.clear();
  for (const auto& [window, layers] : kinds) {
    for (size_t first = 0; first < layers.size(); first += size) {
      kv_group grp;
      grp.window = window;
      for (size_t i = first; i < std::min(layers.size(), first + size); ++i) {
        const int l = layers[i];
        g.group_of[static_cast<size_t>(l)] = static_cast<int>(g.groups.size());
        g.slot_of[static_cast<size_t>(l)] = static_cast<int>(i - first);
        grp.layers.push_back(l);
      }
      g.groups.push_back(std::move(grp));
    }
  }
  g.share_sources(hp);
  return g;
}

std::vector<int32_t> kv_group_layout::windows() const {
  std::vector<int32_t> out;
  for (const auto& grp : groups) out.push_back(grp.window);
  return out;
}

std::vector<int32_t> kv_group_layout::layer_counts() const {
  std::vector<int32_t> out;
  for (const auto& grp : groups) out.push_back(static_cast<int32_t>(grp.layers.size()));
  return out;
}

int kv_group_layout::n_blocks_for_memory_of(int n_blocks) const {
  if (layers_per_group <= 0) return 0;
  return static_cast<int>(static_cast<int64_t>(n_blocks) * n_layer / layers_per_group);
}

int kv_group_layout::max_context(int n_blocks, int block_size) const {
  // Blocks a lone sequence of r rows (r * block_size positions) holds when
  // it computes its last token: monotone in r.
  const auto need = [&](int64_t r) {
    int64_t n = 0;
    for (const auto& grp : groups) {
      const int64_t held = grp.window == 0 ? r : std::min<int64_t>(r, (grp.window + block_size - 1) / block_size + 1);
      n += held;
    }
    return n;
  };
  constexpr int unbounded = INT32_MAX / 2;
  const int64_t r_max = unbounded / block_size;
  if (need(r_max) <= n_blocks) return unbounded;
  int64_t lo = 0, hi = r_max;  // need(lo) <= n_blocks < need(hi), or lo = 0
  if (need(0) > n_blocks) return 0;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (need(mid) <= n_blocks ? lo : hi) = mid;
  }
  return static_cast<int>(lo * block_size);
}

}  // namespace cortex
