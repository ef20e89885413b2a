#include "trainer/sync.h"

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "trainer/thread_names.h"

namespace tune::trainer {
namespace {

// One plain synchronous step: the reducer's sum is the global mean gradient.
class SyncSgd : public UpdateRule {
 public:
  SyncSgd(GradientReducer& reducer, Optimizer& optimizer, int world)
      : m_reducer(reducer), m_optimizer(optimizer), m_world(world) {}
  float grad_scale(int batch) const override { return 1.f / float(batch * m_world); }
  void step(Weights& w, bool compress) override {
    m_reducer.reduce(w.grads.data(), compress);
    m_optimizer.step(w.params.data(), w.grads.data());
  }
  void evaluate(Weights&, const std::function<void()>& eval) override { eval(); }
  void finish(Weights&) override {}

 private:
  GradientReducer& m_reducer;
  Optimizer& m_optimizer;
  int m_world;
};

// The --double-buffering comm thread: reduces one gradient buffer while the main thread computes
// the next step. All MPI calls of a step are made by it; the main thread only calls MPI while the
// thread is idle (after wait()), which MPI_THREAD_SERIALIZED allows.
class CommThread {
 public:
  explicit CommThread(std::function<void(float*, bool)> work) : m_work(std::move(work)) {
    m_thread = std::thread([this] { loop(); });
  }
  ~CommThread() {
    {
      std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_cv.notify_all();
    m_thread.join();
  }
  void start(float* grads, bool compress) {
    {
      std::lock_guard lock(m_mutex);
      m_job = grads;
      m_compress = compress;
    }
    m_cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return m_job == nullptr; });
    if (m_error) std::rethrow_exception(m_error);
  }

 private:
  void loop() {
    name_this_thread("tt-comm");
    std::unique_lock lock(m_mutex);
    for (;;) {
      m_cv.wait(lock, [&] { return m_stop || m_job != nullptr; });
      if (m_stop) return;
      float* job = m_job;
      const bool compress = m_compress;
      lock.unlock();
      try {
        m_work(job, compress);
      } catch (...) {
        m_error = std::current_exception();
      }
      lock.lock();
      m_job = nullptr;
      m_cv.notify_all();
    }
  }

  std::function<void(float*, bool)> m_work;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  float* m_job = nullptr;
  bool m_compress = true, m_stop = false;
  std::exception_ptr m_error;
  std::thread m_thread;
};

// Double buffering with the lookahead that keeps the synchronous trajectory (see sync.h). The
// model's parameters are the lookahead point; m_master holds the trajectory itself.
class Pipelined : public UpdateRule {
 public:
  Pipelined(GradientReducer& reducer, Communicator& comm, Optimizer& optimizer, std::size_t n)
      : m_optimizer(optimizer),
        m_world(comm.size()),
        m_in_flight(n, 0.f),
        m_thread([&reducer](float* g, bool compress) { reducer.reduce(g, compress); }) {
    // The comm thread shares the rank's core with the compute thread: it must not spin on it.
    comm.set_polite(true);
  }
  float grad_scale(int batch) const override { return 1.f / float(batch * m_world); }
  void step(Weights& w, bool compress) override {
    if (m_master.empty()) m_master = w.params;
    if (m_pending) m_thread.wait();
    m_optimizer.step_ahead(m_master.data(), m_pending ? m_in_flight.data() : nullptr,
                           w.grads.data(), float(m_world), w.params.data());
    w.grads.swap(m_in_flight);
    m_thread.start(m_in_flight.data(), compress);
    m_pending = true;
  }
  void evaluate(Weights& w, const std::function<void()>& eval) override {
    finish(w);
    eval();
  }
  // The next gradient is then computed at the master point itself: nothing is in flight.
  void finish(Weights& w) override {
    if (m_pending) {
      m_thread.wait();
      m_optimizer.step(m_master.data(), m_in_flight.data());
      m_pending = false;
    }
    if (!m_master.empty()) w.params = m_master;
  }

 private:
  Optimizer& m_optimizer;
  int m_world;
  std::vector<float> m_master, m_in_flight;
  bool m_pending = false;
  CommThread m_thread;  // last: joined before the buffers it works on go
};

class BlockMomentum : public UpdateRule {
 public:
  BlockMomentum(const Options& o, GradientReducer& reducer, Optimizer& optimizer, int world)
      : m_reducer(reducer),
        m_optimizer(optimizer),
        m_world(world),
        m_steps(o.block_steps),
        m_momentum(o.block_momentum >= 0 ? o.block_momentum : 1.f - 1.f / float(world)),
        m_lr(o.block_lr >= 0 ? o.block_lr : 1.f - m_momentum),
        m_nesterov(o.block_nesterov) {}
  float grad_scale(int batch) const override { return 1.f / float(batch); }
  void step(Weights& w, bool compress) override {
    if (m_start.empty()) {
      m_start = w.params;
      m_filtered = m_start;
      m_delta.assign(m_start.size(), 0.f);
      m_sum.assign(m_start.size(), 0.f);
    }
    m_optimizer.step(w.params.data(), w.grads.data());
    m_compress = compress;
    if (++m_taken == m_steps) end_block(w.params.data());
  }
  void evaluate(Weights& w, const std::function<void()>& eval) override {
    if (m_start.empty()) return eval();
    m_spare = m_filtered;
    w.params.swap(m_spare);
    eval();
    w.params.swap(m_spare);
  }
  void finish(Weights& w) override {
    if (m_start.empty()) return;
    if (m_taken > 0) end_block(w.params.data());
    w.params = m_filtered;
  }

 private:
  // Averages the block's deltas over the ranks and filters them into the global model.
  void end_block(float* p) {
    float* start = m_start.data();
    float* sum = m_sum.data();
    const auto n = static_cast<std::int64_t>(m_start.size());
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) sum[i] = p[i] - start[i];
    m_reducer.reduce(sum, m_compress);
    float* w = m_filtered.data();
    float* delta = m_delta.data();
    const float eta = m_momentum, zeta = m_lr / float(m_world),
                ahead = m_nesterov ? m_momentum : 0.f;
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      delta[i] = eta * delta[i] + zeta * sum[i];
      w[i] += delta[i];
      start[i] = w[i] + ahead * delta[i];
      p[i] = start[i];
    }
    m_taken = 0;
  }

  GradientReducer& m_reducer;
  Optimizer& m_optimizer;
  int m_world, m_steps, m_taken = 0;
  float m_momentum, m_lr;
  bool m_nesterov, m_compress = true;
  // Block start point, filtered global model W, filtered delta, the delta sum, eval scratch.
  std::vector<float> m_start, m_filtered, m_delta, m_sum, m_spare;
};

}  // namespace

std::unique_ptr<UpdateRule> make_update_rule(const Options& o, GradientReducer& reducer,
                                             Communicator& comm, Optimizer& optimizer,
                                             std::size_t n_params) {
  if (o.sync == SyncKind::block)
    return std::make_unique<BlockMomentum>(o, reducer, optimizer, comm.size());
  if (o.double_buffering) return std::make_unique<Pipelined>(reducer, comm, optimizer, n_params);
  return std::make_unique<SyncSgd>(reducer, optimizer, comm.size());
}

}  // namespace tune::trainer
