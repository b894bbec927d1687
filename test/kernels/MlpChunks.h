// MlpChunks.h - a fused MLP in hidden-unit chunks through tensor descriptors:
// two chained wgmma dots in a loop, like attention's (TensorDescriptorTest
// checks its results, SassTest its machine code).
#pragma once

#include "tegula/tl.h"

namespace tegula::testing {

/// A fused MLP in hidden-unit chunks: out = relu(x W1^T) W2, W1 and W2
/// [rows, D] (a hidden unit a row), `hidden` units used. Two chained dots
/// like attention's, but the second accumulates straight onto the carried
/// accumulator (nothing to do after its wait) and the loop may not run.
inline void mlp_chunks(tl::ptr<bfloat16> x, tl::ptr<bfloat16> w1, tl::ptr<bfloat16> w2, tl::ptr<float> out,
                tl::scalar<int32_t> M, tl::scalar<int32_t> rows, tl::scalar<int32_t> hidden, tl::constant<int> D,
                tl::constant<int> BM, tl::constant<int> BH) {
  auto w1_desc = tl::make_tensor_descriptor(w1, {rows, D}, {D, 1}, {BH, D});
  auto w2_desc = tl::make_tensor_descriptor(w2, {rows, D}, {D, 1}, {BH, D});
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rd = tl::arange(0, D);
  tl::tensor mask = rm.expand_dims(1) < M;
  tl::tensor xt = tl::load(x + rm.expand_dims(1) * D + rd.expand_dims(0), mask, 0.0f);
  tl::tensor acc = tl::zeros({BM, D}, tl::f32);
  for (auto h : tl::range(0, hidden, BH.value, acc)) {
    tl::tensor s = tl::dot(xt, w1_desc.load({h, 0}).trans());
    tl::tensor a = tl::where((h + tl::arange(0, BH)).expand_dims(0) < hidden, tl::maximum(s, 0.0f), 0.0f);
    acc = tl::dot(a.to(tl::bf16), w2_desc.load({h, 0}), acc);
  }
  tl::store(out + rm.expand_dims(1) * D + rd.expand_dims(0), acc, mask);
}

} // namespace tegula::testing
