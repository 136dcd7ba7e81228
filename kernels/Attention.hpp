#pragma once
// Reference attention on real numbers. The golden kernel computes softmax(QKᵀ·scale + mask)·V
// directly in double precision; the variants compute the way backends do (tiled online softmax,
// paged KV, split-KV with a log-sum-exp merge, ...) in float, and tests hold them to golden.
#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <vector>

namespace attnsim::kernels {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Geometry {
  int num_heads = 1;
  int num_kv_heads = 1;  // query head h uses KV head h / (num_heads / num_kv_heads)
  int d_qk = 64;
  int d_v = 64;
  double scale = 0.125;  // softmax scale, usually 1/sqrt(d_qk)
  [[nodiscard]] int group() const { return num_heads / num_kv_heads; }
};

struct MaskSpec {
  bool causal = true;
  std::int64_t window = 0;  // left window: a query at position p sees keys p - window + 1 .. p (0 = all)
  std::int64_t chunk = 0;   // chunked local attention: only keys in the query's chunk of this size (0 = off)
};

// One request: q_len query rows after `prefix` cached tokens; K and V hold prefix + q_len rows.
// A verify tree gives each query node its parent (-1: the node follows the prefix directly); a
// node then sees the prefix and its own path. Sparse attention gives each row its key set.
struct RequestData {
  std::int64_t prefix = 0;
  Matrix q;                                // q_len × (num_heads × d_qk)
  Matrix k;                                // kv_len × (num_kv_heads × d_qk)
  Matrix v;                                // kv_len × (num_kv_heads × d_v)
  std::vector<int> tree_parent;            // empty: a chain (plain causal)
  std::vector<std::vector<int>> key_sets;  // empty: dense
  [[nodiscard]] std::int64_t qLen() const { return q.rows(); }
  [[nodiscard]] std::int64_t kvLen() const { return k.rows(); }
};

struct Problem {
  Geometry geo;
  MaskSpec mask;
  std::vector<float> sinks;  // one learned logit per query head (gpt-oss); empty: none
  std::vector<RequestData> requests;
};

// Output rows per request (q_len × (num_heads × d_v)) and each row's log-sum-exp per head.
struct Result {
  std::vector<MatrixD> out;
  std::vector<MatrixD> lse;  // q_len × num_heads
};

// Whether query row i of a request may attend key j.
class MaskView {
 public:
  MaskView(const MaskSpec& mask, const RequestData& r);
  [[nodiscard]] bool allowed(std::int64_t i, std::int64_t j) const;
  [[nodiscard]] std::int64_t position(std::int64_t i) const;  // absolute position of query row i

 private:
  const MaskSpec& mask_;
  const RequestData& r_;
  std::vector<int> depth_;
};

Result goldenAttention(const Problem& p);

// Where a kernel reads K and V from.
enum class KvLayout {
  Contiguous,    // each request's rows in order
  PagedNative,   // a shared page pool of page_size-token pages, read through a page table
  PagedPerToken  // the same pool read through a per-token index table (SGLang's page size 1 emulation)
};

struct TiledOptions {
  int tile_q = 64;
  int tile_kv = 64;
  int splits = 1;  // split-KV: independent partial softmaxes merged by log-sum-exp
  KvLayout layout = KvLayout::Contiguous;
  int page_size = 16;
  bool round_p_to_bf16 = true;  // FlashAttention feeds P to the second GEMM in the input dtype
  bool unfused = false;         // materialize the whole score matrix instead of tiles
  unsigned seed = 1;            // shuffles the page pool
};

Result tiledAttention(const Problem& p, const TiledOptions& options);

// Merges partial results over disjoint key ranges: O = Σ exp(lse_s − lse) O_s, lse = log Σ exp(lse_s).
void mergePartials(const std::vector<const Result*>& parts, Result& out);

// Cascade (shared-prefix) attention: every request's first `shared` KV rows are the same and all
// its queries come after them; the shared part is computed once, non-causally, for all requests'
// queries stacked together, and merged with each request's own part by log-sum-exp.
Result cascadeAttention(const Problem& p, std::int64_t shared, const TiledOptions& options);

}  // namespace attnsim::kernels
