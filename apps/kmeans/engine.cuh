// The clustering on one context (kmeans_engine) and over several ranks (ranked_kmeans).
// A part of the kmeans app's one translation unit (apps/kmeans/kmeans_app.cu includes them in order:
// functors, kernels, plan, engine, files).
#pragma once

#include "apps/kmeans/plan.cuh"
#include "core/multi/mpi_world.hpp"

namespace soac::apps {
namespace {

// ---- Small helpers over both backends -------------------------------------------------------

template <class T>
void fill_zero(context& ctx, span<T> s) {
  ctx.fill_zero(s.data(), s.size_bytes());
}

template <class T>
void copy_within(context& ctx, span<T> to, span<const T> from) {
  ctx.copy_within(to.data(), from.data(), from.size_bytes());
}

// ---- The clustering -------------------------------------------------------------------------

// init=first takes Rodinia's initial centroids (validate::rodinia_initial_point): the first k
// points, unless k > n / 2.
bool first_k_are_rodinias(std::int64_t n, std::int64_t k) { return validate::rodinia_initial_point(n, k - 1) == k - 1; }

std::vector<float> rodinia_initial_centroids(std::span<const float> x, std::int64_t n, std::int64_t d, std::int64_t k) {
  std::vector<float> c(static_cast<std::size_t>(k * d));
  for (std::int64_t i = 0; i < k; ++i) {
    const auto from = x.begin() + validate::rodinia_initial_point(n, i) * d;
    std::copy(from, from + d, c.begin() + i * d);
  }
  return c;
}

struct kmeans_config {
  std::int64_t k = 5;
  validate::kmeans_stop_rule stop;
  init_kind init = init_kind::first;
  std::uint64_t seed = 1;
};

struct step_report {
  std::int64_t changed = 0;
  double objective = std::numeric_limits<double>::quiet_NaN();  // of this step's assignment
};

struct clustering {
  std::vector<float> centroids, initial_centroids;
  std::vector<std::int32_t> membership, first_membership;
  std::vector<std::int64_t> changed;
  std::vector<double> objectives;
  std::int64_t iterations = 0;
  double objective = 0;  // of the final centroids and memberships
  double ms = 0;         // initialisation and iterations
};

// Iterations' reports (changes and objective) read back without stalling the stream: the copy of
// a slot is queued after the iteration's kernels and waited for through its event, into pinned
// memory (cuda); on the host backend the copy is done at once.
class report_slots {
 public:
  explicit report_slots(const context& ctx) : cuda_(ctx.is_cuda()) {
    if (!cuda_) return;
    ctx.activate();
    events_.emplace_back();
    events_.emplace_back();
    void* p = nullptr;
    SOAC_CUDA_CHECK(cudaMallocHost(&p, sizeof(summary) * 2));
    pinned_ = static_cast<summary*>(p);
  }
  ~report_slots() {
    for (const auto& e : events_) cudaEventSynchronize(e.get());  // no copy into pinned_ outlives it
    if (pinned_) cudaFreeHost(pinned_);
  }
  report_slots(const report_slots&) = delete;
  report_slots& operator=(const report_slots&) = delete;

  // Queues (cuda) the copy of `from` (the backend's memory) into slot `slot` after the work queued so far.
  void start(const context& ctx, const summary* from, int slot) {
    if (!cuda_) {
      host_[slot] = *from;
      return;
    }
    SOAC_CUDA_CHECK(cudaMemcpyAsync(pinned_ + slot, from, sizeof(summary), cudaMemcpyDeviceToHost, ctx.stream()));
    SOAC_CUDA_CHECK(cudaEventRecord(events_[slot].get(), ctx.stream()));
  }
  summary wait(int slot) {
    if (!cuda_) return host_[slot];
    SOAC_CUDA_CHECK(cudaEventSynchronize(events_[slot].get()));
    return pinned_[slot];
  }

 private:
  bool cuda_;
  summary* pinned_ = nullptr;
  std::vector<cuda_event> events_;  // one per slot (cuda)
  summary host_[2] = {};
};

// One dataset on one context with one plan: the device state of Lloyd's iterations.
class kmeans_engine {
 public:
  // parts: sums=batched's parts per feature, 0 to choose (column_parts); several ranks pass one
  // count to all, so that their sums arrays have one layout for the all-reduce.
  kmeans_engine(context& ctx, const kmeans_points& pts, std::int64_t k, kmeans_plan plan, std::int64_t parts = 0)
      : ctx_(ctx), n_(pts.n), d_(pts.d), k_(k), plan_(std::move(plan)), host_x_(pts.features) {
    resolve_plan(plan_, ctx, n_, d_, k_);
    x_ = buffer<float>(ctx, std::span<const float>(pts.features));
    const std::size_t kd = std::size_t(k_ * d_);
    centroids_ = buffer<float>(ctx, kd);
    next_ = buffer<float>(ctx, kd);
    initial_ = buffer<float>(ctx, kd);
    if (plan_.update == update_kind::rodinia || columns()) {
      // The feature-major copy (Rodinia's invert_mapping), made once.
      features_t_ = buffer<float>(ctx, std::size_t(n_ * d_));
      scatter(ctx, n_ * d_, transpose_points{x_.data(), index_split(d_, n_ * d_), n_}, features_t_);
    }
    if (columns()) member_ = buffer<std::int32_t>(ctx, std::size_t(n_));
    if (plan_.update == update_kind::rodinia) {
      membership_dev_ = buffer<std::int32_t>(ctx, std::size_t(n_));
      host_centroids_.resize(kd);
      host_next_.resize(kd);
      host_membership_.resize(std::size_t(n_));
      host_previous_.resize(std::size_t(n_));
      host_sums_.resize(kd);
      host_counts_.resize(std::size_t(k_));
    }
    best_ = buffer<nearest>(ctx, std::size_t(n_));
    previous_ = buffer<nearest>(ctx, std::size_t(n_));
    first_ = buffer<nearest>(ctx, std::size_t(n_));
    summary_ = buffer<summary>(ctx, 2);  // a slot per iteration's parity (see iterate)
    reports_ = std::make_unique<report_slots>(ctx);
    if (plan_.update != update_kind::rodinia) {
      counts_ = buffer<int>(ctx, std::size_t(k_));
      if (plan_.update == update_kind::hist && plan_.sums == sums_kind::batched)
        parts_ = parts > 0 ? parts : batched_parts(ctx, n_, d_);
      if (plan_.update == update_kind::hist && plan_.sums == sums_kind::vec4)
        sums4_ = buffer<vec<float, vector_width>>(ctx, std::size_t(k_ * blocks()));
      else
        sums_ = buffer<float>(ctx, kd * std::size_t(parts_));
    }
    if (plan_.update == update_kind::segreduce) {
      keys_ = buffer<std::uint32_t>(ctx, std::size_t(n_));
      perm_ = buffer<std::uint32_t>(ctx, std::size_t(n_));
      offsets_ = buffer<int>(ctx, std::size_t(k_));
    }
    if (fused()) {
      const int slices = fused_slices(d_);
      update_plan_ = ctx.is_cuda() ? "one kernel, " + std::to_string(slices) + " lanes a point, a copy of the sums per lane in " +
                                         std::to_string(fused_layout{slices, int(k_), d_}.bytes() / 1024) + " KiB of shared memory a block"
                                   : "one pass (host)";
    }
    if (plan_.update != update_kind::rodinia && plan_.distances == distance_kind::gemm) {
      xnorm_ = buffer<float>(ctx, std::size_t(n_));
      cnorm_ = buffer<float>(ctx, std::size_t(k_));
      dots_ = buffer<float>(ctx, std::size_t(plan_.chunk * k_));
      segreduce(ctx, n_, d_, row_squared_norm{x_.data(), d_}, xnorm_.view(), plus<float>{});
      if (ctx.is_cuda()) blas_.emplace(ctx, plan_.tf32);
    }
  }

  const kmeans_plan& plan() const { return plan_; }

  // Initial centroids and no previous memberships (every point changes in the first iteration).
  void initialize(init_kind init, std::uint64_t seed) {
    if (init == init_kind::kmeanspp) seed_kmeanspp(seed);
    else if (first_k_are_rodinias(n_, k_)) copy_within(ctx_, centroids_.view(), span<const float>(x_.data(), std::size_t(k_ * d_)));
    else centroids_.copy_from(rodinia_initial_centroids(host_x_, n_, d_, k_));
    if (plan_.update == update_kind::rodinia) {
      centroids_.copy_to(host_centroids_);
      std::fill(host_previous_.begin(), host_previous_.end(), -1);
    } else {
      fill(ctx_, previous_, nearest{0.f, -1});
    }
  }

  // One iteration. advance: read its report, keep its centroids and memberships (else, for
  // timing, the next call repeats the same iteration and nothing waits for the device except
  // what the variant itself must wait for).
  step_report step(bool advance, bool want_objective) {
    if (plan_.update == update_kind::rodinia) return rodinia_step(advance, want_objective);
    queue_iteration(0);
    step_report rep;
    if (!advance) return rep;
    const summary s = summary_.to_vector()[0];
    rep.changed = s.changed;
    rep.objective = s.objective;
    best_.swap(previous_);
    centroids_.swap(next_);
    return rep;
  }

  // Initialisation and Lloyd's iterations until convergence (what `soac bench` times as the whole
  // clustering); progress, when given, sees every step with its objective. Returns the iterations.
  std::int64_t iterate(const kmeans_config& cfg, const std::function<void(std::int64_t, const step_report&)>& progress,
                       clustering* record = nullptr) {
    initialize(cfg.init, cfg.seed);
    copy_within(ctx_, initial_.view(), span<const float>(centroids_.data(), centroids_.size()));
    std::int64_t iterations = 0;
    const auto report = [&](std::int64_t it, const step_report& rep) {
      iterations = it;
      if (record) record->changed.push_back(rep.changed), record->objectives.push_back(rep.objective);
      if (progress) progress(it, rep);
      return cfg.stop.converged(rep.changed, n_);
    };
    if (plan_.update == update_kind::rodinia) {
      for (std::int64_t it = 1; it <= cfg.stop.max_iterations; ++it) {
        const step_report rep = step(true, bool(progress));
        if (it == 1) keep_first_membership();
        if (report(it, rep)) break;
      }
      return iterations;
    }
    // Iteration it + 1 is queued before iteration it's report is read, so the device does not
    // wait for the host between iterations; once iteration it converged, the one ahead is undone:
    // it wrote only the swapped buffers and scratch.
    queue_step(1);
    keep_first_membership();
    for (std::int64_t it = 1; it <= cfg.stop.max_iterations; ++it) {
      const bool ahead = it < cfg.stop.max_iterations;
      if (ahead) queue_step(it + 1);
      const summary s = reports_->wait(int(it % 2));
      if (report(it, {s.changed, s.objective})) {
        if (ahead) undo_step();
        break;
      }
    }
    return iterations;
  }

  // iterate(), timed, and its results copied back with the final objective.
  clustering cluster(const kmeans_config& cfg, const std::function<void(std::int64_t, const step_report&)>& progress) {
    clustering out;
    const auto t0 = std::chrono::steady_clock::now();
    out.iterations = iterate(cfg, progress, &out);
    ctx_.synchronize();
    out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.initial_centroids = initial_.to_vector();
    out.centroids = centroids();
    out.membership = membership();
    out.first_membership = plan_.update == update_kind::rodinia ? host_first_ : indices_of(first_);
    out.objective = final_objective();
    return out;
  }

  // The parts of step() on their own, for `soac bench kmeans --set parts=1` (each repeats its
  // part of the iteration that step(false, ...) would run; call after initialize() and a step).
  void summarize(int slot = 0) {
    segreduce(ctx_, 1, n_, summarize_points{best_.data(), previous_.data(), xnorm_.empty() ? nullptr : xnorm_.data()},
              span<summary>(summary_.data() + slot, 1), summary_op{});
  }
  void assign() {
    if (plan_.distances == distance_kind::gemm) {
      assign_gemm();
    } else if (columns() && columns_fit(d_, k_)) {
      assign_columns();
      return;
    } else {
      assign_direct();
    }
    if (columns()) scatter(ctx_, n_, membership_of{best_.data()}, member_);  // what the column sums read
  }
  // sums=fused: the assignment, the counts and sums (left for finalize_hist) and the report in
  // slot `slot`, in one pass over the points.
  void assign_and_update(int slot) {
    fill_zero(ctx_, counts_.view());
    fill_zero(ctx_, sums_.view());
    summary* report = summary_.data() + slot;
    fill_zero(ctx_, span<summary>(report, 1));
    const float* x = x_.data();
    const float* c = centroids_.data();
    const nearest* before = previous_.data();
    nearest* best = best_.data();
    int* counts = counts_.data();
    float* sums = sums_.data();
    const std::int64_t n = n_, d = d_, k = k_;
    if (ctx_.is_cuda()) {
      ctx_.activate();
      const int slices = fused_slices(d);
      const std::size_t bytes = fused_layout{slices, int(k), d}.bytes();
      const auto launch = [&](auto kernel, int per_warp) {
        const int per_sm = detail::resident_blocks(kernel, fused_block, bytes, "assign_update_kernel");
        const std::int64_t grid = std::clamp<std::int64_t>(detail::ceil_div(n, std::int64_t(fused_block / 32 * per_warp)), 1,
                                                           std::int64_t(ctx_.props().sm_count) * per_sm);
        kernel<<<unsigned(grid), fused_block, bytes, ctx_.stream()>>>(x, n, d, c, int(k), before, best, counts, sums, report);
        SOAC_CHECK_LAUNCH("assign_update_kernel");
      };
      if (slices == 4) launch(assign_update_kernel<4>, 8);
      else if (slices == 8) launch(assign_update_kernel<8>, 4);
      else launch(assign_update_kernel<32>, 1);
      return;
    }
#pragma omp parallel
    {
      std::vector<float> my_sums(std::size_t(k * d), 0.f);
      std::vector<int> my_counts(std::size_t(k), 0);
      summary mine = summary_op::identity();
#pragma omp for schedule(static) nowait
      for (std::int64_t p = 0; p < n; ++p) {
        nearest b = nearest_op::identity();
        for (std::int64_t j = 0; j < k; ++j) b = nearest_op{}(b, nearest{squared_distance(x + p * d, c + j * d, d), std::int32_t(j)});
        best[p] = b;
        ++my_counts[std::size_t(b.index)];
        for (std::int64_t j = 0; j < d; ++j) my_sums[std::size_t(b.index * d + j)] += x[p * d + j];
        mine = summary_op{}(mine, summary{b.distance, before[p].index != b.index ? 1 : 0});
      }
#pragma omp critical
      {
        for (std::int64_t i = 0; i < k * d; ++i) sums[i] += my_sums[std::size_t(i)];
        for (std::int64_t i = 0; i < k; ++i) counts[i] += my_counts[std::size_t(i)];
        *report = summary_op{}(*report, mine);
      }
    }
  }
  void update() {
    if (plan_.update == update_kind::hist) {
      update_hist();
      finalize_hist();
    } else {
      update_segreduce();
    }
  }
  // gemm distances: the SGEMMs alone, and the argmins alone (of the last chunk's distances).
  void gemm_products() {
    for (std::int64_t p0 = 0; p0 < n_; p0 += plan_.chunk) negative_dots(p0, std::min(plan_.chunk, n_ - p0));
  }
  void gemm_argmins() {
    for (std::int64_t p0 = 0; p0 < n_; p0 += plan_.chunk) chunk_argmin(p0, std::min(plan_.chunk, n_ - p0));
  }

  // ---- Several ranks (ranked_kmeans): each rank's engine holds its shard of the points, and an
  // iteration is its partials on every rank, their all-reduce, then its end on every rank.

  // Starts from the given centroids (replicated on every rank), no previous memberships.
  void start_from(std::span<const float> centroids) {
    centroids_.copy_from(centroids);
    initial_.copy_from(centroids);
    fill(ctx_, previous_, nearest{0.f, -1});
  }
  // The iteration up to its counts and sums of this rank's points (summary in slot 0).
  void queue_partials() {
    if (fused()) {
      assign_and_update(0);
      return;
    }
    assign();
    summarize(0);
    update_hist();
  }
  // What the ranks all-reduce (sum) between queue_partials and finish_partials.
  struct partial_arrays {
    int* counts;
    std::size_t count_bins;
    float* sums;
    std::size_t sum_values;
    summary* report;
  };
  partial_arrays partials() {
    if (plan_.update != update_kind::hist) throw usage_error("kmeans: several ranks need the hist update");
    const bool vec = plan_.sums == sums_kind::vec4;
    return {counts_.data(), counts_.size(), vec ? &sums4_.data()->v[0] : sums_.data(),
            vec ? sums4_.size() * vector_width : sums_.size(), summary_.data()};
  }
  // The centroids from the reduced counts and sums; this iteration's results made current.
  void finish_partials(bool first_iteration) {
    finalize_hist();
    best_.swap(previous_);
    centroids_.swap(next_);
    if (first_iteration) keep_first_membership();
  }
  summary reduced_report() const { return summary_.to_vector()[0]; }
  std::vector<std::int32_t> first_membership() const { return indices_of(first_); }

  // The objective of the current centroids and memberships (after iterate()).
  double objective() { return final_objective(); }

  // What the last update's primitives chose (hist_fused's plan, or the segreduce calls').
  const std::string& update_plan() const { return update_plan_; }

  std::vector<float> centroids() const {
    if (plan_.update == update_kind::rodinia) return host_centroids_;
    return centroids_.to_vector();
  }
  std::vector<std::int32_t> membership() const {
    if (plan_.update == update_kind::rodinia) return host_previous_;
    return indices_of(previous_);
  }

 private:
  std::int64_t blocks() const { return (d_ + vector_width - 1) / vector_width; }

  static std::vector<std::int32_t> indices_of(const buffer<nearest>& b) {
    const auto v = b.to_vector();
    std::vector<std::int32_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i].index;
    return out;
  }

  void keep_first_membership() {
    if (plan_.update == update_kind::rodinia) host_first_ = host_previous_;
    else copy_within(ctx_, first_.view(), span<const nearest>(previous_.data(), previous_.size()));
  }

  bool columns() const { return plan_.update != update_kind::rodinia && plan_.layout == layout_kind::columns; }
  bool fused() const { return plan_.update == update_kind::hist && plan_.sums == sums_kind::fused; }

  // One iteration up to its new centroids (in next_), its report in summary slot `slot`.
  void queue_iteration(int slot) {
    if (fused()) {
      assign_and_update(slot);
      finalize_hist();
      return;
    }
    assign();
    summarize(slot);
    update();
  }

  // One iteration queued, its report's copy started in slot it % 2, its results made current.
  void queue_step(std::int64_t it) {
    const int slot = int(it % 2);
    queue_iteration(slot);
    reports_->start(ctx_, summary_.data() + slot, slot);
    best_.swap(previous_);
    centroids_.swap(next_);
  }
  void undo_step() {
    best_.swap(previous_);
    centroids_.swap(next_);
  }

  // ---- assignment

  void assign_direct() {
    const float* x = x_.data();
    const float* c = centroids_.data();
    nearest* best = best_.data();
    const std::int64_t n = n_, d = d_, k = k_;
    if (ctx_.is_cuda()) {
      ctx_.activate();
      const int lanes = assign_lanes(d);
      const std::int64_t per_block = assign_block_threads / lanes;
      const int per_sm = detail::resident_blocks(assign_direct_kernel, assign_block_threads, 0, "assign_direct_kernel");
      const std::int64_t grid = std::clamp<std::int64_t>(detail::ceil_div(n, per_block), 1, std::int64_t(ctx_.props().sm_count) * per_sm);
      assign_direct_kernel<<<unsigned(grid), assign_block_threads, 0, ctx_.stream()>>>(x, n, d, c, k, lanes, best);
      SOAC_CHECK_LAUNCH("assign_direct_kernel");
      return;
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t p = 0; p < n; ++p) {
      nearest b = nearest_op::identity();
      for (std::int64_t j = 0; j < k; ++j) b = nearest_op{}(b, nearest{squared_distance(x + p * d, c + j * d, d), std::int32_t(j)});
      best[p] = b;
    }
  }

  // The columns kernel (a register per centroid, KMax of them) on the feature-major copy; the
  // host runs the same rule point by point.
  void assign_columns() {
    const float* xt = features_t_.data();
    const float* c = centroids_.data();
    nearest* best = best_.data();
    std::int32_t* member = member_.data();
    const std::int64_t n = n_, d = d_, k = k_;
    if (ctx_.is_cuda()) {
      ctx_.activate();
      // Slices: enough lanes for four rounds of the resident ones, so the last round's idle lanes
      // are few.
      const std::int64_t lanes = 4 * std::int64_t(ctx_.props().sm_count) * ctx_.props().max_threads_per_sm;
      const int slices = n >= lanes || d < 2 ? 1 : 2 * n >= lanes || d < 4 ? 2 : 4;
      const std::size_t bytes = std::size_t(d * columns_kmax(k)) * sizeof(float);
      auto launch = [&](auto kernel, int per_warp) {
        const int per_sm = detail::resident_blocks(kernel, columns_block, bytes, "assign_columns_kernel");
        const std::int64_t grid = std::clamp<std::int64_t>(detail::ceil_div(n, std::int64_t(columns_block / 32 * per_warp)), 1,
                                                           std::int64_t(ctx_.props().sm_count) * per_sm);
        kernel<<<unsigned(grid), columns_block, bytes, ctx_.stream()>>>(xt, n, d, c, int(k), best, member);
        SOAC_CHECK_LAUNCH("assign_columns_kernel");
      };
      const bool small = columns_kmax(k) == 8;
      if (slices == 1) small ? launch(assign_columns_kernel<8, 1>, 32) : launch(assign_columns_kernel<columns_max_k, 1>, 32);
      else if (slices == 2) small ? launch(assign_columns_kernel<8, 2>, 16) : launch(assign_columns_kernel<columns_max_k, 2>, 16);
      else small ? launch(assign_columns_kernel<8, 4>, 8) : launch(assign_columns_kernel<columns_max_k, 4>, 8);
      return;
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t p = 0; p < n; ++p) {
      nearest b = nearest_op::identity();
      for (std::int64_t j = 0; j < k; ++j) {
        float acc = 0.f;
        for (std::int64_t f = 0; f < d; ++f) {
          const float diff = xt[f * n + p] - c[j * d + f];
          acc = fmaf(diff, diff, acc);
        }
        b = nearest_op{}(b, nearest{acc, std::int32_t(j)});
      }
      best[p] = b;
      member[p] = b.index;
    }
  }

  void assign_gemm() {
    segreduce(ctx_, k_, d_, row_squared_norm{centroids_.data(), d_}, cnorm_.view(), plus<float>{});
    for (std::int64_t p0 = 0; p0 < n_; p0 += plan_.chunk) {
      const std::int64_t rows = std::min(plan_.chunk, n_ - p0);
      negative_dots(p0, rows);
      chunk_argmin(p0, rows);
    }
  }

  void chunk_argmin(std::int64_t p0, std::int64_t rows) {
    segreduce(ctx_, rows, k_, gemm_nearest{dots_.data(), cnorm_.data(), k_}, span<nearest>(best_.data() + p0, std::size_t(rows)),
              nearest_op{});
  }

  // dots[q * k + c] = -2 x_{p0+q} . c_c for the chunk's rows.
  void negative_dots(std::int64_t p0, std::int64_t rows) {
    const float* x = x_.data() + p0 * d_;
    if (blas_) {
      // Column-major view: C is d x k, the chunk is d x rows; dots (k x rows) = -2 C^T X.
      const float alpha = -2.f, beta = 0.f;
      KMEANS_CUBLAS_CHECK(cublasSgemm(blas_->get(), CUBLAS_OP_T, CUBLAS_OP_N, int(k_), int(rows), int(d_), &alpha,
                                      centroids_.data(), int(d_), x, int(d_), &beta, dots_.data(), int(k_)));
      return;
    }
    const float* c = centroids_.data();
    float* dots = dots_.data();
    const std::int64_t d = d_, k = k_;
#pragma omp parallel for schedule(static)
    for (std::int64_t q = 0; q < rows; ++q)
      for (std::int64_t j = 0; j < k; ++j) {
        float acc = 0.f;
        for (std::int64_t i = 0; i < d; ++i) acc = fmaf(x[q * d + i], c[j * d + i], acc);
        dots[q * k + j] = -2.f * acc;
      }
  }

  // ---- update

  void update_hist() {
    fill_zero(ctx_, counts_.view());
    hist_plan used;
    std::string what;
    switch (plan_.sums) {
      case sums_kind::vec4: {
        fill_zero(ctx_, sums4_.view());
        const std::int64_t elements = n_ * blocks();
        used = hist_fused(ctx_, plan_.hist, elements,
                          block_updates<vector_width>{x_.data(), best_.data(), d_, index_split(blocks(), elements)},
                          counts_.view(), plus<int>{}, sums4_.view(), elementwise<plus<float>, vector_width>{});
        update_plan_ = "hist_fused: " + used.describe();
        return;
      }
      case sums_kind::split:
      case sums_kind::batched: {
        const hist_plan counted = hist(ctx_, n_, member_counts{best_.data()}, counts_.view(), plus<int>{});
        fill_zero(ctx_, sums_.view());
        const std::int64_t total = n_ * d_;
        if (plan_.sums == sums_kind::batched) {
          const std::int64_t seg = detail::ceil_div(n_, parts_), hists = d_ * parts_;
          used = hist_batched(ctx_, plan_.hist, hists, seg,
                              column_sums{features_t_.data(), member_.data(), n_, parts_, index_split(seg, hists * seg),
                                          fast_divisor(std::uint32_t(parts_))},
                              sums_.view(), k_, plus<float>{});
        } else {
          const layout_sums f = columns() ? layout_sums{features_t_.data(), member_.data(), best_.data(), index_split(n_, total), d_}
                                          : layout_sums{x_.data(), nullptr, best_.data(), index_split(d_, total), d_};
          used = hist(ctx_, plan_.hist, total, f, sums_.view(), plus<float>{});
        }
        update_plan_ = "counts hist: " + counted.describe() + "; sums " +
                       (plan_.sums == sums_kind::batched ? "hist_batched (" + std::to_string(parts_) + " parts per feature)" : "hist") +
                       ": " + used.describe();
        return;
      }
      default: {
        fill_zero(ctx_, sums_.view());
        const std::int64_t total = n_ * d_;
        used = hist_fused(ctx_, plan_.hist, total, flat_updates{x_.data(), best_.data(), index_split(d_, total)}, counts_.view(),
                          plus<int>{}, sums_.view(), plus<float>{});
        update_plan_ = "hist_fused: " + used.describe();
      }
    }
  }

  // The new centroids from the counts and sums that update_hist left (several ranks: all-reduced).
  void finalize_hist() {
    if (plan_.sums == sums_kind::vec4) finalize(vector_sums<vector_width>{sums4_.data(), blocks()});
    else if (plan_.sums == sums_kind::batched) finalize(part_sums{sums_.data(), k_, parts_});
    else finalize(strided_sums{sums_.data(), d_, 1});
  }

  void update_segreduce() {
    scatter(ctx_, n_, membership_keys{best_.data()}, keys_, perm_);
    const sort_plan sorted = radix_sort(ctx_, keys_.view(), perm_.view());
    const segreduce_plan counted = segreduce(ctx_, k_, n_, cluster_indicator{best_.data()}, counts_.view(), plus<int>{});
    scan(ctx_, k_, from_array(counts_), offsets_.view(), plus<int>{}, scan_kind::exclusive);
    // The padding needs the largest cluster on the host: the variant's one wait per iteration.
    const auto host_counts = counts_.to_vector();
    const std::int64_t longest = *std::max_element(host_counts.begin(), host_counts.end());
    const segreduce_plan summed =
        segreduce(ctx_, k_ * d_, longest, padded_sum{x_.data(), perm_.data(), offsets_.data(), counts_.data(), index_split(d_, k_ * d_)},
                  sums_.view(), plus<float>{});
    finalize(strided_sums{sums_.data(), d_, 1});
    update_plan_ = "radix_sort: " + sorted.describe() + "; counts segreduce: " + counted.describe() + "; sums segreduce (" +
                   std::to_string(k_ * d_) + " segments of " + std::to_string(longest) + "): " + summed.describe();
  }

  template <class Sums>
  void finalize(Sums sums) {
    scatter(ctx_, k_ * d_, finalize_centroids<Sums>{sums, counts_.data(), centroids_.data(), index_split(d_, k_ * d_)}, next_);
  }

  // ---- Rodinia's iteration: membership on the device, the rest on the host

  step_report rodinia_step(bool advance, bool want_objective) {
    centroids_.copy_from(host_centroids_);  // Rodinia: cudaMemcpyToSymbol of the clusters
    if (ctx_.is_cuda()) {
      ctx_.activate();
      rodinia_membership_kernel<<<unsigned(detail::ceil_div(n_, rodinia_block_threads)), rodinia_block_threads, 0, ctx_.stream()>>>(
          features_t_.data(), n_, d_, centroids_.data(), k_, membership_dev_.data());
      SOAC_CHECK_LAUNCH("rodinia_membership_kernel");
    } else {
      const float* ft = features_t_.data();
      const float* c = centroids_.data();
      std::int32_t* m = membership_dev_.data();
      const std::int64_t n = n_, d = d_, k = k_;
#pragma omp parallel for schedule(static)
      for (std::int64_t p = 0; p < n; ++p) m[p] = rodinia_nearest(ft, n, p, d, c, k);
    }
    membership_dev_.copy_to(host_membership_);
    // kmeansCuda's host loop, one thread: changes, counts and sums.
    step_report rep;
    std::fill(host_sums_.begin(), host_sums_.end(), 0.f);
    std::fill(host_counts_.begin(), host_counts_.end(), 0);
    for (std::int64_t p = 0; p < n_; ++p) {
      const std::int32_t c = host_membership_[std::size_t(p)];
      ++host_counts_[std::size_t(c)];
      rep.changed += c != host_previous_[std::size_t(p)];
      const float* xp = host_x_.data() + p * d_;
      float* s = host_sums_.data() + std::int64_t(c) * d_;
      for (std::int64_t j = 0; j < d_; ++j) s[j] += xp[j];
    }
    for (std::int64_t c = 0; c < k_; ++c)
      for (std::int64_t j = 0; j < d_; ++j) {
        const std::size_t e = std::size_t(c * d_ + j);
        host_next_[e] = host_counts_[std::size_t(c)] > 0 ? host_sums_[e] / float(host_counts_[std::size_t(c)]) : host_centroids_[e];
      }
    if (want_objective) {
      rep.objective = 0;
      for (std::int64_t p = 0; p < n_; ++p)
        rep.objective += squared_distance(host_x_.data() + p * d_, host_centroids_.data() + host_membership_[std::size_t(p)] * d_, d_);
    }
    if (advance) {
      host_previous_.swap(host_membership_);
      host_centroids_.swap(host_next_);
    }
    return rep;
  }

  // ---- initialisation and the final objective

  void seed_kmeanspp(std::uint64_t seed) {
    constexpr std::uint64_t stream = 0x6b6d65616e732b2bull;  // "kmeans++"
    buffer<float> dist(ctx_, std::size_t(n_), lifetime::temporary);
    buffer<double> prefix(ctx_, std::size_t(n_), lifetime::temporary);
    buffer<std::int64_t> chosen(ctx_, std::size_t(k_), lifetime::temporary);
    const std::int64_t first = std::int64_t(datasets::random_below(datasets::random_word(seed, stream, 0), std::uint64_t(n_)));
    ctx_.copy_to_backend(chosen.data(), &first, sizeof first);
    for (std::int64_t t = 0; t < k_; ++t) {
      scatter(ctx_, d_, copy_point{x_.data(), chosen.data(), t, d_}, centroids_);
      if (t + 1 == k_) break;
      scatter(ctx_, n_, nearest_seed_distance{x_.data(), centroids_.data() + t * d_, dist.data(), d_, t == 0}, dist);
      scan(ctx_, n_, as_double{dist.data()}, prefix.view(), plus<double>{});
      scatter(ctx_, 1, draw_seed{prefix.data(), dist.data(), n_, t + 1, datasets::random_unit(seed, stream, std::uint64_t(t + 1))},
              chosen);
    }
  }

  double final_objective() {
    if (plan_.update == update_kind::rodinia) {
      // The memberships are on the host; the objective runs on the backend like the others'.
      std::vector<nearest> m(host_previous_.size());
      for (std::size_t p = 0; p < m.size(); ++p) m[p] = {0.f, host_previous_[p]};
      previous_.copy_from(m);
      centroids_.copy_from(host_centroids_);
    }
    scatter(ctx_, n_, assigned_distance{x_.data(), centroids_.data(), previous_.data(), d_}, best_);
    segreduce(ctx_, 1, n_, summarize_points{best_.data(), best_.data(), nullptr}, summary_.view(), summary_op{});
    return summary_.to_vector()[0].objective;
  }

  context& ctx_;
  std::int64_t n_, d_, k_;
  kmeans_plan plan_;
  const std::vector<float>& host_x_;
  buffer<float> x_, centroids_, next_;
  buffer<nearest> best_, previous_, first_;
  buffer<summary> summary_;
  std::unique_ptr<report_slots> reports_;
  buffer<int> counts_, offsets_;
  buffer<float> sums_;
  buffer<vec<float, vector_width>> sums4_;
  buffer<std::uint32_t> keys_, perm_;
  buffer<float> xnorm_, cnorm_, dots_;
  std::optional<blas_handle> blas_;
  buffer<float> initial_;
  std::int64_t parts_ = 1;  // sums=batched: parts of each feature's points (column_parts)
  std::string update_plan_;
  // rodinia
  buffer<float> features_t_;
  buffer<std::int32_t> membership_dev_, member_;  // member_: columns layout, the memberships as int32
  std::vector<float> host_centroids_, host_next_, host_sums_;
  std::vector<std::int32_t> host_membership_, host_previous_, host_first_;
  std::vector<int> host_counts_;
};

// ---- Several ranks ----------------------------------------------------------------------------

// Lloyd's iterations over the ranks of mc (several GPUs, or simulated host ranks): the points in
// contiguous shards (one engine per rank on its own copy of its shard), the centroids replicated;
// every iteration each rank assigns its points and computes its counts and sums, the counts, sums,
// changes and objective are all-reduced (sum; NCCL on cuda), and every rank moves the centroids
// alike, so the convergence test reads the all-reduced change count. One plan for all ranks
// (resolved for all n points on rank 0's device), so that the ranks' sums arrays agree; the hist
// update only (its counts and sums are what is reduced) and the first k points as the initial
// centroids (kmeans++ seeds over all points, which a shard does not hold). With ranks in
// separate processes, each process runs the engines of its own ranks only; cluster() then
// returns this process's points' memberships.
// What one process of an MPI world reads of the points (read_points_shard): its rows and the k
// points the clustering starts from. Rank r holds rows [starts[r], starts[r + 1]) (a Rodinia text
// file's parts hold whole lines, so they differ by a few points), this process rank `rank`'s.
struct points_shard {
  std::int64_t n = 0, d = 0;
  int rank = 0;
  std::vector<std::int64_t> starts;
  std::vector<float> features, initial;
};

class ranked_kmeans {
 public:
  ranked_kmeans(const multi_context& mc, const kmeans_points& pts, std::int64_t k, kmeans_plan plan, init_kind init)
      : mc_(mc), n_(pts.n), d_(pts.d), k_(k) {
    check(plan, init);
    initial_ = rodinia_initial_centroids(pts.features, n_, d_, k_);
    for (int r = 0; r < mc_.ranks(); ++r) parts_.push_back(shard_of(n_, mc_.ranks(), r));
    start_engines(plan, [&](const shard& s) {
      return std::vector<float>(pts.features.begin() + s.begin * d_, pts.features.begin() + s.end * d_);
    });
  }
  // With ranks in separate processes: this process's shard alone (and the initial centroids), so
  // that no process holds every point.
  ranked_kmeans(const multi_context& mc, points_shard part, std::int64_t k, kmeans_plan plan, init_kind init)
      : mc_(mc), n_(part.n), d_(part.d), k_(k) {
    check(plan, init);
    initial_ = std::move(part.initial);
    if (part.starts.size() != std::size_t(mc_.ranks()) + 1 || part.starts.front() != 0 || part.starts.back() != n_)
      throw usage_error("kmeans: the points' shards do not cover the " + std::to_string(n_) + " points over " +
                        std::to_string(mc_.ranks()) + " ranks");
    for (int r = 0; r < mc_.ranks(); ++r) {
      parts_.push_back({r, part.starts[std::size_t(r)], part.starts[std::size_t(r) + 1]});
      if (parts_.back().size() < 1)
        throw input_error("kmeans: rank " + std::to_string(r) + " of " + std::to_string(mc_.ranks()) +
                          " holds no point (its part of the file holds no line's start): run on fewer processes");
    }
    start_engines(plan, [&](const shard& s) {
      if (s.rank != part.rank || s.size() * d_ != std::int64_t(part.features.size()))
        throw usage_error("kmeans: rank " + std::to_string(s.rank) + " was given rank " + std::to_string(part.rank) + "'s " +
                          std::to_string(part.features.size()) + " features");
      return std::move(part.features);
    });
  }

  const kmeans_plan& plan() const { return engines_[0]->plan(); }

  // Lloyd's iterations from the first k points until convergence (what the scaling bench times).
  void iterate(const kmeans_config& cfg, const std::function<void(std::int64_t, const step_report&)>& progress, clustering* record) {
    for (auto& e : engines_) e->start_from(initial_);
    const auto arrays = engines_[0]->partials();
    for (std::int64_t it = 1; it <= cfg.stop.max_iterations; ++it) {
      for (auto& e : engines_) e->queue_partials();
      sum_over_ranks([](const auto& a) -> void* { return a.counts; }, arrays.count_bins, reduce_type_of<int>());
      sum_over_ranks([](const auto& a) -> void* { return a.sums; }, arrays.sum_values, reduce_type::f32);
      sum_over_ranks([](const auto& a) -> void* { return &a.report->objective; }, 1, reduce_type::f64);
      sum_over_ranks([](const auto& a) -> void* { return &a.report->changed; }, 1, reduce_type_of<std::int64_t>());
      for (auto& e : engines_) e->finish_partials(it == 1);
      const summary s = engines_[0]->reduced_report();
      if (record) record->iterations = it, record->changed.push_back(s.changed), record->objectives.push_back(s.objective);
      if (progress) progress(it, {s.changed, s.objective});
      if (cfg.stop.converged(s.changed, n_)) break;
    }
  }

  // iterate(), timed, and the results gathered from the ranks. With ranks in separate processes
  // and gather_memberships false, the memberships stay this process's points' (written in parts).
  clustering cluster(const kmeans_config& cfg, const std::function<void(std::int64_t, const step_report&)>& progress,
                     bool gather_memberships = true) {
    clustering out;
    const auto t0 = std::chrono::steady_clock::now();
    iterate(cfg, progress, &out);
    mc_.synchronize();
    out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.initial_centroids = initial_;
    out.centroids = engines_[0]->centroids();
    for (auto& e : engines_) {
      const auto m = e->membership(), f = e->first_membership();
      out.membership.insert(out.membership.end(), m.begin(), m.end());
      out.first_membership.insert(out.first_membership.end(), f.begin(), f.end());
      out.objective += e->objective();  // each rank's points', added in rank order
    }
    if (mc_.distributed()) gather_from_processes(out, gather_memberships);
    return out;
  }
  const std::vector<shard>& shards() const { return parts_; }

 private:
  template <class PointerOf>
  void sum_over_ranks(PointerOf pointer_of, std::size_t count, reduce_type type) {
    std::vector<void*> bufs(static_cast<std::size_t>(mc_.ranks()), nullptr);  // engines_ are the local ranks', in order
    for (std::size_t e = 0; e < engines_.size(); ++e) bufs[std::size_t(mc_.local_ranks()[e])] = pointer_of(engines_[e]->partials());
    mc_.all_reduce(bufs, count, type, reduce_op::sum);
  }

  // Every process's memberships (its one rank's shard) in rank order on rank 0's process, which
  // writes them (the others' are left empty), padded to the largest shard for the gather; the
  // objective summed over the processes, on every one.
  void gather_from_processes(clustering& out, bool memberships) const {
    const mpi_world& world = mpi_world::get();
    world.all_reduce(&out.objective, 1, reduce_type::f64, reduce_op::sum);
    if (!memberships) return;
    std::int64_t capacity = 0;
    for (const shard& s : parts_) capacity = std::max(capacity, s.size());
    for (std::vector<std::int32_t>* m : {&out.membership, &out.first_membership}) {
      const bool root = world.rank() == 0;
      std::vector<std::int32_t> mine(std::size_t(capacity), -1), all(root ? std::size_t(capacity) * std::size_t(mc_.ranks()) : 0);
      std::copy(m->begin(), m->end(), mine.begin());
      world.gather(mine.data(), all.data(), std::size_t(capacity) * sizeof(std::int32_t), 0);
      m->clear();
      if (!root) continue;
      for (const shard& s : parts_)
        m->insert(m->end(), all.begin() + std::int64_t(s.rank) * capacity, all.begin() + std::int64_t(s.rank) * capacity + s.size());
    }
  }

  void check(const kmeans_plan& plan, init_kind init) const {
    if (plan.update != update_kind::hist)
      throw usage_error("kmeans: several devices run the hist variant (its counts and sums are all-reduced), not '" + plan.variant + "'");
    if (init != init_kind::first) throw usage_error("kmeans: several devices start from init=first (kmeans++ seeds over all the points)");
    if (n_ < mc_.ranks())
      throw usage_error("kmeans: " + std::to_string(mc_.ranks()) + " ranks for " + std::to_string(n_) +
                        " points (at most one rank per point)");
  }
  // An engine per local rank on its shard's points (features_of(shard)).
  template <class FeaturesOf>
  void start_engines(kmeans_plan plan, FeaturesOf features_of) {
    const int R = mc_.ranks();
    context& first = mc_.rank(mc_.local_ranks()[0]);
    resolve_plan(plan, first, n_, d_, k_);
    shards_.resize(static_cast<std::size_t>(R));  // (the engines keep references to them)
    std::int64_t largest = 0;
    for (const shard& s : parts_) largest = std::max(largest, s.size());
    const std::int64_t parts = batched_parts(first, largest, d_);
    for (int r : mc_.local_ranks()) {
      const shard s = parts_[std::size_t(r)];
      auto& part = shards_[std::size_t(r)];
      part.n = s.size();
      part.d = d_;
      part.features = features_of(s);
      engines_.push_back(std::make_unique<kmeans_engine>(mc_.rank(r), part, k_, plan, parts));
    }
  }

  const multi_context& mc_;
  std::int64_t n_, d_;
  std::int64_t k_;
  std::vector<shard> parts_;    // each rank's points
  std::vector<float> initial_;  // the first k points (Rodinia's choice), k x d
  std::vector<kmeans_points> shards_;
  std::vector<std::unique_ptr<kmeans_engine>> engines_;
};

}  // namespace
}  // namespace soac::apps
