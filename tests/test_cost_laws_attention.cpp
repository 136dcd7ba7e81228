// The attention-kernel laws a serving engineer checks first, as properties over the whole catalog:
// every hardware profile × several models × every backend the engines accept.
//   mixed batches: the combined call costs at least its largest part and about no more than the sum
//     of its parts, and the prediction says how the backend runs it (one launch or one call per phase);
//   monotone: more requests or more context never take less time;
//   linear: memory-bound decode time grows about in proportion to the bytes it reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "SanitizerSample.hpp"
#include "core/Error.hpp"
#include "cost/AttentionCost.hpp"
#include "hardware/HardwareProfile.hpp"
#include "tests/TestSupport.hpp"

namespace attnsim::test {
namespace {

// Attention per layer of one backend on one workload; negative when the engine refuses it.
// `split_launch_us`: per layer, the launch of the split merge kernel, where the call splits its KV.
double attentionUs(const std::string& engine, const std::string& backend, const std::string& hw,
                   const std::string& model, const Workload& w, std::string* note = nullptr,
                   double* split_launch_us = nullptr, std::string* kernel = nullptr) {
  Scenario s = engineScenario(engine, hw, model);
  s.backend = backend;
  s.workload = w;
  try {
    const ScenarioPrediction p = predictScenario(defaultCatalog(), s);
    if (note) *note = p.prediction.mixed_note;
    if (kernel) {  // the first layer type's family, and whether it attends a latent cache (MLA absorbed)
      const LayerAttention& a = p.prediction.attention.front();
      *kernel = a.kernel->id + (a.shape.num_kv_heads == 1 && a.shape.d_v != a.shape.d_qk ? " latent" : " per-head");
    }
    if (split_launch_us) {
      double launches = 0;
      int layers = 0;
      for (const auto& a : p.prediction.attention) {
        if (a.cost.splits > 1) launches += a.cost.fixed_us / 2 * a.layers;
        layers += a.layers;
      }
      *split_launch_us = layers > 0 ? launches / layers : 0;
    }
    return p.prediction.attention_us;
  } catch (const EngineRefusal&) {
    return -1;
  } catch (const UsageError&) {
    return -1;
  }
}

Workload mixOf(const std::vector<RequestGroup>& groups) {
  Workload w;
  w.groups = groups;
  w.phase = Phase::Decode;
  for (const auto& g : groups) {
    if (g.q_len > 1) w.phase = Phase::Extend;
  }
  return w;
}

// Combined over parts: the decode rows alone run as the engine runs a decode-only batch (its decode
// kernel, split-KV), the prefill rows alone as an extend. A mixed call saves a launch and shares the
// machine, so it may beat the sum by up to one launch and idle tail; it must not beat the larger part.
// Upper margin 10%: a one-launch varlen kernel runs the decode rows inside prefill tiles (FA3 packs
// them into 128-row tiles, Triton unified has no 3D split-KV launch for a mixed batch), which costs
// tile padding the decode kernel does not pay, within a tenth when memory-bound.
// With measured surfaces the parts and the whole are each corrected by their own measured slices; where
// the engine runs the whole in another form than a part (SGLang's MLA: an absorbed mixed launch against
// an MHA-form prefill part) the two corrections differ a little: worst seen +10.02% (h100-pcie
// deepseek-v3 sglang:fa3, the H100's FA3 surfaces transferred). Hence half a percent more.
constexpr double kMixedMargin = 0.105;
// Lower margin: a decode-only call that splits its KV (SGLang's triton decode at its split rule) pays
// a merge kernel's launch and its partial outputs' traffic, which the one-launch mixed call does not;
// where both sit on the bandwidth floor that is all that separates them. The launch is taken from the
// prediction; 0.5% covers the partials (worst seen: -0.6%, intel-max-1550 gpt-oss-20b sglang:triton,
// of which 3 µs of 4.3 µs is the launch).
constexpr double kMixedSavedPartials = 0.005;
// And the decode part's wave tail: the decode-only call runs the decode kernel, whose last partial
// wave of units streams at their slot share of bandwidth (the per-wave schedule), while the one-launch
// call runs the decode rows unsplit among the prefill tiles, which fill that wave. Worst seen: -2.6%
// below the decode part (intel-max-1550 llama-3.1-8b sglang:flex_attention, flex-attention's one
// launch against flex-decoding's decode call).
constexpr double kMixedDecodeTail = 0.025;

struct MixCase {
  std::vector<RequestGroup> prefill, decode;
};

// One backend's attention on a mixed batch and on its two parts, with how each ran.
struct MixRun {
  double combined = -1, prefill = -1, decode = -1, saved_launch = 0;
  std::string note, combined_kernel, prefill_kernel, decode_kernel;
};

MixRun runMix(const char* engine, const std::string& backend, const std::string& hw, const char* model,
              const MixCase& mix) {
  std::vector<RequestGroup> all = mix.prefill;
  all.insert(all.end(), mix.decode.begin(), mix.decode.end());
  MixRun r;
  r.combined = attentionUs(engine, backend, hw, model, mixOf(all), &r.note, nullptr, &r.combined_kernel);
  r.prefill = attentionUs(engine, backend, hw, model, mixOf(mix.prefill), nullptr, nullptr, &r.prefill_kernel);
  r.decode = attentionUs(engine, backend, hw, model, mixOf(mix.decode), nullptr, &r.saved_launch, &r.decode_kernel);
  return r;
}

struct MixTally {
  double worst_low = 0, worst_high = 0;
  int checked = 0, form_switches = 0, kernel_switches = 0, graph_split_parts = 0;
  std::string worst_high_case;

  void lowerBound(const MixRun& r, const std::string& what) {
    // An engine that picks one form per batch (SGLang's MLA handlers) may run the larger part in
    // another form than the whole (a 2048-token prefill replays the piecewise prefill graph and
    // runs absorbed, the 2079-token mixed batch runs MHA) or in another kernel of the same form
    // (its absorbed extends run in FlashInfer MLA, its decode in FlashMLA or trtllm-gen). The law
    // compares one kernel's parts with its whole; these compare kernels, and are counted.
    const bool one_form = r.note.find("the engine's form for this batch") != std::string::npos ||
                          r.note.find("in MHA form") != std::string::npos;
    const std::string& larger_kernel = r.prefill >= r.decode ? r.prefill_kernel : r.decode_kernel;
    const auto geometry = [](const std::string& k) { return k.substr(k.find(' ')); };
    if (one_form && geometry(r.combined_kernel) != geometry(larger_kernel)) {
      ++form_switches;
      return;
    }
    if (one_form && r.combined_kernel != larger_kernel) {
      ++kernel_switches;
      return;
    }
    // vLLM's FA4 runs exactly 32 splits for a call within its CUDA graph capture size and none past it
    // (split_rule graph): a decode-only part may run slower than the larger mixed launch that holds it,
    // as AIConfigurator's H100 rows show for its decode (batch 512 over 2 keys 2,440 µs, 1,024 176 µs).
    // The law compares one split regime's parts with its whole; these change regime, and are counted.
    const std::string decode_family = r.decode_kernel.substr(0, r.decode_kernel.find(' '));
    if (defaultCatalog().kernel(decode_family).split_policy.rule == SplitRule::Graph) {
      ++graph_split_parts;
      return;
    }
    const double largest = std::max(r.prefill, r.decode);
    EXPECT_GE(r.combined, largest * (1 - kMixedSavedPartials - kMixedDecodeTail) - r.saved_launch) << what;
    worst_low = std::min(worst_low, r.combined / largest - 1);
  }

  void upperBound(const MixRun& r, const std::string& what) {
    EXPECT_NE(r.note.find("mixed batch:"), std::string::npos) << what << ": the output says how it runs";
    if (r.note.find("padded query tile") != std::string::npos) return;  // the kernel pads: said in the output
    // SGLang's MHA form up-projects every row's cached latent, the decode rows' too: said in the output.
    if (r.note.find("in MHA form") != std::string::npos) return;
    // SGLang's absorbed extend kernel is not its decode kernel (FlashMLA's and trtllm_mla's extends run
    // in FlashInfer MLA): said in the output.
    if (r.note.find("not in the decode kernel") != std::string::npos) return;
    const double over = r.combined / (r.prefill + r.decode) - 1;
    EXPECT_LE(over, kMixedMargin) << what << ": " << r.combined << " vs " << r.prefill << " + " << r.decode;
    if (over > worst_high) {
      worst_high = over;
      worst_high_case = what;
    }
  }
};

void checkMixedLaw(const std::vector<const char*>& models) {
  const std::vector<MixCase> mixes{{{{1, 16, 2048}}, {{63, 1, 8192}}}, {{{1, 2048, 2048}}, {{31, 1, 4096}}}};
  MixTally t;
  const auto& profiles = defaultCatalog().hardwareProfiles();
  for (std::size_t hi = 0; hi < profiles.size(); ++hi) {
    if (!test::checkedInThisBuild(hi)) continue;
    const auto& hw = profiles[hi];
    for (const char* model : models) {
      for (const char* engine : {"vllm", "sglang"}) {
        for (const auto& backend : defaultCatalog().engine(engine).backends) {
          for (const auto& mix : mixes) {
            const MixRun r = runMix(engine, backend.name, hw.id, model, mix);
            if (r.combined < 0 || r.prefill < 0 || r.decode < 0) continue;
            ++t.checked;
            const std::string what = hw.id + " " + model + " " + engine + ":" + backend.name;
            t.lowerBound(r, what);
            t.upperBound(r, what);
          }
        }
      }
    }
  }
  EXPECT_GT(static_cast<std::size_t>(t.checked), test::sweepFloor(100));
  ::testing::Test::RecordProperty("worst_over_sum", std::to_string(t.worst_high) + " " + t.worst_high_case);
  std::printf(
      "mixed law: %d cases (the larger part in another form: %d, in another kernel: %d, a graph-split decode part: "
      "%d); worst over the sum %+.3f (%s); worst under the largest part %+.3f\n",
      t.checked, t.form_switches, t.kernel_switches, t.graph_split_parts, t.worst_high, t.worst_high_case.c_str(),
      t.worst_low);
}

TEST(CostLawsAttention, MixedBatchCostsBetweenItsLargestPartAndTheSum) {
  checkMixedLaw({"llama-3.1-8b", "gpt-oss-20b"});
}

// MLA models. vLLM runs a mixed batch by phase (MLACommonImpl): the whole is its two calls. SGLang mixes
// only with --enable-mixed-chunk (off by default; serve-sim schedules separate steps) and then runs the
// whole batch in one form, MHA or absorbed, picked per batch (BackendCaps::mla_extend,
// tests/test_mla_extend.cpp): in MHA form every row's cached latent is up-projected, so the upper bound
// is exempt there and the output says why; where its absorbed extend kernel is not its decode kernel
// (FlashMLA's and trtllm_mla's extends run in FlashInfer MLA) the output says that too. Where the larger
// part ran in another form or kernel than the whole, the lower bound compares kernels rather than the
// model's parts and whole, and the case is counted instead (the test prints the counts).
TEST(CostLawsAttention, MixedBatchLawForMla) { checkMixedLaw({"deepseek-v3"}); }

// The attention kernels of the catalog, each with a shape it runs: MLA families on DeepSeek-V3's
// absorbed latent heads, the others on a GQA and an MHA geometry.
std::vector<AttentionShape> shapesFor(const KernelFamily& k) {
  auto make = [](int heads, int kv_heads, int d_qk, int d_v, int width) {
    AttentionShape s;
    s.num_heads = heads;
    s.num_kv_heads = kv_heads;
    s.d_qk = d_qk;
    s.d_v = d_v;
    s.kv_token_width = width;
    return s;
  };
  if (k.attendsLatentCache()) return {make(128, 1, 576, 512, 576)};
  return {make(32, 8, 128, 128, 256), make(16, 16, 64, 64, 128)};
}

bool attentionKernel(const KernelFamily& k) {
  return k.algorithm != "gemm" && k.algorithm != "grouped_gemm" && k.algorithm != "elementwise" &&
         k.algorithm != "mla_sparse";  // sparse top-k reads a fixed key budget, not the context
}

struct Sweep {
  const KernelModel& kernel;
  const DeviceModel& device;
  const AttentionShape& shape;
  Phase phase;
  AttentionCost at(std::int64_t batch, std::int64_t context) const {
    const std::int64_t q = phase == Phase::Prefill ? context : 1;
    const RequestGroup g{batch, q, context};
    return predictAttention(shape, kernel, device, phase, std::span<const RequestGroup>(&g, 1), 16);
  }
};

std::int64_t nextStep(std::int64_t v) { return v + std::max<std::int64_t>(1, v / 8); }

// Monotone in work. Two exemptions, each a mechanism the kernels really have:
// - a decode kernel with a split rule (the engines' Triton kernels, the ROCm partitions,
//   FlashAttention's num_splits_heuristic) launches the count its heuristic picks; where that count changes, more work
//   in more, shorter units can finish first (StepLaws has the same exemption). Only a change of split count is exempt.
// - prefill may drop by up to kPrefillDrop between neighbouring contexts. Its DRAM bytes go to the
//   tile that first reads each key, and the traffic reads whole KV pages: a prompt that fills more
//   of its last page spreads the same page bytes over more keys, so the first tile's share falls a
//   little; the last tile's rounding (rows to 16, keys to the key tile) moves the longest unit too.
//   Worst seen: 3.1% (prompts of 18 -> 20 tokens, triton-unified on the B200 with its measured fit of
//   0.1 µs fixed time; 2.8% at 4 CTAs per SM on A10G, L40S and the Xeon: one 16-row tile whose keys
//   round to the key tile).
constexpr double kPrefillDrop = 0.035;

struct MonotoneCheck {
  const std::string& what;
  double previous = 0;
  int previous_splits = 0;
  double worst = 0;
  void next(const AttentionCost& c, bool ruled, double tolerance, const std::string& where) {
    const bool exempt = ruled && previous_splits > 0 && c.splits != previous_splits;
    if (!exempt) {
      EXPECT_GE(c.time_us, previous * (1 - tolerance)) << what << " " << where;
      worst = std::max(worst, previous > 0 ? 1 - c.time_us / previous : 0);
    }
    previous = c.time_us;
    previous_splits = c.splits;
  }
};

TEST(CostLawsAttention, TimeNeverFallsWhenBatchOrContextGrows) {
  double worst = 0;
  int sweeps = 0;
  const auto& profiles = defaultCatalog().hardwareProfiles();
  for (std::size_t hi = 0; hi < profiles.size(); ++hi) {
    if (!test::checkedInThisBuild(hi)) continue;
    const auto& hw = profiles[hi];
    const DeviceModel device = resolveDevice(hw, DType::BF16);
    for (const auto& family : defaultCatalog().kernels()) {
      if (!attentionKernel(family)) continue;
      for (const Phase phase : {Phase::Prefill, Phase::Decode}) {
        const KernelModel kernel = resolveKernel(family, hw, phase);
        const bool decode = phase == Phase::Decode;
        const bool ruled = decode && kernel.split_policy.rule != SplitRule::Search;
        for (const auto& shape : shapesFor(family)) {
          const Sweep sweep{kernel, device, shape, phase};
          const std::string what = family.id + " " + hw.id + " " + std::string(phaseName(phase));
          MonotoneCheck by_batch{what};
          for (std::int64_t b = 1; b <= (decode ? 512 : 64); b = nextStep(b)) {
            by_batch.next(sweep.at(b, decode ? 4096 : 1024), ruled, decode ? 1e-9 : kPrefillDrop,
                          "batch " + std::to_string(b));
          }
          MonotoneCheck by_context{what};
          for (std::int64_t c = 16; c <= (decode ? 65536 : 16384); c = nextStep(c)) {
            const double tolerance = decode ? 1e-9 : kPrefillDrop;
            by_context.next(sweep.at(decode ? 8 : 2, c), ruled, tolerance, "context " + std::to_string(c));
          }
          worst = std::max({worst, by_batch.worst, by_context.worst});
          ++sweeps;
        }
      }
    }
  }
  std::printf("monotone: %d sweeps; largest drop %.4f\n", sweeps, worst);
}

// Memory-bound decode grows with the bytes it reads, in the kernel's own waves. Between two batches
// whose calls run the same split count and fill the same number of waves (units / slots, rounded up),
// time grows no faster than the bytes (plus 5%: launch and merge shares, page rounding). Where a new
// wave starts, it may step, but by at most one wave: its units run at their slot share of the
// bandwidth, never below an even share of it (measured: FA2 decode steps 1.46-1.57x at 264 -> 272
// units on 264 slots, measurements/data/h100/wave_edges.csv; WaveEdges below checks the model there).
// Once the machine is full (batch >= 64 at 4k context), time grows no slower than 85% of the bytes:
// the launch and merge costs do not grow with the batch. A kernel whose split count follows its
// engine's rule (vLLM's unified attention leaves its 3D split launch past 16 sequences of 8 KV heads,
// SGLang's get_num_kv_splits_triton, the ROCm partitions) launches what the rule says: where the count
// changes, both bounds are the rule's, not the waves' (the monotone law has the same exemption).
// A call is memory-bound here when it is labelled so and its memory roof is at least twice its compute
// roof: near the ridge (MLA decode on Blackwell, roofs within 20%) the label names the larger roof, but
// the units' math can set the waves.
constexpr double kLinearAbove = 0.05;
constexpr double kLinearBelow = 0.15;

bool clearlyMemoryBound(const AttentionCost& c) { return c.bound == Bound::Memory && 2 * c.compute_us <= c.memory_us; }

TEST(CostLawsAttention, MemoryBoundDecodeGrowsWithTheBytesItReadsInTheKernelsWaves) {
  double worst_above = 0, worst_below = 0, worst_edge = 0;
  std::string above_case, below_case, edge_case;
  int steps = 0, edges = 0, ruled_changes = 0;
  for (const auto& hw : defaultCatalog().hardwareProfiles()) {
    const DeviceModel device = resolveDevice(hw, DType::BF16);
    for (const auto& family : defaultCatalog().kernels()) {
      if (!attentionKernel(family) || family.algorithm == "unfused") continue;
      const KernelModel kernel = resolveKernel(family, hw, Phase::Decode);
      const bool ruled = kernel.split_policy.rule != SplitRule::Search;
      for (const auto& shape : shapesFor(family)) {
        const Sweep sweep{kernel, device, shape, Phase::Decode};
        for (std::int64_t b = 16; b < 512; b = nextStep(b)) {
          const AttentionCost x = sweep.at(b, 4096);
          const AttentionCost y = sweep.at(nextStep(b), 4096);
          if (!clearlyMemoryBound(x) || !clearlyMemoryBound(y)) continue;
          ++steps;
          if (ruled && x.splits != y.splits) {
            ++ruled_changes;
            continue;
          }
          const double bytes = y.bytes / x.bytes;
          const double growth = (y.time_us / x.time_us) / bytes - 1;
          const double waves_x = std::ceil(x.ctas / x.slots - 1e-9);
          // vLLM's FLEX_ATTENTION blocks hold 16 requests each and the batch's last block fewer, so the
          // units are not alike: a batch that fills one more block adds a full-length unit to the waves.
          const bool edge = family.query_blocks_span_requests || std::ceil(y.ctas / y.slots - 1e-9) != waves_x;
          const std::string what = family.id + " " + hw.id + " d" + std::to_string(shape.d_qk) + " batch " +
                                   std::to_string(b) + "→" + std::to_string(nextStep(b));
          if (edge) {
            ++edges;
            // One more wave at most: time_x spreads over waves_x waves, or, with blocks of requests,
            // over its waves of full blocks (the last wave may hold only the partial block).
            const double full_waves = family.query_blocks_span_requests ? std::max(1.0, waves_x - 1) : waves_x;
            const double step = y.time_us / x.time_us - bytes;
            EXPECT_LE(step, 1.0 / full_waves + kLinearAbove) << what;
            if (step * full_waves > worst_edge) {
              worst_edge = step * full_waves;
              edge_case = what;
            }
          } else {
            EXPECT_LE(growth, kLinearAbove) << what;
            if (growth > worst_above) {
              worst_above = growth;
              above_case = what;
            }
          }
          if (b >= 64) {
            EXPECT_GE(growth, -kLinearBelow) << what;
            if (growth < worst_below) {
              worst_below = growth;
              below_case = what;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(steps, 1000);
  std::printf(
      "linear: %d steps, %d at wave edges, %d at a split rule's change; within a wave worst %+.3f (%s); at an edge "
      "worst %.2f of a wave (%s); full machine worst %+.3f (%s)\n",
      steps, edges, ruled_changes, worst_above, above_case.c_str(), worst_edge, edge_case.c_str(), worst_below,
      below_case.c_str());
}

}  // namespace
}  // namespace attnsim::test
