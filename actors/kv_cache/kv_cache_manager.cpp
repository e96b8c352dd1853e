#include "actors/kv_cache/kv_cache_manager.hpp"

#include <algorithm>
#include <cstdint>
#include <sstream>

namespace cortex {

namespace {
const std::vector<int32_t> k_empty_table;

int32_t blocks_for(int32_t n_tokens, int32_t block_size) {
  return n_tokens <= 0 ? 0 : (n_tokens + block_size - 1) / block_size;
}
}  // namespace

kv_cache_manager::kv_cache_manager(const kv_cache_config& cfg)
    : windows_(cfg.group_windows.empty() ? std::vector<int32_t>{0} : cfg.group_windows),
      group_layers_(cfg.group_layers),
      kv_bytes_per_block_(cfg.kv_bytes_per_block > 0 ? cfg.kv_bytes_per_block
                                                      : uint64_t{cfg.kv_bytes_per_token} * static_cast<uint64_t>(cfg.block_size)),
      pool_(cfg.n_blocks, cfg.block_size, static_cast<int32_t>(windows_.size())),
      enable_prefix_caching_(cfg.enable_prefix_caching),
      kv_type_(cfg.kv_type),
      kv_bytes_per_token_(cfg.kv_bytes_per_token),
      n_released_(windows_.size(), 0) {
  group_layers_.resize(windows_.size(), 0);
  for (int32_t i = 0; i < cfg.fault_pinned_blocks && pool_.n_free() > 0; ++i) pool_.allocate();  // held for good
}

kv_cache_manager::seq_blocks& kv_cache_manager::seq(request_id rid) {
  seq_blocks& s = seqs_[rid];
  if (s.groups.empty()) s.groups.resize(windows_.size());
  return s;
}

int32_t kv_cache_manager::n_rows_out_of_window(int32_t group, int32_t n_tokens) const {
  const int32_t w = windows_[static_cast<size_t>(group)];
  return w == 0 ? 0 : std::max(0, n_tokens - w + 1) / pool_.block_size();
}

int32_t kv_cache_manager::lookup_prefix(request_id rid, const std::vector<int32_t>& tokens) {
  ++generation_;
  seq_blocks& s = seq(rid);
  n_tokens_queried_ += tokens.size();
  if (!enable_prefix_caching_ || s.n_rows() != 0) return 0;
  const int32_t bs = pool_.block_size();
  const size_t n_groups = windows_.size();
  // The block holding the last token is never shared: it is computed.
  const int32_t n_blocks_max = tokens.empty() ? 0 : (static_cast<int32_t>(tokens.size()) - 1) / bs;
  // found[g][i]: group g's cached block i, or -1; as far as every
  // full-attention group has the whole run (chain hashes: nothing after a
  // miss can hit).
  std::vector<std::vector<int32_t>> found(n_groups);
  std::vector<uint64_t> hashes;
  uint64_t parent = kv_block_hash_root;
  for (int32_t i = 0; i < n_blocks_max; ++i) {
    const int32_t* blk = tokens.data() + static_cast<size_t>(i) * bs;
    const uint64_t h = kv_block_hash(parent, blk, bs);
    bool full_hit = true;
    for (size_t g = 0; g < n_groups; ++g) {
      const int32_t b = pool_.find_cached(h, blk, static_cast<int32_t>(g));
      found[g].push_back(b);
      full_hit = full_hit && (b >= 0 || windows_[g] > 0);
    }
    if (!full_hit) break;
    hashes.push_back(h);
    parent = h;
  }
  // The longest prefix every windowed group can serve too: the blocks from
  // its first still-visible one up to the prefix's end, cached without a gap.
  std::vector<std::vector<int32_t>> run(n_groups);  // run[g][i]: cached blocks of g ending at i
  for (size_t g = 0; g < n_groups; ++g) {
    int32_t r = 0;
    for (size_t i = 0; i < hashes.size(); ++i) run[g].push_back(r = found[g][i] >= 0 ? r + 1 : 0);
  }
  int32_t n_hit = static_cast<int32_t>(hashes.size());
  for (; n_hit > 0; --n_hit) {
    bool ok = true;
    for (size_t g = 0; g < n_groups && ok; ++g) {
      const int32_t n_skipped = n_rows_out_of_window(static_cast<int32_t>(g), n_hit * bs);
      ok = run[g][static_cast<size_t>(n_hit - 1)] >= n_hit - n_skipped;
    }
    if (ok) break;
  }
  for (size_t g = 0; g < n_groups; ++g) {
    group_table& gt = s.groups[g];
    gt.n_released = std::min(n_hit, n_rows_out_of_window(static_cast<int32_t>(g), n_hit * bs));
    n_released_[g] += gt.n_released;
    for (int32_t i = 0; i < n_hit; ++i) {
      if (i < gt.n_released) {
        gt.table.push_back(kv_block_released);
        continue;
      }
      const int32_t b = found[g][static_cast<size_t>(i)];
      pool_.ref(b);
      gt.table.push_back(b);
    }
  }
  s.hashes.assign(hashes.begin(), hashes.begin() + n_hit);
  const int32_t n_tokens_hit = n_hit * bs;
  n_tokens_hit_ += static_cast<uint64_t>(n_tokens_hit);
  return n_tokens_hit;
}

int32_t kv_cache_manager::n_blocks_needed(request_id rid, int32_t pos_end) const {
  const auto it = seqs_.find(rid);
  const int32_t have = it == seqs_.end() ? 0 : static_cast<int32_t>(it->second.n_rows());
  return std::max(0, blocks_for(pos_end, pool_.block_size()) - have) * n_groups();
}

kv_alloc_plan kv_cache_manager::plan_allocation(const std::vector<kv_alloc_request>& requests) const {
  kv_alloc_plan plan;
  plan.generation = generation_;
  plan.n_blocks_available = pool_.n_available();
  plan.entries.reserve(requests.size());
  int32_t n_fitting = 0;
  bool all_fit = true;
  for (const kv_alloc_request& r : requests) {
    kv_alloc_entry e;
    e.rid = r.rid;
    e.pos_end = r.pos0 + r.n_tokens;
    e.n_blocks_new = n_blocks_needed(r.rid, e.pos_end);
    plan.n_blocks_new += e.n_blocks_new;
    all_fit = all_fit && plan.n_blocks_new <= plan.n_blocks_available;
    e.fits = all_fit;
    if (all_fit) n_fitting = plan.n_blocks_new;
    plan.entries.push_back(e);
  }
  plan.fits = all_fit;
  plan.evicted = pool_.peek_evictions(n_fitting);
  return plan;
}

status kv_cache_manager::commit(const kv_alloc_plan& plan) {
  if (!plan.fits) return fail(errc::internal, "kv_cache_manager::commit: the plan does not fit");
  if (plan.generation != generation_) return fail(errc::internal, "kv_cache_manager::commit: the plan is stale");
  ++generation_;
  for (const kv_alloc_entry& e : plan.entries) {
    seq_blocks& s = seq(e.rid);
    const int32_t n_rows = e.n_blocks_new / n_groups();
    for (int32_t r = 0; r < n_rows; ++r) {
      for (int32_t g = 0; g < n_groups(); ++g) {
        const int32_t b = pool_.allocate(g);  // cannot fail: the plan fits this state
        s.groups[static_cast<size_t>(g)].table.push_back(b);
      }
    }
  }
  return status::ok();
}

void kv_cache_manager::free(request_id rid) {
  const auto it = seqs_.find(rid);
  if (it == seqs_.end()) return;
  ++generation_;
  seq_blocks& s = it->second;
  for (size_t r = s.n_rows(); r-- > 0;) {
    for (const group_table& gt : s.groups) {
      if (gt.table[r] != kv_block_released) pool_.unref(gt.table[r]);
    }
  }
  for (size_t g = 0; g < s.groups.size(); ++g) n_released_[g] -= s.groups[g].n_released;
  seqs_.erase(it);
}

void kv_cache_manager::truncate(request_id rid, int32_t n_tokens) {
  const auto it = seqs_.find(rid);
  if (it == seqs_.end()) return;
  seq_blocks& s = it->second;
  const int32_t bs = pool_.block_size();
  const size_t keep = static_cast<size_t>((std::max(0, n_tokens) + bs - 1) / bs);
  if (s.n_rows() <= keep) return;
  ++generation_;
  while (s.n_rows() > keep) {
    for (group_table& gt : s.groups) {
      if (gt.table.back() != kv_block_released) pool_.unref(gt.table.back());
      gt.table.pop_back();
    }
  }
  for (size_t g = 0; g < s.groups.size(); ++g) {
    group_table& gt = s.groups[g];
    const int32_t n_kept = std::min(gt.n_released, static_cast<int32_t>(keep));
    n_released_[g] -= gt.n_released - n_kept;
    gt.n_released = n_kept;
  }
  if (s.hashes.size() > keep) s.hashes.resize(keep);
}

void kv_cache_manager::release_out_of_window(request_id rid, int32_t n_tokens_computed) {
  const auto it = seqs_.find(rid);
  if (it == seqs_.end()) return;
  seq_blocks& s = it->second;
  // Row by row over the groups, oldest first: cached blocks reach the LRU
  // list in that order, so the oldest are evicted first.
  std::vector<int32_t> target(s.groups.size());
  int32_t row_end = 0, row_begin = INT32_MAX;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    target[g] = std::min(static_cast<int32_t>(s.n_rows()), n_rows_out_of_window(static_cast<int32_t>(g), n_tokens_computed));
    if (target[g] > s.groups[g].n_released) {
      row_begin = std::min(row_begin, s.groups[g].n_released);
      row_end = std::max(row_end, target[g]);
    }
  }
  if (row_end == 0) return;
  ++generation_;
  for (int32_t r = row_begin; r < row_end; ++r) {
    for (size_t g = 0; g < s.groups.size(); ++g) {
      group_table& gt = s.groups[g];
      if (r < gt.n_released || r >= target[g]) continue;
      pool_.unref(gt.table[static_cast<size_t>(r)]);
      gt.table[static_cast<size_t>(r)] = kv_block_released;
    }
  }
  for (size_t g = 0; g < s.groups.size(); ++g) {
    group_table& gt = s.groups[g];
    if (target[g] <= gt.n_released) continue;
    n_released_[g] += target[g] - gt.n_released;
    gt.n_released = target[g];
  }
}

void kv_cache_manager::register_full_blocks(request_id rid, const std::vector<int32_t>& tokens,
                                            int32_t n_tokens_computed) {
  if (!enable_prefix_caching_) return;
  const auto it = seqs_.find(rid);
  if (it == seqs_.end()) return;
  seq_blocks& s = it->second;
  const int32_t bs = pool_.block_size();
  const int32_t n_computed = std::min<int32_t>(n_tokens_computed, static_cast<int32_t>(tokens.size()));
  const int32_t n_full = std::min<int32_t>(n_computed / bs, static_cast<int32_t>(s.n_rows()));
  for (int32_t i = static_cast<int32_t>(s.hashes.size()); i < n_full; ++i) {
    const uint64_t parent = i == 0 ? kv_block_hash_root : s.hashes[i - 1];
    const int32_t* blk = tokens.data() + static_cast<size_t>(i) * bs;
    const uint64_t h = kv_block_hash(parent, blk, bs);
    s.hashes.push_back(h);
    for (const group_table& gt : s.groups) {
      const int32_t b = gt.table[static_cast<size_t>(i)];
      if (b != kv_block_released && !pool_.is_cached(b)) pool_.cache_block(b, h, blk);
    }
  }
}

const std::vector<int32_t>& kv_cache_manager::block_table(request_id rid, int32_t group) const {
  const auto it = seqs_.find(rid);
  if (it == seqs_.end() || it->second.groups.empty()) return k_empty_table;
  return it->second.groups[static_cast<size_t>(group)].table;
}

kv_cache_stats kv_cache_manager::stats() const {
  kv_cache_stats st;
  st.n_blocks_total = pool_.n_blocks();
  st.n_blocks_used = pool_.n_used();
  st.n_blocks_free = pool_.n_free();
  st.n_blocks_cached = pool_.n_cached();
  st.n_blocks_cached_idle = pool_.n_cached_idle();
  for (const auto& kv : seqs_) st.n_seqs += kv.second.n_rows() == 0 ? 0 : 1;
  st.n_tokens_queried = n_tokens_queried_;
  st.n_tokens_hit = n_tokens_hit_;
  st.n_evictions = pool_.n_evictions();
  st.n_bytes_per_block = kv_bytes_per_block_;
  for (int32_t g = 0; g < n_groups(); ++g) {
    kv_group_stats gs;
    gs.window = windows_[static_cast<size_t>(g)];
    gs.n_layers = group_layers_[static_cast<size_t>(g)];
    gs.n_blocks_used = pool_.n_used_in(g);
    gs.n_blocks_released = n_released_[static_cast<size_t>(g)];
    st.groups.push_back(gs);
  }
  return st;
}

std::string kv_cache_manager::check_invariants() const {
  std::ostringstream err;
  err << pool_.check_invariants();
  const int32_t n_blocks = pool_.n_blocks();
  std::vector<int32_t> uses(static_cast<size_t>(n_blocks), 0);
  std::vector<char> seen_in_seq(static_cast<size_t>(n_blocks), 0);
  std::vector<int32_t> released(windows_.size(), 0);
  for (const auto& [rid, s] : seqs_) {
    if (s.groups.size() != windows_.size()) {
      err << "seq " << rid << " has " << s.groups.size() << " group tables for " << windows_.size() << " groups; ";
      continue;
    }
    for (size_t g = 0; g < s.groups.size(); ++g) {
      const group_table& gt = s.groups[g];
      if (gt.table.size() != s.n_rows()) err << "seq " << rid << " group " << g << " has " << gt.table.size() << " rows, group 0 " << s.n_rows() << "; ";
      if (gt.n_released < 0 || static_cast<size_t>(gt.n_released) > gt.table.size()) {
        err << "seq " << rid << " group " << g << " claims " << gt.n_released << " released entries; ";
        continue;
      }
      if (gt.n_released > 0 && windows_[g] == 0) err << "seq " << rid << " full-attention group " << g << " released blocks; ";
      released[g] += gt.n_released;
      for (size_t i = 0; i < gt.table.size(); ++i) {
        const int32_t b = gt.table[i];
        const bool should_be_released = i < static_cast<size_t>(gt.n_released);
        if ((b == kv_block_released) != should_be_released) {
          err << "seq " << rid << " group " << g << " entry " << i << " is " << b << " with " << gt.n_released << " released; ";
          continue;
        }
        if (b == kv_block_released) continue;
        if (b < 0 || b >= n_blocks) {
          err << "seq " << rid << " holds invalid block " << b << "; ";
          continue;
        }
        ++uses[b];
        if (seen_in_seq[b]) err << "seq " << rid << " holds block " << b << " twice; ";
        seen_in_seq[b] = 1;
        if (pool_.group_of(b) != static_cast<int32_t>(g)) err << "seq " << rid << " group " << g << " holds block " << b << " of group " << pool_.group_of(b) << "; ";
        if (i < s.hashes.size() && pool_.is_cached(b) && pool_.block_hash(b) != s.hashes[i]) {
          err << "seq " << rid << " block " << i << " (id " << b << ") is cached under another hash; ";
        }
      }
    }
    for (const group_table& gt : s.groups) {
      for (int32_t b : gt.table) {
        if (b >= 0 && b < n_blocks) seen_in_seq[b] = 0;
      }
    }
    if (s.hashes.size() > s.n_rows()) {
      err << "seq " << rid << " has " << s.hashes.size() << " hashes for " << s.n_rows() << " blocks; ";
    }
  }
  if (released != n_released_) err << "released entries per group do not match their counts; ";
  for (int32_t b = 0; b < n_blocks; ++b) {
    if (uses[b] != pool_.ref_count(b)) {
      err << "block " << b << " ref_count " << pool_.ref_count(b) << " != " << uses[b] << " table uses; ";
    }
  }
  return err.str();
}

}  // namespace cortex
