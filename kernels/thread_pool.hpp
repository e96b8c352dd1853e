// Compute thread pool for kernels: fork-join over a task range.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace cortex::kernels {

// n threads in total: the thread calling parallel_for takes part as thread 0,
// and n - 1 workers are owned by the pool. Workers spin briefly after a job,
// then sleep on a futex, so back-to-back calls (a forward pass) cost well
// under a microsecond to start and an idle pool costs no CPU.
// A call allocates nothing. Tasks are claimed dynamically (atomic counter),
// so a slow or preempted thread does not stall the others.
//
// REQUIRES: parallel_for is called by one thread at a time (the owner).
// A task may call parallel_for on the same pool: that nested call runs all
// its tasks inline on the calling thread (same thread index).
class thread_pool {
 public:
  using task_fn = void (*)(void* ctx, int task, int thread);

  // REQUIRES: n_threads >= 1.
  explicit thread_pool(int n_threads);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(ctx, task, thread) once for every task in [0, n_tasks), with
  // thread in [0, size()); returns when all have finished (their writes are
  // visible to the caller). n_tasks <= 0 does nothing.
  void parallel_for(int n_tasks, task_fn fn, void* ctx);

  // Same with any callable f(int task, int thread) (a lambda or a
  // std::function), taken by reference: no copy, no allocation.
  template <class F>
  void parallel_for(int n_tasks, F&& f) {
    using fn_type = std::remove_reference_t<F>;
    parallel_for(
        n_tasks, [](void* ctx, int task, int thread) { (*static_cast<fn_type*>(ctx))(task, thread); },
        const_cast<void*>(static_cast<const void*>(&f)));
  }

  // Iterations a worker spins (with pause) before sleeping. Default 4096.
  void set_spin_iterations(int n) { spin_iterations_ = n; }

 private:
  void worker_main(int thread);
  void run_tasks(int thread);

  int n_threads_;
  int spin_iterations_ = 4096;
  std::vector<std::thread> workers_;

  // Job description, written by the owner before epoch_ is bumped.
  task_fn fn_ = nullptr;
  void* ctx_ = nullptr;
  int n_tasks_ = 0;
  bool stop_ = false;

  // Each hot word on its own cache line.
  alignas(64) std::atomic<uint32_t> epoch_{0};
  alignas(64) std::atomic<int> next_task_{0};
  alignas(64) std::atomic<uint32_t> n_done_{0};
  alignas(64) std::atomic<int> n_sleeping_workers_{0};
  std::atomic<int> owner_sleeping_{0};
};

}  // namespace cortex::kernels
