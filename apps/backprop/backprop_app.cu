// Rodinia's backprop (FHPC17 section 4): one training step of a layer_size x 16 x 1 network with
// bias units, eta = momentum = 0.3: the forward pass (sigmoid units), the output and hidden
// errors, and the weight adjustment with momentum.
//   segreduce (default): the input-to-hidden sums are one soac::segreduce of 16 regular segments
//     of layer_size + 1 products (the bias unit included); the hidden and output layers are one
//     soac::scatter over the 17 x 2 hidden weights (each element recomputes the 17 units, cheaper
//     than a launch more); the adjustment of the 16 x (layer_size + 1) input weights is a
//     soac::scatter map writing the weights and their momentum terms in place.
//     The input weights are stored hidden-major (row j: every input's weight into hidden unit j,
//     the transpose of Rodinia's (layer_size + 1) x 17 matrix), so segment j and the adjustment
//     read rows contiguously; Rodinia's layout would make segment j a column of stride 17.
//   rodinia: Rodinia 3.1's bpnn_train_cuda: the weights flattened into its layout on the host and
//     copied in, bpnn_layerforward_CUDA (16 x 16 blocks of partial sums, which the host finishes),
//     the output layer, errors and hidden adjustment on the host, the weights copied in again
//     and bpnn_adjust_weights_cuda, with every copy of the original.
// `soac bench backprop` times the kernels of each variant, and end to end (from the network in
// host memory to the trained one back there, copies included), against rodinia in the same run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "apps/app.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/launch.cuh"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/backprop.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;

constexpr int hidden = validate::backprop_hidden;  // 16 hidden units besides the bias unit 0
constexpr std::int64_t hidden_rows = hidden + 1;
constexpr float eta = 0.3f, momentum = 0.3f;
// 17 x (layer + 1) < 2^32, so every weight index divides as 32 bits (fast_divisor), and each
// weight matrix stays below 9 GiB.
constexpr std::int64_t max_layer = std::int64_t{1} << 27;

// Rodinia's BPNN after bpnn_create and load(): what a dataset holds.
struct network {
  std::int64_t layer = 0;
  std::vector<float> input;                         // layer + 1; input[0] = 1, the bias unit
  std::vector<float> weights, prev;                 // 17 x (layer + 1), hidden-major
  std::vector<float> hidden_weights, hidden_prev;   // 17 x 2, Rodinia's layout (hidden j, output o)
  std::vector<float> target;                        // 2; target[1] is the output's (Rodinia: 0.1)
  std::int64_t row() const { return layer + 1; }
};

// The network after one step, and what the step computed on the way.
struct trained {
  std::vector<float> weights, prev, hidden_weights, hidden_prev, hidden_units, hidden_delta;
  float output = 0, output_delta = 0, out_err = 0, hid_err = 0;
};

SOAC_HD inline float squash(float x) { return 1.f / (1.f + expf(-x)); }

// An opaque use of a loaded value where it is called: the compiler cannot move the load after it
// (left to itself it sinks each load to its first use).
SOAC_HD inline void loaded_here(float& v) {
#if defined(__CUDA_ARCH__)
  asm volatile("" : "+f"(v));
#else
  (void)v;
#endif
}

// ---- segreduce variant ----------------------------------------------------------------------

// Segment s (hidden unit s + 1), element k: weight times input unit k (k = 0: the bias).
struct hidden_input {
  const float* weights;
  const float* input;
  std::int64_t row;
  SOAC_HD float operator()(std::int64_t s, std::int64_t k) const { return weights[(s + 1) * row + k] * input[k]; }
};

// The hidden and output layers (bpnn_layerforward, bpnn_output_error, bpnn_hidden_error,
// bpnn_adjust_weights of the hidden weights): element e = 2 j + o of the 17 x 2 hidden weights
// computes the 17 units, the output and the deltas (a few hundred flops, cheaper than another
// launch), and writes its adjusted weight and momentum; elements with o = 0 also write hidden unit
// j and its delta, and elements 0..3 the output unit, its delta and the two error sums.
struct hidden_and_output {
  const float* sums;  // 16 hidden sums
  const float* hw;
  const float* hprev;
  const float* target;
  SOAC_HD auto operator()(std::int64_t e) const {
    const int j = int(e / 2), o = int(e % 2);
    // Every load first, so that they are in flight together: each squash's division has a
    // slow-path branch in the machine code that no load is moved across, so loads beside their
    // uses took one L2 round trip each. Every index below is a constant after unrolling, so the
    // arrays stay in registers (selecting h[j] or a report value by a run-time index would put
    // them in local memory).
    float sum[hidden], out_w[hidden + 1];
    SOAC_UNROLL
    for (int i = 0; i < hidden; ++i) sum[i] = sums[i];
    SOAC_UNROLL
    for (int i = 0; i <= hidden; ++i) out_w[i] = hw[i * 2 + 1];
    float t = target[1], w_e = hw[e], prev_e = hprev[e];
    SOAC_UNROLL
    for (int i = 0; i < hidden; ++i) loaded_here(sum[i]);
    SOAC_UNROLL
    for (int i = 0; i <= hidden; ++i) loaded_here(out_w[i]);
    loaded_here(t), loaded_here(w_e), loaded_here(prev_e);
    float h[hidden + 1];
    h[0] = 1.f;
    SOAC_UNROLL
    for (int i = 1; i <= hidden; ++i) h[i] = squash(sum[i - 1]);
    float so = 0.f;
    SOAC_UNROLL
    for (int i = 0; i <= hidden; ++i) so += out_w[i] * h[i];
    const float out = squash(so);
    const float out_delta = out * (1.f - out) * (t - out);
    float hid_err = 0.f, delta_j = 0.f, h_j = h[0];
    SOAC_UNROLL
    for (int i = 1; i <= hidden; ++i) {
      const float delta = h[i] * (1.f - h[i]) * (out_delta * out_w[i]);
      hid_err += fabsf(delta);
      if (i == j) delta_j = delta, h_j = h[i];
    }
    const float dw = eta * out_delta * h_j + momentum * prev_e;
    const float report = e == 0 ? out : e == 1 ? out_delta : e == 2 ? fabsf(out_delta) : hid_err;
    const std::int64_t unit = o == 0 ? j : -1;
    return writes(write_at<std::int64_t, float>{e, o == 1 ? w_e + dw : w_e},
                  write_at<std::int64_t, float>{e, o == 1 ? dw : prev_e}, write_at<std::int64_t, float>{unit, h_j},
                  write_at<std::int64_t, float>{unit, delta_j}, write_at<std::int64_t, float>{e < 4 ? e : -1, report});
  }
};

// bpnn_adjust_weights_cuda as a map over the 16 x (layer + 1) weights of hidden units 1..16 (the
// bias unit's row 0 takes no inputs): w += eta delta_j x_k + momentum prev, prev = that step.
struct adjust_input_weights {
  const float* input;
  const float* hidden_delta;
  const float* weights;
  const float* prev;
  std::int64_t row;
  fast_divisor by_row;
  SOAC_HD auto operator()(std::int64_t e) const {
    const std::int64_t j = std::int64_t(by_row.divide(std::uint32_t(e))) + 1;
    const std::int64_t at = e + row;  // row j, column e - (j - 1) row
    const float dw = eta * hidden_delta[j] * input[at - j * row] + momentum * prev[at];
    return writes(write_at<std::int64_t, float>{at, weights[at] + dw}, write_at<std::int64_t, float>{at, dw});
  }
};

// The network on the backend and one step on it.
class segreduce_trainer {
 public:
  segreduce_trainer(context& ctx, const network& net)
      : ctx_(ctx), net_(net), input_(ctx, net.input.size()), weights_(ctx, net.weights.size()), prev_(ctx, net.prev.size()),
        hw_(ctx, net.hidden_weights.size()), hprev_(ctx, net.hidden_prev.size()), target_(ctx, net.target.size()),
        sums_(ctx, hidden), hw_out_(ctx, 2 * hidden_rows), hprev_out_(ctx, 2 * hidden_rows), units_(ctx, hidden_rows),
        deltas_(ctx, hidden_rows), report_(ctx, 4) {}

  // From the network in host memory to the trained one there: copies and kernels.
  void end_to_end(trained& out) {
    upload();
    kernels();
    download(out);
  }

  void upload() {
    input_.copy_from(net_.input);
    weights_.copy_from(net_.weights);
    prev_.copy_from(net_.prev);
    hw_.copy_from(net_.hidden_weights);
    hprev_.copy_from(net_.hidden_prev);
    target_.copy_from(net_.target);
  }

  void kernels() {
    forward_sums();
    hidden_layer();
    adjust();
  }
  // The three launches of kernels(), also timed alone (`soac bench backprop --set parts=1`).
  void forward_sums() {
    const std::int64_t row = net_.row();
    plan_ = segreduce(ctx_, hidden, row, hidden_input{weights_.data(), input_.data(), row}, sums_.view(), plus<float>{});
  }
  void hidden_layer() {
    scatter(ctx_, 2 * hidden_rows, hidden_and_output{sums_.data(), hw_.data(), hprev_.data(), target_.data()}, hw_out_, hprev_out_,
            units_, deltas_, report_);
  }
  void adjust() {
    const std::int64_t row = net_.row();
    scatter(ctx_, hidden * row,
            adjust_input_weights{input_.data(), deltas_.data(), weights_.data(), prev_.data(), row, fast_divisor(std::uint32_t(row))},
            weights_, prev_);
  }

  void download(trained& out) const {
    out.weights.resize(weights_.size());
    out.prev.resize(prev_.size());
    weights_.copy_to(out.weights);
    prev_.copy_to(out.prev);
    out.hidden_weights = hw_out_.to_vector();
    out.hidden_prev = hprev_out_.to_vector();
    out.hidden_units = units_.to_vector();
    out.hidden_delta = deltas_.to_vector();
    const auto r = report_.to_vector();
    out.output = r[0], out.output_delta = r[1], out.out_err = r[2], out.hid_err = r[3];
  }

  std::string describe() const { return "segreduce: " + plan_.describe(); }

 private:
  context& ctx_;
  const network& net_;
  buffer<float> input_, weights_, prev_, hw_, hprev_, target_, sums_, hw_out_, hprev_out_, units_, deltas_, report_;
  segreduce_plan plan_;
};

// ---- rodinia variant ------------------------------------------------------------------------

constexpr int rodinia_tile = 16;  // Rodinia's HEIGHT = WIDTH = 16: a block is 16 inputs x 16 hidden units
constexpr double rodinia_eta = 0.3, rodinia_momentum = 0.3;  // Rodinia's ETA and MOMENTUM are double literals
constexpr std::int64_t rodinia_row = hidden_rows;  // Rodinia's matrices are (layer + 1) x 17

// bpnn_layerforward_CUDA: block `by` multiplies inputs 16 by + 1 .. 16 by + 16 into their weights
// in shared memory and sums each hidden unit's column by a tree, leaving one partial sum per
// (block, hidden unit) for the host to finish. As in Rodinia it writes the products back over
// the weights (which is why the host copies the weights in again before the adjustment). Rodinia
// puts blocks in gridDim.y (at most 65535, so at most 2^20 inputs) and needs layer % 16 == 0;
// here they are in x and a partial last block reads zeros.
__global__ void __launch_bounds__(rodinia_tile * rodinia_tile)
    rodinia_forward_kernel(const float* input, float* weights, float* partial, std::int64_t layer) {
  __shared__ float input_node[rodinia_tile];
  __shared__ float weight_matrix[rodinia_tile][rodinia_tile];
  const std::int64_t by = blockIdx.x;
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const std::int64_t k = rodinia_tile * by + ty + 1;
  const std::int64_t index = rodinia_row * k + tx + 1;
  const bool in = k <= layer;
  if (tx == 0) input_node[ty] = in ? input[k] : 0.f;
  __syncthreads();
  weight_matrix[ty][tx] = in ? weights[index] : 0.f;
  __syncthreads();
  weight_matrix[ty][tx] = weight_matrix[ty][tx] * input_node[ty];
  __syncthreads();
  for (int power_two = 2; power_two <= rodinia_tile; power_two *= 2) {
    if (ty % power_two == 0) weight_matrix[ty][tx] = weight_matrix[ty][tx] + weight_matrix[ty + power_two / 2][tx];
    __syncthreads();
  }
  if (in) weights[index] = weight_matrix[ty][tx];
  __syncthreads();
  if (tx == 0) partial[by * hidden + ty] = weight_matrix[tx][ty];
}

// bpnn_adjust_weights_cuda: one thread per weight of the block's 16 inputs, in double as Rodinia's
// ETA and MOMENTUM make it; block 0's first row also adjusts the bias unit's weights (row 0).
__global__ void __launch_bounds__(rodinia_tile * rodinia_tile)
    rodinia_adjust_kernel(const float* delta, const float* ly, float* w, float* oldw, std::int64_t layer) {
  const std::int64_t by = blockIdx.x;
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const std::int64_t k = rodinia_tile * by + ty + 1;
  const std::int64_t index = rodinia_row * k + tx + 1;
  const int index_x = tx + 1;
  if (k <= layer) {
    w[index] += float((rodinia_eta * delta[index_x] * ly[k]) + (rodinia_momentum * oldw[index]));
    oldw[index] = float((rodinia_eta * delta[index_x] * ly[k]) + (rodinia_momentum * oldw[index]));
  }
  __syncthreads();
  if (ty == 0 && by == 0) {
    w[index_x] += float((rodinia_eta * delta[index_x]) + (rodinia_momentum * oldw[index_x]));
    oldw[index_x] = float((rodinia_eta * delta[index_x]) + (rodinia_momentum * oldw[index_x]));
  }
}

// Rodinia's host functions (backprop.c), floats with double constants as there.
float rodinia_squash(float x) { return float(1.0 / (1.0 + std::exp(-double(x)))); }

class rodinia_trainer {
 public:
  rodinia_trainer(context& ctx, const network& net)
      : ctx_(ctx), net_(net), blocks_((net.layer + rodinia_tile - 1) / rodinia_tile), one_dim_(std::size_t(net.row() * rodinia_row)),
        prev_one_dim_(one_dim_.size()), partial_sum_(std::size_t(blocks_ * hidden)), input_cuda_(ctx, net.input.size()),
        input_hidden_cuda_(ctx, one_dim_.size()), prev_cuda_(ctx, one_dim_.size()), hidden_partial_sum_(ctx, partial_sum_.size()),
        hidden_delta_cuda_(ctx, hidden_rows) {}

  // bpnn_train_cuda, every copy included (the adjusted momentum terms also come back: Rodinia
  // leaves them on the GPU, the result needs them).
  void end_to_end(trained& out) {
    const std::int64_t row = net_.row();
    // Rodinia flattens net->input_weights into input_weights_one_dim; here the flattening is
    // the transposition from the dataset's hidden-major layout.
    for (std::int64_t k = 0; k < row; ++k)
      for (std::int64_t j = 0; j < rodinia_row; ++j) {
        one_dim_[std::size_t(k * rodinia_row + j)] = net_.weights[std::size_t(j * row + k)];
        prev_one_dim_[std::size_t(k * rodinia_row + j)] = net_.prev[std::size_t(j * row + k)];
      }
    input_cuda_.copy_from(net_.input);
    input_hidden_cuda_.copy_from(one_dim_);
    forward();
    hidden_partial_sum_.copy_to(partial_sum_);
    out.hidden_units.assign(hidden_rows, 0.f);
    out.hidden_units[0] = 1.f;  // bpnn_layerforward sets the hidden bias unit
    for (int j = 1; j <= hidden; ++j) {
      float sum = 0.f;
      for (std::int64_t b = 0; b < blocks_; ++b) sum += partial_sum_[std::size_t(b * hidden + j - 1)];
      sum += net_.weights[std::size_t(j * row)];  // input_weights[0][j]: the bias unit's weight
      out.hidden_units[std::size_t(j)] = rodinia_squash(sum);
    }
    host_layers(out);
    hidden_delta_cuda_.copy_from(out.hidden_delta);
    prev_cuda_.copy_from(prev_one_dim_);
    input_hidden_cuda_.copy_from(one_dim_);
    adjust();
    input_back_.resize(net_.input.size());
    input_cuda_.copy_to(input_back_);  // Rodinia copies the input units back too
    input_hidden_cuda_.copy_to(one_dim_);
    prev_cuda_.copy_to(prev_one_dim_);
    out.weights.resize(net_.weights.size());
    out.prev.resize(net_.prev.size());
    for (std::int64_t k = 0; k < row; ++k)
      for (std::int64_t j = 0; j < rodinia_row; ++j) {
        out.weights[std::size_t(j * row + k)] = one_dim_[std::size_t(k * rodinia_row + j)];
        out.prev[std::size_t(j * row + k)] = prev_one_dim_[std::size_t(k * rodinia_row + j)];
      }
  }

  // The two kernels back to back, on the weights as end_to_end() left them (for timing; restore()
  // puts the copies end_to_end() made back first).
  void kernels() {
    forward();
    adjust();
  }
  void keep_pristine() {
    pristine_ = buffer<float>(ctx_, one_dim_.size() * 2);
    const std::size_t bytes = one_dim_.size() * sizeof(float);
    ctx_.copy_within(pristine_.data(), input_hidden_cuda_.data(), bytes);
    ctx_.copy_within(pristine_.data() + one_dim_.size(), prev_cuda_.data(), bytes);
  }
  void restore() {
    const std::size_t bytes = one_dim_.size() * sizeof(float);
    ctx_.copy_within(input_hidden_cuda_.data(), pristine_.data(), bytes);
    ctx_.copy_within(prev_cuda_.data(), pristine_.data() + one_dim_.size(), bytes);
  }

 private:
  void forward() {
    if (blocks_ == 0) return;
    if (ctx_.is_cuda()) {
      ctx_.activate();
      rodinia_forward_kernel<<<unsigned(blocks_), dim3(rodinia_tile, rodinia_tile), 0, ctx_.stream()>>>(
          input_cuda_.data(), input_hidden_cuda_.data(), hidden_partial_sum_.data(), net_.layer);
      SOAC_CHECK_LAUNCH("rodinia_forward_kernel");
      return;
    }
    // The same blocks on the host: products written back, one partial sum per (block, unit).
    const float* in = input_cuda_.data();
    float* w = input_hidden_cuda_.data();
    float* partial = hidden_partial_sum_.data();
    const std::int64_t layer = net_.layer, blocks = blocks_;
#pragma omp parallel for schedule(static)
    for (std::int64_t by = 0; by < blocks; ++by)
      for (int tx = 0; tx < hidden; ++tx) {
        float sum = 0.f;
        for (int ty = 0; ty < rodinia_tile; ++ty) {
          const std::int64_t k = rodinia_tile * by + ty + 1;
          if (k > layer) break;
          float& weight = w[rodinia_row * k + tx + 1];
          weight *= in[k];
          sum += weight;
        }
        partial[by * hidden + tx] = sum;
      }
  }

  void adjust() {
    if (ctx_.is_cuda()) {
      ctx_.activate();
      adjust_grid();
      return;
    }
    const float* delta = hidden_delta_cuda_.data();
    const float* ly = input_cuda_.data();
    float* w = input_hidden_cuda_.data();
    float* oldw = prev_cuda_.data();
    const std::int64_t row = net_.row();
#pragma omp parallel for schedule(static)
    for (std::int64_t k = 0; k < row; ++k)
      for (int j = 1; j <= hidden; ++j) {
        const std::int64_t index = rodinia_row * k + j;
        const double x = k == 0 ? 1.0 : double(ly[k]);  // the kernel's bias row takes ly = 1
        const float dw = float(rodinia_eta * delta[j] * x + rodinia_momentum * oldw[index]);
        w[index] += dw;
        oldw[index] = dw;
      }
  }

  void adjust_grid() {
    // Block 0 also adjusts the bias row, so a layer of 0 inputs still runs one block.
    const std::int64_t grid = std::max<std::int64_t>(blocks_, 1);
    rodinia_adjust_kernel<<<unsigned(grid), dim3(rodinia_tile, rodinia_tile), 0, ctx_.stream()>>>(
        hidden_delta_cuda_.data(), input_cuda_.data(), input_hidden_cuda_.data(), prev_cuda_.data(), net_.layer);
    SOAC_CHECK_LAUNCH("rodinia_adjust_kernel");
  }

  // bpnn_layerforward (hidden to output), bpnn_output_error, bpnn_hidden_error and
  // bpnn_adjust_weights of the hidden weights, on the host as in Rodinia.
  void host_layers(trained& out) const {
    const auto& hw = net_.hidden_weights;
    float sum = 0.f;
    for (int j = 0; j <= hidden; ++j) sum += hw[std::size_t(j * 2 + 1)] * out.hidden_units[std::size_t(j)];
    out.output = rodinia_squash(sum);
    const float o = out.output, t = net_.target[1];
    out.output_delta = float(o * (1.0 - o) * (t - o));
    out.out_err = std::fabs(out.output_delta);
    out.hidden_delta.assign(hidden_rows, 0.f);
    out.hid_err = 0.f;
    for (int j = 1; j <= hidden; ++j) {
      const float h = out.hidden_units[std::size_t(j)];
      const float s = out.output_delta * hw[std::size_t(j * 2 + 1)];
      out.hidden_delta[std::size_t(j)] = float(h * (1.0 - h) * s);
      out.hid_err += std::fabs(out.hidden_delta[std::size_t(j)]);
    }
    out.hidden_weights = hw;
    out.hidden_prev = net_.hidden_prev;
    for (int j = 0; j <= hidden; ++j) {
      const std::size_t e = std::size_t(j * 2 + 1);
      const float dw = float(rodinia_eta * out.output_delta * out.hidden_units[std::size_t(j)] + rodinia_momentum * out.hidden_prev[e]);
      out.hidden_weights[e] += dw;
      out.hidden_prev[e] = dw;
    }
  }

  context& ctx_;
  const network& net_;
  std::int64_t blocks_;
  std::vector<float> one_dim_, prev_one_dim_, partial_sum_, input_back_;
  buffer<float> input_cuda_, input_hidden_cuda_, prev_cuda_, hidden_partial_sum_, hidden_delta_cuda_, pristine_;
};

// ---- datasets -------------------------------------------------------------------------------

enum class weight_init { rodinia, balanced };

// Uniform in [0, 1) with 24 random bits: exact in float, never 1.
float unit_float(std::uint64_t word) { return float(word >> 40) * 0x1.0p-24f; }

// Rodinia's initialisation (bpnn_randomize_weights, load): every weight and input uniform in
// [0, 1), the momentum terms zero, the target 0.1. With that many positive inputs the hidden
// sums are about layer / 4, every hidden unit saturates at 1 and its delta is 0: the step changes
// the input weights by momentum only. `balanced` keeps the units in their sigmoid's slope (inputs
// in [0, 1), input weights in [-1, 1) / sqrt(layer + 1), hidden weights in [-1, 1), momentum
// terms in [-0.01, 0.01)), so every part of the step is exercised (the tests use it).
network generate_network(std::int64_t layer, weight_init init, std::uint64_t seed) {
  enum : std::uint64_t { inputs = 1, input_weights, hidden_weights, input_prev, hidden_prev };
  network net;
  net.layer = layer;
  const std::int64_t row = net.row();
  net.input.resize(std::size_t(row));
  net.weights.resize(std::size_t(hidden_rows * row));
  net.prev.assign(net.weights.size(), 0.f);
  net.hidden_weights.resize(std::size_t(hidden_rows * 2));
  net.hidden_prev.assign(net.hidden_weights.size(), 0.f);
  net.target = {0.f, 0.1f};
  const bool balanced = init == weight_init::balanced;
  const float scale = balanced ? float(1.0 / std::sqrt(double(row))) : 1.f;
  auto fill = [&](std::vector<float>& v, std::uint64_t stream, float lo, float width) {
    const std::uint64_t key = datasets::stream_key(seed, stream);
    float* p = v.data();
    const std::int64_t count = std::int64_t(v.size());
    SOAC_OMP_PARALLEL_FOR
    for (std::int64_t i = 0; i < count; ++i) p[i] = lo + width * unit_float(datasets::keyed_word(key, std::uint64_t(i)));
  };
  fill(net.input, inputs, 0.f, 1.f);
  net.input[0] = 1.f;
  fill(net.weights, input_weights, balanced ? -scale : 0.f, balanced ? 2 * scale : 1.f);
  fill(net.hidden_weights, hidden_weights, balanced ? -1.f : 0.f, balanced ? 2.f : 1.f);
  if (balanced) {
    fill(net.prev, input_prev, -0.01f, 0.02f);
    fill(net.hidden_prev, hidden_prev, -0.01f, 0.02f);
  }
  return net;
}

weight_init parse_weight_init(const std::string& v) {
  if (v == "rodinia") return weight_init::rodinia;
  if (v == "balanced") return weight_init::balanced;
  throw usage_error("backprop: init must be rodinia or balanced, not '" + v + "'");
}

std::int64_t layer_param(const nlohmann::json& params) { return int_param(params, "layer_size", 1, max_layer); }

// The four weight arrays of a network (a dataset's, or a result's after the step).
void write_weights(datasets::bundle_writer& out, std::int64_t row, std::span<const float> weights, std::span<const float> prev,
                   std::span<const float> hidden_weights, std::span<const float> hidden_prev) {
  const std::int64_t wshape[2] = {hidden_rows, row}, hshape[2] = {hidden_rows, 2};
  out.add("input_weights", datasets::dtype::f32, wshape, weights.data());
  out.add("input_prev_weights", datasets::dtype::f32, wshape, prev.data());
  out.add("hidden_weights", datasets::dtype::f32, hshape, hidden_weights.data());
  out.add("hidden_prev_weights", datasets::dtype::f32, hshape, hidden_prev.data());
}

network read_network(const bundle& in) {
  network net;
  const auto shape_of = [&](const std::string& name) { return in.header(name).shape; };
  const auto units = shape_of("input_units");
  if (units.size() != 1 || units[0] < 2 || units[0] - 1 > max_layer)
    throw input_error(in.path_of("input_units").string() + ": needs layer_size + 1 values, layer_size in [1, 2^27], not shape " +
                      datasets::shape_string(units));
  net.layer = units[0] - 1;
  const std::vector<std::int64_t> wshape = {hidden_rows, net.row()}, hshape = {hidden_rows, 2};
  for (const auto& [name, shape] : {std::pair{"input_weights", wshape}, std::pair{"input_prev_weights", wshape},
                                    std::pair{"hidden_weights", hshape}, std::pair{"hidden_prev_weights", hshape}})
    if (shape_of(name) != shape)
      throw input_error(in.path_of(name).string() + ": shape " + datasets::shape_string(shape_of(name)) + ", expected " +
                        datasets::shape_string(shape));
  if (shape_of("target") != std::vector<std::int64_t>{2})
    throw input_error(in.path_of("target").string() + ": the target holds 2 values (Rodinia's target[1] is the output's)");
  net.input = in.read<float>("input_units");
  if (net.input[0] != 1.f)
    throw input_error(in.path_of("input_units").string() + ": input unit 0 is the bias unit and must be 1, not " + std::to_string(net.input[0]));
  net.weights = in.read<float>("input_weights");
  net.prev = in.read<float>("input_prev_weights");
  net.hidden_weights = in.read<float>("hidden_weights");
  net.hidden_prev = in.read<float>("hidden_prev_weights");
  net.target = in.read<float>("target");
  return net;
}

validate::backprop_net view_of(const network& net) {
  return {net.layer, net.input, net.weights, net.prev, net.hidden_weights, net.hidden_prev, net.target};
}

class backprop_app final : public app {
 public:
  backprop_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("backprop", "Rodinia's backprop: one training step of a layer_size x 16 x 1 network, the "
                                             "hidden sums as 16 regular segments (FHPC17 4), the adjustment as a map; "
                                             "Rodinia's kernels and copies as the baseline");
    {
      // parts: bench only (also time each launch of the segreduce variant alone).
      auto p = [](std::int64_t layer, const char* init) { return nlohmann::json{{"layer_size", layer}, {"init", init}, {"parts", 0}}; };
      a.presets = {{"rodinia-65536", "Rodinia's default run (backprop 65536), its initialisation", p(65'536, "rodinia")},
                   {"2^20", "2^20 input units", p(std::int64_t{1} << 20, "rodinia")},
                   {"2^24", "2^24 input units (1.1 GB per weight matrix)", p(std::int64_t{1} << 24, "rodinia")},
                   {"tiny", "1000 input units (not a multiple of 16), balanced weights that keep every unit off saturation (tests)",
                    p(1000, "balanced")}};
    }
    a.variants = {"segreduce", "rodinia"};
    a.bench_presets = {"rodinia-65536", "2^20", "2^24"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override {
    layer_param(params);
    if (!params.contains("init") || !params["init"].is_string()) throw usage_error("parameter init must be a string");
    parse_weight_init(params["init"]);
  }
  // The network's shape comes from its arrays (read_network checks them against each other);
  // the manifest's layer_size, where it gives one, must agree (init is the generator's).
  void check_dataset(const bundle& in) const override {
    const std::int64_t units = datasets::length_of(in, "input_units");
    if (in.params().contains("layer_size") && in.params()["layer_size"] != units - 1)
      throw input_error(in.path_of("input_units").string() + ": " + std::to_string(units) +
                        " input units, but the manifest says layer_size = " + in.params()["layer_size"].dump() + " (layer_size + 1 units)");
  }

  void generate(const gen_request& r) const override {
    check_params(r.params);
    const std::int64_t layer = layer_param(r.params);
    // Two weight matrices (and their momentum terms) of 17 x (layer + 1) floats.
    require_host_memory(checked_bytes(std::uint64_t(layer + 1), 4 * hidden_rows * sizeof(float), "backprop: layer_size"),
                        "backprop: layer_size = " + std::to_string(layer));
    const network net = generate_network(layer, parse_weight_init(r.params["init"]), r.seed);
    datasets::bundle_writer out(r.output, "dataset", name());
    out.add<float>("input_units", net.input);
    write_weights(out, net.row(), net.weights, net.prev, net.hidden_weights, net.hidden_prev);
    out.add<float>("target", net.target);
    finish_dataset(out, r);
  }

  static bool is_rodinia(const std::string& variant) {
    if (variant.empty() || variant == "segreduce") return false;
    if (variant == "rodinia") return true;
    throw usage_error("backprop: unknown variant '" + variant + "' (known: segreduce, rodinia)");
  }

  std::string run(context& ctx, const run_request& r) const override {
    const bool rodinia = is_rodinia(r.variant);
    const auto in = open_dataset(r.input);
    const network net = read_network(in);
    trained out;
    std::string plan;
    const auto t0 = std::chrono::steady_clock::now();
    if (rodinia) {
      rodinia_trainer t(ctx, net);
      t.end_to_end(out);
      plan = "rodinia: 16 x 16 blocks of partial sums finished on the host, host hidden layer, adjust kernel";
    } else {
      segreduce_trainer t(ctx, net);
      t.end_to_end(out);
      plan = t.describe();
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    datasets::bundle_writer res(r.output, "result", name());
    write_weights(res, net.row(), out.weights, out.prev, out.hidden_weights, out.hidden_prev);
    res.add<float>("hidden_units", out.hidden_units);
    res.add<float>("hidden_delta", out.hidden_delta);
    res.add<float>("output_unit", std::vector<float>{out.output});
    res.add<float>("output_delta", std::vector<float>{out.output_delta});
    res.params() = in.params();
    res.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name},
                  {"variant", rodinia ? "rodinia" : "segreduce"}, {"plan", plan}, {"out_err", out.out_err},
                  {"hid_err", out.hid_err}, {"end_to_end_ms", ms}};
    res.finish();
    std::ostringstream s;
    s << "backprop: " << net.layer << " input units x 16 hidden x 1 output on " << ctx.describe() << "\n  " << plan << "\n  output "
      << std::setprecision(8) << out.output << ", out_err " << out.out_err << ", hid_err " << out.hid_err << ", " << ms
      << " ms end to end (first run: allocations and module loading included)";
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto res = bundle::open(r.result, "result", name());
    const network net = read_network(in);
    const std::vector<std::int64_t> wshape = {hidden_rows, net.row()}, hshape = {hidden_rows, 2}, units = {hidden_rows}, one = {1};
    for (const auto& [name, shape] : {std::pair{"input_weights", wshape}, std::pair{"input_prev_weights", wshape},
                                      std::pair{"hidden_weights", hshape}, std::pair{"hidden_prev_weights", hshape},
                                      std::pair{"hidden_units", units}, std::pair{"hidden_delta", units},
                                      std::pair{"output_unit", one}, std::pair{"output_delta", one}})
      if (res.header(name).shape != shape)
        throw input_error(res.path_of(name).string() + ": shape " + datasets::shape_string(res.header(name).shape) + ", expected " +
                          datasets::shape_string(shape) + " for this dataset");
    const auto w = res.read<float>("input_weights"), prev = res.read<float>("input_prev_weights");
    const auto hw = res.read<float>("hidden_weights"), hprev = res.read<float>("hidden_prev_weights");
    const auto h = res.read<float>("hidden_units"), hd = res.read<float>("hidden_delta");
    const validate::backprop_result got{w, prev, hw, hprev, h, hd, res.read<float>("output_unit")[0], res.read<float>("output_delta")[0]};
    const auto rep = validate::check_backprop(view_of(net), got);
    return {rep.ok(), rep.describe("values (output, hidden units, deltas, adjusted weights and momentum terms; float32 error "
                                   "bounds propagated through the step)")};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    suite.expect_cases(int(names.size()) * 2);
    for (const auto& preset_name : names) {
      const auto params = resolve_params(preset_name, r.overrides);
      const std::int64_t layer = layer_param(params);
      const network net = generate_network(layer, parse_weight_init(params["init"]), r.seed);
      segreduce_trainer mine(ctx, net);
      rodinia_trainer theirs(ctx, net);
      trained out;
      // The weights each step reads and writes: w and its momentum read, both written.
      const double bytes = 4.0 * double(net.weights.size()) * sizeof(float);
      const std::string layer_name = preset_name + " (" + std::to_string(layer) + " inputs)";

      suite.begin_case(layer_name + ": kernels", params, bytes);
      theirs.end_to_end(out);  // leaves its device state (inputs, hidden deltas) for the kernels
      theirs.keep_pristine();
      suite.measure("rodinia kernels", bench::role::baseline, [&] { theirs.kernels(); }, {}, [&] { theirs.restore(); });
      suite.measure("segreduce kernels", bench::role::soac, [&] { mine.kernels(); }, {}, [&] { mine.upload(); });
      suite.annotate(mine.describe());
      if (int_param(params, "parts", 0, 1) == 1) {
        suite.measure("segreduce [forward sums]", bench::role::soac, [&] { mine.forward_sums(); }, {}, [&] { mine.upload(); });
        suite.measure("segreduce [hidden and output layers]", bench::role::soac, [&] { mine.hidden_layer(); }, {}, [&] { mine.upload(); });
        suite.measure("segreduce [adjustment]", bench::role::soac, [&] { mine.adjust(); }, {}, [&] { mine.upload(); });
      }

      suite.begin_case(layer_name + ": end to end", params, bytes);
      suite.measure("rodinia", bench::role::baseline, [&] { theirs.end_to_end(out); });
      suite.measure("segreduce", bench::role::soac, [&] { mine.end_to_end(out); });
    }
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::backprop_app)
