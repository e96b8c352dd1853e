#include "kernels/thread_pool.hpp"

#include <climits>
#include <immintrin.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cortex::kernels {

namespace {

// Sleeps while *word == expected (or until woken).
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word must be a plain 32-bit int");

// The pool whose task the current thread is running, to run nested calls inline.
thread_local const thread_pool* tls_running_pool = nullptr;
thread_local int tls_running_thread = 0;

}  // namespace

thread_pool::thread_pool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_main(t); });
}

thread_pool::~thread_pool() {
  stop_ = true;
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&epoch_);
  for (auto& w : workers_) w.join();
}

void thread_pool::run_tasks(int thread) {
  const thread_pool* outer_pool = tls_running_pool;
  const int outer_thread = tls_running_thread;
  tls_running_pool = this;
  tls_running_thread = thread;
  for (;;) {
    const int task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= n_tasks_) break;
    fn_(ctx_, task, thread);
  }
  tls_running_pool = outer_pool;
  tls_running_thread = outer_thread;
}

void thread_pool::worker_main(int thread) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t now = epoch_.load(std::memory_order_acquire);
    for (int i = 0; now == seen && i < spin_iterations_; ++i) {
      _mm_pause();
      now = epoch_.load(std::memory_order_acquire);
    }
    while (now == seen) {
      n_sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
      now = epoch_.load(std::memory_order_seq_cst);
      if (now == seen) futex_wait(&epoch_, seen);
      n_sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
      now = epoch_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_) return;
    run_tasks(thread);
    const uint32_t done = n_done_.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (done == static_cast<uint32_t>(n_threads_ - 1) && owner_sleeping_.load(std::memory_order_seq_cst)) {
      futex_wake_all(&n_done_);
    }
  }
}

void thread_pool::parallel_for(int n_tasks, task_fn fn, void* ctx) {
  if (n_tasks <= 0) return;
  if (tls_running_pool == this || n_threads_ == 1 || n_tasks == 1) {
    // Nested call, single thread or single task: run inline.
    const int thread = tls_running_pool == this ? tls_running_thread : 0;
    for (int task = 0; task < n_tasks; ++task) fn(ctx, task, thread);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  n_done_.store(0, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_seq_cst);  // publishes the job
  if (n_sleeping_workers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(&epoch_);

  run_tasks(0);

  const uint32_t all = static_cast<uint32_t>(n_threads_ - 1);
  uint32_t done = n_done_.load(std::memory_order_acquire);
  for (int i = 0; done != all && i < spin_iterations_ * 4; ++i) {
    _mm_pause();
    done = n_done_.load(std::memory_order_acquire);
  }
  while (done != all) {
    owner_sleeping_.store(1, std::memory_order_seq_cst);
    done = n_done_.load(std::memory_order_seq_cst);
    if (done != all) futex_wait(&n_done_, done);
    owner_sleeping_.store(0, std::memory_order_relaxed);
    done = n_done_.load(std::memory_order_acquire);
  }
}

}  // namespace cortex::kernels
