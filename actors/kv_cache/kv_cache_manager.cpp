#include "actors/kv_cache/kv_cache_manager.hpp"

#include <algorithm>
#include <sstream>

namespace cortex {

namespace {
const std::vector<int32_t> k_empty_table;

int32_t blocks_for(int32_t n_tokens, int32_t block_size) {
  return n_tokens <= 0 ? 0 : (n_tokens + block_size - 1) / block_size;
}
}  // namespace

kv_cache_manager::kv_cache_manager(const kv_cache_config& cfg)
    : pool_(cfg.n_blocks, cfg.block_size), enable_prefix_caching_(cfg.enable_prefix_caching), kv_type_(cfg.kv_type),
      kv_bytes_per_token_(cfg.kv_bytes_per_token) {
  for (int32_t i = 0; i < cfg.fault_pinned_blocks && pool_.n_free() > 0; ++i) pool_.allocate();  // held for good
}

int32_t kv_cache_manager::lookup_prefix(request_id rid, const std::vector<int32_t>& tokens) {
  ++generation_;
  seq_blocks& s = seqs_[rid];
  n_tokens_queried_ += tokens.size();
  if (!enable_prefix_caching_ || !s.table.empty()) return 0;
  const int32_t bs = pool_.block_size();
  // The block holding the last token is never shared: it is computed.
  const int32_t n_blocks_max = tokens.empty() ? 0 : (static_cast<int32_t>(tokens.size()) - 1) / bs;
  s.hashes.clear();
  uint64_t parent = kv_block_hash_root;
  for (int32_t i = 0; i < n_blocks_max; ++i) {
    const int32_t* blk = tokens.data() + static_cast<size_t>(i) * bs;
    const uint64_t h = kv_block_hash(parent, blk, bs);
    const int32_t b = pool_.find_cached(h, blk);
    if (b < 0) break;
    pool_.ref(b);
    s.table.push_back(b);
    s.hashes.push_back(h);
    parent = h;
  }
  const int32_t n_hit = static_cast<int32_t>(s.table.size()) * bs;
  n_tokens_hit_ += static_cast<uint64_t>(n_hit);
  return n_hit;
}

int32_t kv_cache_manager::n_blocks_needed(request_id rid, int32_t pos_end) const {
  const auto it = seqs_.find(rid);
  const int32_t have = it == seqs_.end() ? 0 : static_cast<int32_t>(it->second.table.size());
  return std::max(0, blocks_for(pos_end, pool_.block_size()) - have);
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
    seq_blocks& s = seqs_[e.rid];
    for (int32_t i = 0; i < e.n_blocks_new; ++i) {
      const int32_t b = pool_.allocate();  // cannot fail: the plan fits this state
      s.table.push_back(b);
    }
  }
  return status::ok();
}

void kv_cache_manager::free(request_id rid) {
  const auto it = seqs_.find(rid);
  if (it == seqs_.end()) return;
  ++generation_;
  const std::vector<int32_t>& table = it->second.table;
  for (auto b = table.rbegin(); b != table.rend(); ++b) pool_.unref(*b);
  seqs_.erase(it);
}

void kv_cache_manager::truncate(request_id rid, int32_t n_tokens) {
  const auto it = seqs_.find(rid);
  if (it == seqs_.end()) return;
  seq_blocks& s = it->second;
  const int32_t bs = pool_.block_size();
  const size_t keep = static_cast<size_t>((std::max(0, n_tokens) + bs - 1) / bs);
  if (s.table.size() <= keep) return;
  ++generation_;
  while (s.table.size() > keep) {
    pool_.unref(s.table.back());
    s.table.pop_back();
  }
  if (s.hashes.size() > keep) s.hashes.resize(keep);
}

void kv_cache_manager::register_full_blocks(request_id rid, const std::vector<int32_t>& tokens,
                                            int32_t n_tokens_computed) {
  if (!enable_prefix_caching_) return;
  const auto it = seqs_.find(rid);
  if (it == seqs_.end()) return;
  seq_blocks& s = it->second;
  const int32_t bs = pool_.block_size();
  const int32_t n_computed = std::min<int32_t>(n_tokens_computed, static_cast<int32_t>(tokens.size()));
  const int32_t n_full = std::min<int32_t>(n_computed / bs, static_cast<int32_t>(s.table.size()));
  for (int32_t i = static_cast<int32_t>(s.hashes.size()); i < n_full; ++i) {
    const uint64_t parent = i == 0 ? kv_block_hash_root : s.hashes[i - 1];
    const int32_t* blk = tokens.data() + static_cast<size_t>(i) * bs;
    const uint64_t h = kv_block_hash(parent, blk, bs);
    s.hashes.push_back(h);
    if (!pool_.is_cached(s.table[i])) pool_.cache_block(s.table[i], h, blk);
  }
}

const std::vector<int32_t>& kv_cache_manager::block_table(request_id rid) const {
  const auto it = seqs_.find(rid);
  return it == seqs_.end() ? k_empty_table : it->second.table;
}

kv_cache_stats kv_cache_manager::stats() const {
  kv_cache_stats st;
  st.n_blocks_total = pool_.n_blocks();
  st.n_blocks_used = pool_.n_used();
  st.n_blocks_free = pool_.n_free();
  st.n_blocks_cached = pool_.n_cached();
  st.n_blocks_cached_idle = pool_.n_cached_idle();
  for (const auto& kv : seqs_) st.n_seqs += kv.second.table.empty() ? 0 : 1;
  st.n_tokens_queried = n_tokens_queried_;
  st.n_tokens_hit = n_tokens_hit_;
  st.n_evictions = pool_.n_evictions();
  return st;
}

std::string kv_cache_manager::check_invariants() const {
  std::ostringstream err;
  err << pool_.check_invariants();
  std::vector<int32_t> uses(static_cast<size_t>(pool_.n_blocks()), 0);
  std::vector<int64_t> last_seq(static_cast<size_t>(pool_.n_blocks()), -1);
  std::vector<char> seen_in_seq(static_cast<size_t>(pool_.n_blocks()), 0);
  for (const auto& [rid, s] : seqs_) {
    for (int32_t b : s.table) {
      if (b < 0 || b >= pool_.n_blocks()) {
        err << "seq " << rid << " holds invalid block " << b << "; ";
        continue;
      }
      ++uses[b];
    }
    for (int32_t b : s.table) {
      if (b < 0 || b >= pool_.n_blocks()) continue;
      if (seen_in_seq[b]) err << "seq " << rid << " holds block " << b << " twice; ";
      seen_in_seq[b] = 1;
    }
    for (int32_t b : s.table) {
      if (b >= 0 && b < pool_.n_blocks()) seen_in_seq[b] = 0;
    }
    if (s.hashes.size() > s.table.size()) {
      err << "seq " << rid << " has " << s.hashes.size() << " hashes for " << s.table.size() << " blocks; ";
    }
    for (size_t i = 0; i < s.hashes.size() && i < s.table.size(); ++i) {
      const int32_t b = s.table[i];
      if (pool_.is_cached(b) && pool_.block_hash(b) != s.hashes[i]) {
        err << "seq " << rid << " block " << i << " (id " << b << ") is cached under another hash; ";
      }
    }
  }
  for (int32_t b = 0; b < pool_.n_blocks(); ++b) {
    if (uses[b] != pool_.ref_count(b)) {
      err << "block " << b << " ref_count " << pool_.ref_count(b) << " != " << uses[b] << " table uses; ";
    }
  }
  return err.str();
}

}  // namespace cortex
