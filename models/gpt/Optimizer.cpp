//===- Optimizer.cpp - GPT-2's AdamW step, clipping and schedule -----------===//
#include "models/gpt/Model.h"
#include "models/gpt/ModelKernels.h"

#include <cmath>
#include <tuple>

namespace tegula::gpt {

void GptModel::init_optimizer() {
  if (adamM_.size() == 0) {
    adamM_ = Arena(paramArena_.size(), backend_);
    adamV_ = Arena(paramArena_.size(), backend_);
  }
  memory(); // the peak
}

void GptModel::step(const AdamW &opt) {
  // What would turn every parameter into NaN or step it uphill, refused
  // before anything moves (as torch.optim.AdamW refuses them).
  if (!(opt.lr >= 0) || std::isinf(opt.lr))
    throw Error(fmt::format("GPT step: the learning rate is 0 or more, not {}", opt.lr));
  if (!(opt.beta1 >= 0 && opt.beta1 < 1) || !(opt.beta2 >= 0 && opt.beta2 < 1))
    throw Error(fmt::format("GPT step: betas are in [0, 1), not ({}, {})", opt.beta1, opt.beta2));
  if (!(opt.eps >= 0) || !(opt.weight_decay >= 0))
    throw Error(fmt::format("GPT step: eps and weight_decay are 0 or more, not {} and {}", opt.eps,
                            opt.weight_decay));
  init_optimizer();
  zeroPendingGradients();
  ++steps_;
  const float bias1 = 1.0f - std::pow(opt.beta1, float(steps_));
  const float bias2 = 1.0f - std::pow(opt.beta2, float(steps_));
  // Two launches: the matrices (weight decay) and the vectors after them
  // (none) - parameterLayout places them so.
  const int64_t total = paramArena_.size();
  // Stochastic rounding's Philox key: the model's seed, the step and the
  // launch's first parameter mixed (splitmix64's finalizer), so no two
  // steps or launches draw the same bits.
  auto roundingSeed = [&](int64_t offset) {
    uint64_t z = seed_ + 0x9E3779B97F4A7C15ull * (uint64_t(steps_) + (uint64_t(offset) << 32));
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return int64_t(z ^ (z >> 31));
  };
  for (auto [offset, n, decay] : {std::tuple{int64_t(0), matricesEnd_, opt.weight_decay},
                                  std::tuple{matricesEnd_, total - matricesEnd_, 0.0f}}) {
    if (n == 0)
      continue;
    const LaunchOptions grid = launch({uint32_t(cdiv(n, 1024))});
    Arg params = paramArena_.view(offset, n), grads = gradArena_.view(offset, n);
    Arg m = adamM_.view(offset, n), v = adamV_.view(offset, n);
    if (weightCopy_.size()) // mixed precision: the bf16 copy follows the f32 master
      kernels_->adamwMixed(grid, params, weightCopy_.view(offset, n), grads, m, v, opt.lr, opt.beta1, opt.beta2,
                           opt.eps, decay, bias1, bias2, gradScale_, n, roundingSeed(offset), 1024,
                           opt.stochastic_rounding);
    else
      kernels_->adamw(grid, params, grads, m, v, opt.lr, opt.beta1, opt.beta2, opt.eps, decay, bias1, bias2,
                      gradScale_, n, 1024);
  }
  gradScale_ = 1.0f; // clipping applies to one step
  transposedStale_ = true;
}

float GptModel::clip_grad_norm(float max_norm) {
  if (!(max_norm > 0)) // a negative one would flip the update's sign
    throw Error(fmt::format("GPT clip_grad_norm: max_norm is a positive number, not {}", max_norm));
  zeroPendingGradients();
  const int64_t n = gradArena_.size();
  constexpr int kBlock = 4096;
  const int64_t blocks = cdiv(n, kBlock);
  if (normScratch_.size() != blocks + 1) // once: clipping runs every step
    normScratch_ = Arena(blocks + 1, backend_);
  Arena &scratch = normScratch_;
  kernels_->sumOfSquares(launch({uint32_t(blocks)}), gradArena_.view(0, n), scratch.view(0, blocks), n, kBlock);
  kernels_->sumAll(launch({1}), scratch.view(0, blocks), scratch.view(blocks, 1), int32_t(blocks), 1024);
  memory(); // the peak
  const float norm = std::sqrt(scratch.download(blocks, 1)[0]);
  gradScale_ = norm > max_norm ? max_norm / (norm + 1e-6f) : 1.0f;
  return norm;
}

float GptModel::learning_rate(int step, int warmup, int total, float max_lr, float min_lr) {
  if (step < 0 || warmup < 0 || total < 0)
    throw Error(fmt::format("GPT learning_rate: step {}, {} warm-up steps and {} in all are each 0 or more", step,
                            warmup, total));
  if (step < warmup)
    return max_lr * float(step + 1) / float(warmup);
  if (step >= total)
    return min_lr;
  const float progress = float(step - warmup) / float(std::max(1, total - warmup));
  return min_lr + 0.5f * (max_lr - min_lr) * (1.0f + std::cos(float(M_PI) * progress));
}

} // namespace tegula::gpt
