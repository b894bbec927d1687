//===- Activations.h - one forward pass's tensors, and their gradients -*- C++ -*-===//
//
// Internal to models/gpt: where GptModel::forward (Model.cpp) puts each
// activation and GptModel::backward (Backward.cpp) finds it and its gradient.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "models/gpt/Model.h"
#include "tegula/error.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <vector>

namespace tegula::gpt {

/// Activations of one forward pass for B x T tokens: the tensors of the
/// model (hidden states, q/k/v, logits) in `arena`, of the storage type, and
/// the per-row statistics (layernorm's mean and rstd, attention's
/// logsumexp, the losses) in `stats`, always f32.
struct GptModel::Activations {
  int B = 0, T = 0;
  Arena arena, stats;
  // In `arena`:
  int64_t encoded = 0, lnfOut = 0, logits = 0;
  // In `stats`:
  int64_t lnfMean = 0, lnfRstd = 0, losses = 0, logitsLse = 0;
  struct Layer {
    int64_t ln1, qkv, atty, attproj, residual2, ln2, fchPre, fch, fcproj, residual3; // arena
    int64_t ln1Mean, ln1Rstd, lse, ln2Mean, ln2Rstd;                                 // stats
  };
  std::vector<Layer> layers;
  // d(loss)/d(activation) of the activations the backward carries a
  // gradient for (not fch, attproj and fcproj: their gradients live only
  // inside fused kernels), in `grads` at gradientAt[the activation's offset]
  // (the blocks' in two buffers that alternate, see forward());
  // `statGrads` mirrors `stats` (the losses' and attention's delta).
  Arena grads, statGrads;
  std::map<int64_t, int64_t> gradientAt;
  /// `count` elements of the gradient of the activation at `offset`. The
  /// logits' is written over them (the cross-entropy's backward reads each
  /// logit once, then writes its gradient): logitsHoldGradient says when.
  Arg gradient(int64_t offset, int64_t count) const {
    if (offset == logits)
      return arena.view(offset, count);
    auto it = gradientAt.find(offset);
    if (it == gradientAt.end())
      throw Error(fmt::format("GPT backward: no gradient is kept for the activation at offset {}", offset));
    return grads.view(it->second, count);
  }
  int64_t delta = 0; // attention's rowsum(do * o), [B * H * T], in `statGrads`
  // The batch, B*T tokens and targets each, allocated with the activations
  // (a training loop does not allocate per step): on the device on the
  // GPU, in host memory elsewhere.
  std::vector<int32_t> hostTokens, hostTargets;
  std::unique_ptr<DeviceBuffer> deviceTokens, deviceTargets;
  bool hasTargets = false;
  bool logitsHoldGradient = false; // backward() has overwritten them
  int64_t inputBytes() const { return 2 * int64_t(B) * T * int64_t(sizeof(int32_t)); }
  Arg tokens() const { return deviceTokens ? Arg(*deviceTokens) : Arg(hostTokens); }
  Arg targets() const { return deviceTargets ? Arg(*deviceTargets) : Arg(hostTargets); }
};

} // namespace tegula::gpt
