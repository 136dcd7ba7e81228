#include <fmt/format.h>

#include <iostream>

#include "cli/Commands.hpp"
#include "core/Error.hpp"
#include "reports/Answers.hpp"
#include "reports/Json.hpp"
#include "simulator/Evaluation.hpp"

namespace attnsim::cli {

Runner addPredictCommand(CLI::App& app, const GlobalOptions& global) {
  auto flags = std::make_shared<ScenarioFlags>();
  app.add_option("--hardware", flags->hardware, "hardware profile id")->required();
  app.add_option("--model", flags->models, "model id (or give --num-heads etc. for a model outside the catalog)");
  app.add_option("--backend", flags->backend, "engine:NAME (validated as the engine would), or NAME with --engine");
  app.add_option("--engine", flags->engines, "predict the engine's own auto-selected backend");
  app.add_option("--kernel", flags->kernel, "a kernel family directly, outside any engine (what-if)");
  auto op = std::make_shared<OperatorFlags>();
  app.add_option("--gemm", op->gemm,
                 "one dense GEMM of M,N,K instead of a step (with --gemm-dtype; --engine E: as E's step "
                 "prices it, none: with DeepGEMM's one-wave class where the surface has one)");
  app.add_option("--gemm-dtype", op->gemm_dtype, "the --gemm call's dtype: bf16, fp8, fp8_block, nvfp4");
  app.add_option("--allreduce", op->allreduce_bytes,
                 "one TP all-reduce of this many bytes over --tp GPUs instead of a step (--engine E: E's, "
                 "NCCL's where E's custom all-reduce does not run; --engine nccl: NCCL's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--moe", op->moe_tokens,
                 "one MoE layer call of this many tokens through --model's routed experts instead of a step "
                 "(with --tp, --ep, --engine, --weight-dtype)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ep", op->ep, "the --moe call's expert parallelism (experts split over this many GPUs)")
      ->check(CLI::PositiveNumber);
  flags->addWorkload(app);
  flags->addServing(app);
  flags->addStudy(app);
  flags->addGeometry(app);
  return [&global, flags, op]() {
    if (op->ep > 1 && op->moe_tokens <= 0) throw UsageError("--ep applies to --moe only");
    if (op->given() > 0) {
      // One operator: the flags of a step do not apply to it (a GEMM takes --engine; an all-reduce --engine
      // and --tp; an MoE call --model, --engine, --tp, --ep and --weight-dtype).
      for (const auto& [given, name] : {std::pair{flags->backend, "--backend"}, std::pair{flags->kernel, "--kernel"},
                                        std::pair{flags->context, "--context"}}) {
        if (!given.empty()) throw UsageError(std::string(name) + " does not apply to --gemm, --allreduce or --moe");
      }
      if (!flags->models.empty() && op->moe_tokens <= 0)
        throw UsageError("--model does not apply to --gemm or --allreduce");
      predictOperator(*flags->catalog(global), *flags, *op, global.json);
      return 0;
    }
    if (const int listed = runListStudy(*flags, global, false); listed >= 0) return listed;
    const auto catalog = flags->catalog(global);
    const Catalog& c = *catalog;
    const ScenarioPrediction p = predictScenario(c, flags->scenario(flags->hardware, flags->models, flags->engines));
    if (global.json) {
      std::cout << predictionJson(p, c).dump(2) << "\n";  // its "memory" says whether the deployment fits
    } else {
      fmt::print("{}", predictionText(p, c));
    }
    return 0;
  };
}

}  // namespace attnsim::cli
