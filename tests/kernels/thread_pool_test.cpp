#include "kernels/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <vector>

namespace cortex::kernels {
namespace {

TEST(thread_pool_test, every_task_runs_exactly_once) {
  for (int n_threads : {1, 2, 3, 4}) {
    thread_pool pool(n_threads);
    EXPECT_EQ(pool.size(), n_threads);
    for (int n_tasks : {0, 1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n_tasks));
      std::atomic<int> bad_thread{0};
      pool.parallel_for(n_tasks, [&](int task, int thread) {
        runs[task].fetch_add(1);
        if (thread < 0 || thread >= n_threads) bad_thread.fetch_add(1);
      });
      for (int i = 0; i < n_tasks; ++i) ASSERT_EQ(runs[i].load(), 1) << "threads " << n_threads << " task " << i;
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

TEST(thread_pool_test, repeated_calls_see_each_others_results) {
  thread_pool pool(3);
  std::vector<long> data(257, 0);
  for (int round = 0; round < 2000; ++round) {
    pool.parallel_for(static_cast<int>(data.size()), [&](int task, int) { data[task] += task; });
  }
  for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], 2000L * static_cast<long>(i));
}

TEST(thread_pool_test, wakes_up_after_sleeping) {
  thread_pool pool(2);
  pool.set_spin_iterations(1);  // workers go to sleep at once
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> sum{0};
    pool.parallel_for(8, [&](int task, int) { sum.fetch_add(task); });
    ASSERT_EQ(sum.load(), 28);
  }
}

TEST(thread_pool_test, uses_more_than_one_thread) {
  thread_pool pool(2);
  std::atomic<int> seen_worker{0};
  for (int round = 0; round < 200 && !seen_worker.load(); ++round) {
    pool.parallel_for(64, [&](int, int thread) {
      if (thread == 1) seen_worker.store(1);
      volatile int spin = 0;
      for (int i = 0; i < 20000; ++i) spin = spin + i;
    });
  }
  EXPECT_EQ(seen_worker.load(), 1);
}

TEST(thread_pool_test, nested_calls_and_nested_pools) {
  thread_pool outer(3);
  thread_pool inner(2);
  std::vector<std::atomic<int>> runs(12 * 5);
  // Only task 0's thread uses the inner pool; every task nests on outer.
  outer.parallel_for(12, [&](int task, int thread) {
    outer.parallel_for(5, [&](int sub, int sub_thread) {
      runs[task * 5 + sub].fetch_add(1);
      EXPECT_EQ(sub_thread, thread);  // nested calls run inline
    });
  });
  for (auto& r : runs) ASSERT_EQ(r.load(), 1);
  std::atomic<int> count{0};
  outer.parallel_for(1, [&](int, int) { inner.parallel_for(9, [&](int, int) { count.fetch_add(1); }); });
  EXPECT_EQ(count.load(), 9);
}

TEST(thread_pool_test, accepts_std_function_and_function_pointer) {
  thread_pool pool(2);
  std::atomic<int> sum{0};
  const std::function<void(int, int)> f = [&](int task, int) { sum.fetch_add(task + 1); };
  pool.parallel_for(10, f);
  EXPECT_EQ(sum.load(), 55);
  int cells[4] = {0, 0, 0, 0};
  pool.parallel_for(4, [](void* ctx, int task, int) { static_cast<int*>(ctx)[task] = task * 2; }, cells);
  EXPECT_EQ(cells[3], 6);
}

}  // namespace
}  // namespace cortex::kernels
