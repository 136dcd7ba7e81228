#pragma once
// `attnsim calibrate` for the step's operators beside attention: a dense GEMM efficiency surface per
// (device, dtype) from `gemm` rows and each engine's custom all-reduce per device from `allreduce`
// rows (AIConfigurator's tables as measurements/aic_convert.py writes them), each checked on rows
// kept out of the fit, against the catalog's defaults on the same rows.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hardware/HardwareProfile.hpp"
#include "hardware/MoeFit.hpp"
#include "hardware/OperatorFits.hpp"
#include "study/Store.hpp"

namespace attnsim {

class Catalog;

// One measured operator call, predicted by the fit and by the catalog's defaults (before the fit).
struct OperatorPoint {
  std::string hardware, engine, op;  // op: gemm:<dtype> or allreduce
  std::string shape;                 // "m=… n=… k=…" or "bytes=… gpus=…"
  double measured_us = 0, fitted_us = 0, default_us = 0;
  bool held_out = false;
};

// Errors of one (hardware, engine, op) over its held-out points, fitted and default.
struct OperatorErrors {
  std::string hardware, engine, op;
  int points = 0;
  double mape = 0, p90 = 0, default_mape = 0;
  OperatorPoint worst;
};

// Whether a GEMM surface's nodes above their neighbours were taken as stalls of the table's replays and
// dropped (study/OperatorCalibration.cpp checkStalls), and the share of the table's one-tile calls that
// lie 20% above their median beyond those as far below.
struct GemmStallCheck {
  bool dropped = true;
  double stall_share = 0;
};

struct GemmCalibration {
  std::string hardware;
  std::string engine;  // whose grid rows were fitted (the engine with the most of them)
  GemmSurface surface;
  GemmStallCheck stalls;
};
struct AllReduceCalibration {
  std::string hardware;
  AllReduceFit fit;
};
struct MoeCalibration {
  std::string hardware;
  MoeFit fit;
};

struct OperatorCalibration {
  std::vector<GemmCalibration> gemm;
  std::vector<AllReduceCalibration> all_reduce;
  std::vector<MoeCalibration> moe;
  std::vector<OperatorPoint> points;    // every row, training and held out
  std::vector<std::string> not_fitted;  // what had rows but no fit, and why

  [[nodiscard]] std::vector<OperatorErrors> heldOutErrors() const;
};

// A GEMM surface needs this many measured nodes, at least 3 sizes on each axis: a handful of shapes
// cannot stand for cuBLAS's tile choices between them.
inline constexpr int kMinGemmSurfaceNodes = 64;

// Errors of each (hardware, engine, op) over the held-out ones of `points`.
std::vector<OperatorErrors> heldOutErrors(std::span<const OperatorPoint> points);

// The held-out rule: a GEMM row of the fitted grid's engine off the power-of-two grid, a row of another
// engine by gemmEngineRowHeldOut; an all-reduce row whose message size is 2^i elements with i % 3 == 1.
OperatorCalibration calibrateOperators(const Catalog& catalog, const std::vector<MeasurementRow>& rows,
                                       const std::string& hardware);

// A GEMM row of an engine other than the surface's held out of its GemmEngineTiming's fit:
// (M + N/32 + K/32) % 3 == 0, about a third of them.
bool gemmEngineRowHeldOut(const MeasurementRow& r);
// The floors and added times of `engine`'s timed calls over the fitted surface `s`, on its rows that
// are not held out (study/GemmEngineCalibration.cpp).
GemmEngineTiming fitGemmEngineTiming(const GemmSurface& s, const std::string& engine,
                                     const std::vector<const MeasurementRow*>& rows);
// The `engines:` block of a surface's calibration entry ("" without).
std::string gemmEngineTimingsYaml(const GemmSurface& s);

// The SMs of a device whose fp8_block surface keeps DeepGEMM's single-wave launches apart
// (GemmSingleWave: Hopper, where SGLang's block-FP8 linear runs DeepGEMM's SM90 kernel); 0: none.
int gemmSingleWaveSms(const HardwareProfile& hw, const std::string& dtype);
// Whether the row's shape is one of those launches on `sms` SMs (hardware/DeepGemmPick.hpp).
bool gemmSingleWaveRow(const MeasurementRow& r, int sms);
// The single-wave launches' time fitted on `engine`'s grid rows of the class by least relative squares
// of fixed_us + per_k_block_us · ⌈K / 128⌉, then again without those the surface already puts slower
// (a large M over few N reads A at the DRAM's pace); none below 4 rows.
std::optional<GemmSingleWave> fitGemmSingleWave(const GemmSurface& s, const std::vector<const MeasurementRow*>& rows,
                                                const std::string& engine, int sms);

// Where rows of `engine` came from: the tables they were converted from, else their files' names.
std::string operatorRowOrigins(const std::vector<const MeasurementRow*>& rows, const std::string& engine);

// The all-reduce fit of one (hardware, engine) from its `allreduce` rows (study/AllReduceCalibration.cpp):
// the shared one-shot and two-shot regimes over every GPU count, and for an engine's custom all-reduce
// (not NCCL) the regimes of each GPU count of its own. Held out: message sizes of 2^i elements, i % 3 == 1.
void calibrateAllReduce(const Catalog& catalog, const std::string& hardware, const std::string& engine,
                        const std::vector<const MeasurementRow*>& rows, OperatorCalibration& out);
// A calibration file's `allreduce:` section for one device ("" when it has no fit).
std::string allReduceCalibrationYaml(const OperatorCalibration& c, const std::string& hardware);

// The fused-MoE fits of `moe` rows (study/MoeCalibration.cpp), one per (hardware, engine, dtype) over
// its most-timed kernel. Held out: every call of the shape classes whose (hidden + 3·inter + 7·experts
// + 13·top-k, widths in units of 64) is divisible by 4, and every call at 48, 192, 768, 3072 or 12288
// tokens; the points join `out.points` as op moe:<dtype>.
void calibrateMoe(const Catalog& catalog, const std::vector<const MeasurementRow*>& rows, const std::string& hardware,
                  const std::string& engine, const std::string& dtype, OperatorCalibration& out);
// A moe row as one call: batch = tokens, q_len = hidden, kv_len = inter / TP, heads = experts,
// kv_heads = top-k (measurements/aic_convert.py), without expert parallelism; the experts the row's routing
// reached where the converter counted them (DeepSeek-V3's grouped router leaves half of them idle), else
// balanced routing's min(experts, tokens · top-k); an expert's weight matrices where the converter wrote them
// (2: Nemotron-H's experts have no gate), else 3.
MoeCall moeCallOf(const MeasurementRow& r);

// A calibration file's `moe:` section for one device ("" when it has no fit).
std::string moeCalibrationYaml(const OperatorCalibration& c, const std::string& hardware);

// A calibration file's `gemm:` and `allreduce:` sections for one device ("" when it has no fit).
std::string operatorCalibrationYaml(const OperatorCalibration& c, const std::string& hardware);
// Adds each fitted device's sections to its calibration file's text (calibrationYaml), before its
// `kernels:`, or as a file of its own whose `source:` is `source`.
void addOperatorSections(std::map<std::string, std::string>& files, const OperatorCalibration& ops,
                         const std::string& source);

}  // namespace attnsim
