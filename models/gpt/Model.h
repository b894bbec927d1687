//===- Model.h - GPT-2: configuration, parameters, forward pass -*- C++ -*-===//
//
// The model's parameters live in one arena (f32) under Hugging Face's names
// (h.{i}.attn.c_attn.weight, ...), the matrices first, then the vectors
// (layernorm parameters, biases: AdamW decays the first range only); Conv1D
// weights are [in, out], which is also what the kernels take, so a checkpoint
// loads without transposes (f32 at tf32 also keeps the blocks' matrices and
// wte transposed, and transposes the weight gradients' activations, so its
// GEMMs read both operands K-major, on wgmma). The arena is host memory for
// the interpreter and the simulator, device memory for the GPU: the same code
// launches the same kernels (models/gpt/Kernels.h, Linear.h, Attention.h) on
// either.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tegula/device.h"
#include "tegula/kernel.h"
#include "tegula/tl.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tegula::gpt {

struct GptConfig {
  int n_layer = 12, n_head = 12, n_embd = 768;
  int vocab = 50257;
  int vocab_padded = 50304; // the LM head's columns, a multiple of 128 for speed
  int n_ctx = 1024;

  static GptConfig gpt2_124m() { return {}; }
  /// Throws tegula::Error when the sizes do not fit together (n_embd % n_head,
  /// vocab_padded >= vocab, power-of-two head size, ...).
  void validate() const;
};

/// One parameter tensor: its Hugging Face name, shape and place in the arena.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t offset = 0; // elements
  int64_t numel() const;
};

/// The parameters of `config`, in Hugging Face's order, with their offsets
/// in the arenas: the matrices first, then the vectors (so AdamW's weight
/// decay, matrices only, is two launches over two ranges).
std::vector<ParamSpec> parameterLayout(const GptConfig &config);
/// A layer's name without its block ("h.3.mlp.c_fc" -> "mlp.c_fc"): the
/// ProfileLabel its GEMMs run under, the same in every block, so a
/// kernel_profile() tells the linear layers' shapes apart.
std::string profileRole(const std::string &layer);

class SafetensorsFile;

/// Storage for f32 or bf16 elements (or i32 counters, which only kernels
/// touch) in host or device memory, zeroed, viewed as kernel arguments;
/// upload and download convert from and to f32 (to bf16: round to nearest
/// even).
class Arena {
public:
  Arena() = default;
  Arena(int64_t elements, Backend backend, DType dtype = DType::f32);
  int64_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  int64_t bytes() const { return size_ * int64_t(dtype_size(dtype_)); }
  bool on_device() const { return device_ != nullptr; }
  /// `count` elements from `offset` as a kernel argument.
  Arg view(int64_t offset, int64_t count) const;
  void upload(int64_t offset, const std::vector<float> &values);
  std::vector<float> download(int64_t offset, int64_t count) const;

private:
  int64_t size_ = 0;
  DType dtype_ = DType::f32;
  std::shared_ptr<std::vector<uint32_t>> host_; // 4-byte words: any element type, aligned
  std::shared_ptr<DeviceBuffer> device_;
};

/// GPT-2 for next-token prediction: forward to logits and the mean loss.
class GptModel {
public:
  /// `matmul`: the precision of the f32 dots in the linear layers and
  /// attention (tl::precision::tf32 puts them on tensor cores, as torch's
  /// allow_tf32 does; ieee, the default, is exact).
  /// `storage`: the type of the weights the kernels read and of the
  /// activations and their gradients - f32, or bf16 for mixed precision:
  /// every kernel still computes in f32 (dots accumulate in f32 on tensor
  /// cores), the f32 master weights, their gradients and AdamW's state stay
  /// f32, and each step rounds the master weights into the bf16 copy.
  GptModel(GptConfig config, Backend backend, tl::precision matmul = tl::precision::ieee,
           DType storage = DType::f32);
  ~GptModel();

  /// Tile sizes and warps the model launches with: large on the GPU, small
  /// where the CPU runs every thread (interpreter, simulator). Tests run the
  /// GPU's in the simulator.
  struct Tiles {
    int bm, bn, bk, linear_warps; // the linear layers (and, without kmajor_*, the K-major GEMMs)
    // flash attention's backward: the block of rows a program owns (keys in
    // dkdv, queries in dq) and the block its loop steps through
    int attention_bwd_block, attention_bwd_step, attention_warps;
    int attention_fwd_block, attention_fwd_warps; // its forward (and decoding): the block of queries a program owns
    int vocab_block;                              // cross-entropy's chunks of the vocabulary
    int linear_stages = 3;                        // the linear layers' pipeline depth
    // attention's forward compares and selects only on the key blocks past
    // the diagonal or T (false: on every block - sm_80's 64 x 64 forward
    // then takes 200 registers instead of 248, two CTAs an SM)
    bool attention_fwd_diagonal_mask_only = true;
    // the block of keys the forward's loop (and decoding's) steps through
    // (0: attention_fwd_block)
    int attention_fwd_step = 0;
    // Column sums (bias and LayerNorm parameter gradients) in two passes.
    // The model's first passes ride on the kernels that write their inputs
    // (attention's backward, the fused GELU backward, LayerNorm's); the
    // second pass reads [column_sum_rows, column_sum_block] tiles of their
    // partials (8192 rows' 128 partials at once). column_partial_sums, a
    // first pass of its own that gpt2-layers times: each program sums
    // column_rows rows of column_block columns, column_tile_rows at a time.
    // Small programs, many of them: ptxas keeps only 1-3 of an accumulating
    // loop's loads in flight (its default register target), so occupancy
    // has to hide the latency (GPT-2's 768 columns: 768 programs of 64 rows).
    int column_rows = 64, column_tile_rows = 32, column_block = 128;
    int column_sum_rows = 128, column_sum_block = 16;
    // The GEMMs whose operands both run along K (f32 at tf32: the linear
    // layers' forward through the transposed weights, dx = dy w^T, the LM
    // head and its input gradient; wgmma through TMA rings on sm_90a, where
    // the rest stays on mma.sync): their own tile, warps and stages (0: the
    // linear layers').
    int kmajor_bm = 0, kmajor_bn = 0, kmajor_bk = 0, kmajor_warps = 0, kmajor_stages = 0;
    // The weight gradient through x^T and dy^T (f32 at tf32) at the K-major
    // tile but this N block (0: kmajor_bn): it starts from the gradient so
    // far, which at 128 x 256 spills beside the accumulator.
    int kmajor_dw_bn = 0;
    // f32 at tf32: the weight gradients through those transposes (true), or
    // x^T dy read as stored (false: on sm_90a wgmma through K-major rings
    // that 4-byte cp.async copies fill, at the linear layers' tile; no
    // transposes, stream-K where dw_stream_k allows; on sm_80 mma.sync).
    bool dw_transposed = true;
    // LayerNorm forward and backward dx, one program a row: its warps. One
    // warp holds GPT-2's 768-wide row (24 elements a lane) and reduces it
    // with shuffles alone; more warps add shared memory and barriers to both
    // reductions (the H100 of 2026-11-26: 4 warps beat 8 in every row kernel,
    // bf16 forward 0.55 of copy against 0.37).
    int row_warps = 4;
    // LayerNorm's forward (and the residual add before it): rows a program,
    // row_warps warps each. A CTA of one warp a row holds an SM to 32 warps
    // (its 32-CTA limit, half the 64 it can run), so several rows a program
    // keep more loads in flight; 1 until a GPU has timed it (gpt2-layers'
    // `_r4` / `_r8` rows).
    int ln_fwd_rows = 1;
    // ... and its rows in chunks of ln_fwd_block columns (0: one block, the
    // power of two past C). GPT-2's 768 as 3 x 256 carry no padding, where
    // 1024 carry a quarter: 24 elements a lane instead of 32 at a warp a row
    // (registers: the forward held an H100 SM to 24 warps at 83).
    int ln_fwd_block = 0;
    // LayerNorm's backward in one pass (kernels::layernorm_bwd: dx, the
    // residual add, and the partial column sums of dw, db and of dx for the
    // projection below): each program takes ln_bwd_rows rows, ln_bwd_tile_rows
    // at a time, at ln_bwd_warps warps. 16 rows of one at 4 warps: 8 elements
    // a lane of GPT-2's 1024-wide block (a warp a row held 32 of each of the
    // three accumulators and spilled), 89 registers, 512 programs for 8192
    // rows.
    int ln_bwd_rows = 16, ln_bwd_tile_rows = 1, ln_bwd_warps = 4;
    // ... and its rows in chunks of ln_bwd_block columns (0: one block, the
    // power of two past C): 768 as 3 x 256 carry no padding in its three
    // accumulators and the inputs in flight.
    int ln_bwd_block = 0;
    // The GEMMs with [B T, N] outputs (the linear layers' forward and input
    // gradients, the LM head and its input gradient; not the weight
    // gradients, whose few tiles each run all of B T): group_m > 0 launches
    // persistent programs, one per SM, that walk the output tiles in groups
    // of group_m row blocks (kernels::detail::forEachOutputTile) - warp
    // specialised, the next tile's loads overlap this one's epilogue; 0: one
    // program a tile.
    int group_m = 0;
    // The LM head in training (logits = x wte^T, 8192 x 50304 x 768 for
    // GPT-2 at B T = 8192): its own N block, warps and stages (0: the
    // K-major GEMMs').
    int head_bn = 0, head_warps = 0, head_stages = 0;
    // The blocks' weight gradients' N block, stream-K or one program a tile
    // (0: bn, which one program a tile halves where narrower tiles finish
    // sooner - dwBlockN). 256 (the tuner's alternative in bf16 on sm_90a)
    // runs m64n256 wgmmas, as the GEMM benchmark's best large tiles; its
    // stream-K tiles park and add 128 KB partial blocks; warp specialised,
    // a micro-batch that accumulates into the gradient (not the first after
    // zero_grad) spills one register (24 B, once a tile, outside the loop;
    // 0 where it stores). Not f32 at tf32's gradients through transposes
    // (kmajor_dw_bn) nor wte's (head_dw_bn).
    int dw_bn = 0;
    // The tied LM head's weight gradient (wte's, [vocab_padded, C] summed
    // over B T; one program a tile): its N block (0: dwBlockN's choice at
    // bn). Each N block reads dlogits' column stripe again (824 MB in all
    // for GPT-2 at B T = 8192) - from L2 since the programs of a stripe run
    // side by side (kernels::detail::gradientBlock), 6 times at 128 wide, 3
    // at 256 on m64n256 wgmmas. bf16 on sm_90a takes 256 (untimed: the GEMM
    // benchmark's 128 x 256 beat its 128 x 128 at every shape from 2048^3
    // up, GPT-2's logits 692 against 614 TFLOP/s, H100 2026-11-27; 168
    // registers, 0 spills at 8 warps); tegula-gpt tune tries 128.
    int head_dw_bn = 0;
    // The weight gradients' warps (0: linear_warps): each starts from the f32
    // gradient so far, which beside bf16's 4-warp 128 x 128 accumulator spills.
    int dw_warps = 0;
    // The weight gradients as stream-K GEMMs (set_stream_k_weight_gradients)
    // where the model allows them. Off for f32 at tf32 on sm_90a: its weight
    // gradients read x^T and dy^T, and the fallback (B T not a multiple of 4)
    // at 64 x 128 spills 8 bytes as stream-K.
    bool dw_stream_k = true;
    // The MLP's c_proj dx with GELU's backward fused (its epilogue holds pre's
    // block beside the accumulator): its N block and warps (0: the K-major
    // GEMMs'); on sm_90a 128 wide at 8 warps, where the K-major tile spills.
    // Persistent with group_m like the other [B T, N] GEMMs: pre's block
    // comes by TMA straight into the accumulator's layout (ldmatrix from a
    // swizzled tile), so bf16 at 128 x 128, 8 warps, 4 stages takes 168
    // registers, 0 spills, 194 KiB (it spilled 472 bytes when that block
    // was converted into the layout through 64 KiB of shared memory; one
    // program a tile, the H100 of 2026-11-27 ran it at 240 TFLOP/s).
    int gelu_dx_bn = 0, gelu_dx_warps = 0;
    // The MLP's two GELU GEMMs - c_fc's forward (GELU in its epilogue) and
    // c_proj's dx (GELU's backward in its epilogue) - as ping-pong kernels
    // where the model's GEMMs are warp specialised (sm_90a, TMA rings): two
    // 4-warp programs a CTA, each on its own consumer warpgroup, taking
    // turns on the tensor cores, so one program's epilogue runs while the
    // other's K loop computes (CUTLASS's ping-pong schedule); persistent
    // grids launch two programs an SM. In a warp-specialised step the
    // tensor cores otherwise wait through those epilogues - the GELU and
    // its gate on 64-128 elements a thread, and c_fc's two stores: on the
    // H100 of 2026-11-27 c_fc's forward took 1.49 ms a step against 0.86
    // for c_proj's same-FLOP forward, c_proj's fused dx 1.77 against 0.80.
    // The ping-pong tiles (geluForward(), geluDx()): the forward at the
    // linear layers' tile, 4 warps, gelu_pp_fwd_stages (3 stages of 128 x
    // 128 x 64 bf16: 225 KiB with both programs' C blocks; 4 do not fit);
    // dx at N block gelu_pp_dx_bn, 4 warps, gelu_pp_dx_stages (128 wide,
    // the 4-warp accumulator beside pre's block spills 184 B). Off by
    // default until a GPU has timed it.
    bool gelu_ping_pong = false;
    int gelu_pp_fwd_stages = 3, gelu_pp_dx_bn = 64, gelu_pp_dx_stages = 4;
    // Attention's forward with a producer warpgroup where the model's TMA
    // loops have one (set_warp_specialize); false: the program's own warps
    // issue its TMA copies (the attention benchmark's flash attention ran
    // GPT-2's shape fastest that way, at 64 x 64 on 4 warps).
    bool attention_fwd_ws = true;
    // Attention's backward (dkdv and dq) with a producer warpgroup where the
    // model's TMA loops have one. Off: its TMA rings, each read by two
    // dots, ran GPT-2's backward faster filled by the program's own warps -
    // 0.220 ms against 0.233 (H100, 2026-11-27, gpt2-attention, twenty-ninth
    // session; 0.194 against 0.205 that morning; 0.208 against 0.202 the day
    // before). tegula-gpt tune tries it.
    bool attention_bwd_ws = false;
    /// Sets the field `name` (as spelled here: "attention_fwd_block",
    /// "group_m", ...; a bool takes 0 or 1); throws tegula::Error naming the
    /// fields for an unknown one, or for a value out of its range.
    void set(std::string_view name, int value);
    /// These tiles with "name=value,name=value" applied (tegula-gpt train
    /// --tiles, gpt2-train --tiles); an empty list changes nothing. Throws
    /// tegula::Error on a malformed entry, as set() does (tile extents and
    /// warp counts are powers of two), or for a kmajor_bm without the other
    /// four kmajor_* fields.
    Tiles with(std::string_view overrides) const;
    /// "name=value" for every field, comma-separated (what a run used).
    std::string str() const;
    /// "name=value" for the fields that differ from `base`, comma-separated:
    /// base.with(diff(base)) gives these tiles ("" where they are base).
    std::string diff(const Tiles &base) const;
    /// The K-major GEMMs' tile: (bm, bn, bk, warps, stages).
    std::array<int, 5> kmajor() const {
      return kmajor_bm ? std::array<int, 5>{kmajor_bm, kmajor_bn, kmajor_bk, kmajor_warps, kmajor_stages}
                       : std::array<int, 5>{bm, bn, bk, linear_warps, linear_stages};
    }
    /// Ping-pong programs are one warpgroup each (the compiler applies it
    /// to 4-warp programs only).
    static constexpr int kPingPongWarps = 4;
    /// c_fc's forward with GELU, through the linear layers' kernel (not the
    /// transposed-weight one f32 at tf32 takes): (bm, bn, bk, warps, stages).
    std::array<int, 5> geluForward() const {
      return gelu_ping_pong ? std::array<int, 5>{bm, bn, bk, kPingPongWarps, gelu_pp_fwd_stages}
                            : std::array<int, 5>{bm, bn, bk, linear_warps, linear_stages};
    }
    /// The fused GELU backward's tile: (bm, bn, bk, warps, stages).
    std::array<int, 5> geluDx() const {
      std::array<int, 5> t = kmajor();
      if (gelu_ping_pong)
        return {t[0], gelu_pp_dx_bn, t[2], kPingPongWarps, gelu_pp_dx_stages};
      t[1] = gelu_dx_bn ? gelu_dx_bn : t[1];
      t[3] = gelu_dx_warps ? gelu_dx_warps : t[3];
      return t;
    }
    /// The LM head's tile in training: (bm, bn, bk, warps, stages).
    std::array<int, 5> head() const {
      std::array<int, 5> t = kmajor();
      t[1] = head_bn ? head_bn : t[1];
      t[3] = head_warps ? head_warps : t[3];
      t[4] = head_stages ? head_stages : t[4];
      return t;
    }
  };
  /// The GPU's, per storage type and chip: bf16 operands take half the
  /// registers and shared memory of f32 ones, so their tiles are larger -
  /// attention's forward in bf16 at 128-row blocks on sm_90a (two
  /// warpgroups of wgmma fed by TMA rings; on sm_80 128 x 128 blocks at 8
  /// warps take all 255 registers and spill, so 64 x 64 at 4 warps there),
  /// its backward on sm_90a at 128-row blocks stepping 64 rows (wgmma; on
  /// sm_80 those spill, so 64 by 64 there) - and every one compiles without
  /// spills for its chip
  /// (test/gpt/GpuConfigsTest). On sm_90a the bf16 linear layers step K by
  /// 64 through 4 TMA stages: each stage is 4 wgmma k-steps a warpgroup and
  /// two stages are in flight ahead of the one being read (at K = 32 and 3
  /// stages a single 2-instruction stage ahead left the load latency exposed).
  /// f32 at tf32 (`matmul`) on sm_90a: the GEMMs whose operands run along
  /// M or N (wte's gradient; the weight gradients where B T is not a
  /// multiple of 4 or dw_transposed is off) at 64 x 128 x 16, 4 warps, 4
  /// stages - on wgmma through K-major rings filled 4 bytes a copy since
  /// 2026-11-27, on mma.sync before (96 TFLOP/s at 4096^3 on the H100 of
  /// 2026-11-26; 128 x 128 spilled in the weight gradient); the K-major ones
  /// on wgmma through TMA rings at 128 x 256 x 32, 8 warps, 4 stages (the
  /// tf32 TN GEMM's best tile in that run; the weight gradients at 128 x
  /// 128). f32 at ieee or tf32x3 keeps sm_80's. On sm_90a the GEMMs with
  /// [B T, N] outputs run persistent (group_m 8, when warp specialised): bf16
  /// at 128 x 128 x 64, 4 warps (+ the producer's 4), 4 stages, the LM head
  /// at 128 x 256 x 64, 8 warps, 4 stages (3 until its C block was staged two
  /// column blocks at a time, 2026-11-27) - each the GEMM benchmark's best at
  /// those shapes on the H100 of 2026-11-26 (0.93-0.99x cuBLAS, where one
  /// program a tile at 128 x 128 x 64 reached 0.58-0.80x); the weight gradients one program a
  /// tile at 8 warps. f32 at tf32 stays one program a tile: its 128 x 256
  /// f32 C block beside 4 stages outgrows shared memory in a persistent loop
  /// (the ring cannot be reused while the producer fills the next tile).
  static Tiles gpu_tiles(DType storage = DType::f32, const std::string &chip = "sm_80",
                         tl::precision matmul = tl::precision::tf32) {
    Tiles t;
    if (storage != DType::bf16 && (chip != "sm_90a" || matmul != tl::precision::tf32)) {
      t = Tiles{64, 64, 32, 4, 32, 32, 8, 32, 8, 1024};
    } else if (storage != DType::bf16) {
      // Attention: the forward at 64 queries x 32 keys on 4 warps (0.289 ms
      // for GPT-2 124M's at B 8 on the H100 of 2026-11-27, where 32 x 32 on
      // 8 warps took 0.545), the backward owning 64 rows (1.239 ms, 1.322 at
      // 32): gpt2-attention's candidates, 0 spills on sm_90a.
      t = Tiles{64, 128, 16, 4, 64, 32, 8, 64, 4, 1024, 4};
      t.attention_fwd_step = 32;
      t.kmajor_bm = 128, t.kmajor_bn = 256, t.kmajor_bk = 32, t.kmajor_warps = 8, t.kmajor_stages = 4;
      t.kmajor_dw_bn = 128; // 166 registers, 0 spills
      t.dw_stream_k = false;
      t.gelu_dx_bn = 128, t.gelu_dx_warps = 8;
    } else {
      t = chip == "sm_90a" ? Tiles{128, 128, 64, 4, 128, 64, 8, 128, 8, 1024, 4}
                           : Tiles{128, 128, 32, 8, 64, 64, 8, 64, 4, 1024, 3, false};
      if (chip == "sm_90a") { // the GEMM benchmark's best at GPT-2's shapes (H100, 2026-11-26)
        t.group_m = 8;
        t.head_bn = 256, t.head_warps = 8, t.head_stages = 4;
        t.dw_warps = 8;
        t.head_dw_bn = 256;
        t.gelu_dx_bn = 128, t.gelu_dx_warps = 8;
      }
    }
    t.row_warps = 1;
    return t;
  }
  static Tiles cpu_tiles() {
    Tiles t{32, 32, 16, 4, 16, 16, 4, 16, 4, 256};
    t.ln_bwd_rows = 5, t.ln_bwd_tile_rows = 2; // ragged: 2 + 2 + 1 rows a program
    return t;
  }
  void set_tiles(const Tiles &tiles) { tiles_ = tiles; }
  /// sm_90a: the TMA-fed loops (bf16's GEMMs and attention, f32 at tf32's
  /// K-major GEMMs) get a producer warpgroup (LaunchOptions::warp_specialize),
  /// and the GEMMs with [B T, N] outputs run persistent (Tiles::group_m). On
  /// by default: on the H100 of 2026-11-26 it made bf16 training 1.09x
  /// faster, and the persistent warp-specialised GEMM beat one program a
  /// tile by 1.1-1.5x at GPT-2's shapes (without a producer, persistence
  /// was 0.79-1.24x of it: mixed). Off: every loop as written, one program a
  /// tile.
  void set_warp_specialize(bool on) { warpSpecialize_ = on; }
  bool warp_specialize() const { return warpSpecialize_; }
  /// GPU: the blocks' weight gradients run on a stream of their own, each
  /// after the work that made its inputs, so the SMs a gradient's last wave
  /// leaves idle (GPT-2's are 36-144 tiles on 132 SMs) run the backward's
  /// next kernels; backward() ends with the default stream waiting for that
  /// stream. On by default (the same results: each kernel's work is
  /// unchanged); off, every launch is on the default stream in order.
  void set_overlap_weight_gradients(bool on) { overlapWeightGradients_ = on; }
  /// The blocks' weight gradients as stream-K GEMMs
  /// (kernels::matmul_bwd_dw_stream_k): one program an SM (3 on the CPU
  /// backends) takes an equal run of the gradient's tiles x row steps, where
  /// one program a tile leaves SMs idle (GPT-2's 36-144 tiles of 128 x 128,
  /// each 8192 rows long, on 132 SMs). Deterministic: a tile split between
  /// programs is added up in program order. On by default; f32 at tf32 reads
  /// x^T and dy^T instead and keeps one program a tile. Off: one program a
  /// tile everywhere.
  void set_stream_k_weight_gradients(bool on) { streamKWeightGradients_ = on; }
  bool stream_k_weight_gradients() const { return streamKWeightGradients_; }
  const Tiles &tiles() const { return tiles_; }

  const GptConfig &config() const { return config_; }
  /// f32, or bf16 (mixed precision, see the constructor).
  DType storage() const { return storage_; }
  Backend backend() const { return backend_; }
  const std::vector<ParamSpec> &parameters() const { return params_; }
  const ParamSpec &parameter(const std::string &name) const;
  int64_t num_parameters() const { return paramArena_.size(); }

  /// Sets every parameter from a checkpoint with Hugging Face's names (a
  /// "transformer." prefix is accepted; the causal-mask buffers are
  /// skipped, and lm_head.weight must equal wte's, tied); throws naming a
  /// missing or misshapen parameter, a tensor the model has none for (more
  /// layers), or an untied head.
  void load(const SafetensorsFile &file);
  /// GPT-2's initialisation (normal(0, 0.02), residual projections scaled by
  /// 1/sqrt(2 n_layer), layernorm 1/0), from `seed`.
  void init_random(uint64_t seed);
  /// Writes every parameter under Hugging Face's names (wte without its
  /// padding rows), loadable by load() and by transformers; the metadata
  /// gains "n_head" (what checkpoint_config cannot read from the weights).
  void save(const std::string &path, const std::map<std::string, std::string> &metadata = {}) const;
  /// AdamW's state beside a checkpoint, so that training continues where it
  /// stopped (tegula-gpt train --resume): each parameter's moments
  /// ("adam.m.<name>", "adam.v.<name>", f32, wte's with its padding rows),
  /// with bf16 storage the weights' bf16 copy ("bf16_copy.<name>": stochastic
  /// rounding made it, the master rounded to nearest would not give it back),
  /// and in the metadata the steps taken (bias correction), init_random's
  /// seed (stochastic rounding's) and the model's sizes; `metadata` is kept
  /// beside them (the trainer's step and batch order).
  void save_optimizer(const std::string &path, const std::map<std::string, std::string> &metadata = {}) const;
  /// The bytes save() and save_optimizer() write (to stage both files of a
  /// checkpoint before either replaces its old one: StagedFile).
  std::vector<std::byte> checkpoint(const std::map<std::string, std::string> &metadata = {}) const;
  std::vector<std::byte> optimizer_state(const std::map<std::string, std::string> &metadata = {}) const;
  /// Restores what save_optimizer() wrote (call it after loading the
  /// weights: it replaces their bf16 copy); throws naming a missing or
  /// misshapen moment, a tensor the model has no parameter for, or a file of
  /// another configuration - and changes nothing then.
  void load_optimizer(const SafetensorsFile &file);
  /// AdamW steps taken (loaded with load_optimizer()).
  int optimizer_steps() const { return steps_; }
  std::vector<float> read_parameter(const std::string &name) const;
  void write_parameter(const std::string &name, const std::vector<float> &values);

  /// Runs the model on tokens [B, T] (B * T values); with targets (same
  /// shape, or empty) also the cross-entropy. Returns the mean loss (NaN
  /// without targets). The logits stay in the activations: logits().
  float forward(const std::vector<int32_t> &tokens, const std::vector<int32_t> &targets, int B, int T);
  /// Adds the gradients of the last forward's mean loss (it needs targets)
  /// to the gradient arena: call zero_grad() first, or not, to accumulate
  /// micro-batches. Deterministic except the token embedding's scatter.
  /// Once per forward: it writes the logits' gradient over the logits
  /// (GPT-2 124M at B T 8192: 0.8 GB in bf16 not allocated twice).
  void backward();
  /// The gradients become zero. Lazily: the next backward() writes them
  /// instead of adding to them (no pass over the arena - 475 MB at 124M); a
  /// read, clip_grad_norm() or step() before it zeroes the arena first.
  void zero_grad();
  std::vector<float> read_gradient(const std::string &name) const;

  /// AdamW's settings; weight decay applies to matrices (2-D) only.
  struct AdamW {
    float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
    // bf16 storage: round the master weights into their bf16 copy
    // stochastically (unbiased: updates below half a bf16 step still move
    // the copy on average; llm.c's choice) instead of to nearest even.
    // Deterministic: the random bits hash each element's index with the
    // step number and init_random's seed. No effect with f32 storage.
    bool stochastic_rounding = false;
  };
  /// One AdamW step over every parameter with the accumulated gradients
  /// (bias correction from the number of steps taken so far), scaled by the
  /// factor clip_grad_norm() chose (1 without it).
  void step(const AdamW &opt);
  /// The gradients' global L2 norm; when it exceeds `max_norm`, the next
  /// step() scales them by max_norm / norm (GPT-2's clipping at 1.0).
  float clip_grad_norm(float max_norm);
  /// GPT-2's schedule: linear warm-up over `warmup` steps to `max_lr`, then a
  /// cosine decay to `min_lr` at `total` steps.
  static float learning_rate(int step, int warmup, int total, float max_lr, float min_lr);
  /// Training FLOPs per token at sequence length T (PaLM's estimate, what
  /// MFU figures use): 6 N + 12 n_layer n_embd T.
  double training_flops_per_token(int T) const {
    return 6.0 * double(num_parameters()) + 12.0 * config_.n_layer * config_.n_embd * T;
  }
  /// Bytes of each part, as allocated: parameters (with bf16 storage the f32
  /// master weights and their bf16 copy), gradients (from the first
  /// backward(), clip_grad_norm() or step() on), AdamW state,
  /// activations (forward + their gradients, and the batch's tokens and
  /// targets) of the last forward's B x T.
  struct Memory {
    int64_t parameters = 0, gradients = 0, optimizer = 0, activations = 0;
    /// One transformer block's share of `activations` (its tensors, its
    /// statistics and theirs); the rest is the embeddings, ln_f, logits
    /// (their gradient written over them), the gradients of the embeddings
    /// and ln_f and the blocks' activation gradients (two blocks' worth,
    /// shared: block l's and l + 2's take turns).
    int64_t activations_per_layer = 0;
    /// The most the model has held at once so far (activations are resized
    /// when B x T changes).
    int64_t peak = 0;
    /// Scratch: clip_grad_norm's (one f32 per 4096 gradients), the
    /// backward's column sums' partials (f32: [B cdiv(T, attention block),
    /// 3 n_embd] for attention's backward, [B T / its block rows, 4 n_embd]
    /// for the fused GELU backward, three [B T / ln_bwd_rows, n_embd] for
    /// LayerNorm's backward) and, f32 at tf32, the transposed x and dy of the weight
    /// gradients (B T x 5 n_embd f32: x^T then dy^T), and the stream-K
    /// weight gradients' partial blocks and arrival counters.
    int64_t scratch = 0;
    int64_t total() const { return parameters + gradients + optimizer + activations + scratch; }
  };
  Memory memory() const;
  /// Allocates AdamW's state now (step() does on its first call): so that a
  /// training run can report it before the first batch.
  void init_optimizer();

  /// How generate() picks each token: temperature 0 is greedy (argmax);
  /// otherwise softmax(logits / temperature) restricted to the top_k most
  /// likely (0: all) and to the smallest set reaching probability top_p.
  struct Sampling {
    float temperature = 0.0f;
    int top_k = 0;
    float top_p = 1.0f;
    uint64_t seed = 1;
    /// Generation ends after any of these tokens (Hugging Face's
    /// eos_token_id: GPT-2's <|endoftext|>, 50256); none: after `count`.
    std::vector<int32_t> stop_tokens;
    /// Called with each new token as it is chosen (to print as they come).
    std::function<void(int32_t)> on_token;
  };
  /// Appends up to `count` tokens to `prompt` (one sequence) and returns
  /// them (the stop token included where it ended them). A KV cache holds
  /// every layer's keys and values: each step runs the layers on one new
  /// token, its attention over the cached positions.
  std::vector<int32_t> generate(const std::vector<int32_t> &prompt, int count, const Sampling &sampling);

  /// Logits of the last forward, [B * T, vocab] (the padding dropped);
  /// before backward(), which overwrites them (then this throws).
  std::vector<float> logits() const;
  /// The residual stream after block `layer` (n_layer - 1: before ln_f),
  /// [B * T, n_embd], of the last forward - for layer-by-layer parity.
  std::vector<float> block_output(int layer) const;

private:
  struct Kernels;
  struct Activations;
  struct Decoder;
  /// One decoding step at position `pos`: the new token's logits [vocab].
  std::vector<float> decodeStep(Decoder &d, int32_t token, int pos);
  LaunchOptions launch(Grid grid, int warps = 4, int stages = 3) const;
  /// Attention's forward (training and decoding): its warps, and its own
  /// warp specialisation (Tiles::attention_fwd_ws).
  LaunchOptions attentionForwardLaunch(Grid grid) const;
  /// Attention's backward (dkdv, dq): its warps, and its own warp
  /// specialisation (Tiles::attention_bwd_ws).
  LaunchOptions attentionBackwardLaunch(Grid grid) const;
  /// A linear layer's launch: its tiles' warps and pipeline depth.
  LaunchOptions launchLinear(Grid grid) const { return launch(grid, tiles_.linear_warps, tiles_.linear_stages); }
  /// A weight gradient's launch (dw (+)= x^T dy at the linear layers' tile).
  LaunchOptions launchDw(Grid grid) const {
    return launch(grid, tiles_.dw_warps ? tiles_.dw_warps : tiles_.linear_warps, tiles_.linear_stages);
  }
  /// A linear layer's forward, y = x w + b (GELU'd with `gelu`, the sum
  /// kept in `pre`), on `rows` rows: through the transposed weight where the
  /// model keeps one.
  void linearForward(Arg x, const std::string &layer, Arg y, Arg pre, int rows, int N, int K, bool gelu);
  /// The row kernels' warps for rows of `block` elements: Tiles::row_warps,
  /// or more where a warp would hold over 32 elements a lane (n_embd > 1024).
  int rowWarps(int block) const { return std::max(tiles_.row_warps, block / 1024); }
  /// A LayerNorm forward's launch over `rows` rows of `block` elements:
  /// Tiles::ln_fwd_rows a program, rowWarps(block) warps each.
  LaunchOptions launchLayernormFwd(int rows, int block) const {
    return launch({uint32_t(cdiv(rows, tiles_.ln_fwd_rows))}, tiles_.ln_fwd_rows * rowWarps(block));
  }
  LaunchOptions launchKMajor(Grid grid) const {
    return launch(grid, tiles_.kmajor()[3], tiles_.kmajor()[4]);
  }
  /// The grid of a GEMM with a [rows, cols] output in [bm, bn] tiles: every
  /// tile, or with Tiles::group_m the persistent programs (at most one a
  /// tile; `programsPerSm` an SM - 2 for ping-pong kernels).
  Grid gemmGrid(int rows, int cols, int bm, int bn, int programsPerSm = 1) const;
  /// A GELU GEMM's launch (c_fc's forward, c_proj's fused dx) over a [rows,
  /// cols] output at `tile` (Tiles::geluForward / geluDx): ping-pong with
  /// Tiles::gelu_ping_pong where the GEMMs are warp specialised.
  LaunchOptions launchGelu(int rows, int cols, const std::array<int, 5> &tile) const;
  /// A weight gradient's N block for its [K, N] output at (bm, bn): bn, or
  /// bn / 2 where waves of the narrower tiles finish first (see Model.cpp).
  int dwBlockN(int K, int N, int bm, int bn) const;
  /// Parameter `name` as the kernels read it (the bf16 copy with bf16 storage).
  Arg weights(const std::string &name) const;

  GptConfig config_;
  Backend backend_;
  DType storage_;
  std::vector<ParamSpec> params_;
  int64_t matricesEnd_ = 0; // the arenas' matrices are [0, matricesEnd_), the vectors after
  // gradArena_ is allocated by the first backward(), clip_grad_norm() or
  // step(): a model that only generates holds no gradients.
  Arena paramArena_, gradArena_, adamM_, adamV_;
  void allocateGradients();
  Arena weightCopy_; // bf16 storage: the master weights rounded to bf16 (empty for f32)
  // f32 at tf32: the linear layers' weights transposed ([out, in], K-major),
  // which their forward reads (wgmma takes tf32 K-major only); refreshed
  // from the master before a forward that follows a change of it.
  Arena weightT_;
  std::map<std::string, int64_t> transposedOffset_; // by weight name, in weightT_
  bool transposedStale_ = true;
  void refreshTransposedWeights();
  /// `name`'s transposed copy, refreshed if stale; none where not kept.
  std::optional<Arg> transposedWeight(const std::string &name);
  Arena normScratch_;   // clip_grad_norm's partial sums
  Arena columnScratch_; // the backward's column sums' partial sums
  Arena transposeScratch_; // f32 at tf32: x^T and dy^T for the weight gradients
  // The stream-K weight gradients' workspace: partial blocks (f32, two a
  // program) and one arrival counter a tile (i32, zero between launches).
  Arena streamKPartials_, streamKArrivals_;
  int steps_ = 0;
  uint64_t seed_ = 0; // init_random's: stochastic rounding's random bits
  // Which parameters something wrote (by index in params_): a model whose
  // arena nobody filled would run on zeros - a plausible loss of ln(vocab).
  std::vector<bool> parameterWritten_;
  /// Throws, for `what` ("GPT forward"), naming the parameters never written.
  void requireParameters(const char *what) const;
  float gradScale_ = 1.0f;
  // zero_grad() was called and nothing has written the gradients since:
  // they read as zero (see zero_grad()); zeroPendingGradients() writes them.
  mutable bool gradientsPendingZero_ = false;
  void zeroPendingGradients() const;
  mutable int64_t peak_ = 0; // the largest memory().total() seen
  Tiles tiles_;
  // Persistent GEMMs' programs: the GPU's SM count; 3 on the CPU backends
  // (each program walks several tiles there too).
  int persistentPrograms_ = 3;
  bool warpSpecialize_ = true;
  bool overlapWeightGradients_ = true;
  bool streamKWeightGradients_ = true;
  std::unique_ptr<Stream> weightGradientStream_; // GPU, created at the first backward
  // On that stream, after block l's weight gradients: [l % 2] (see backward()).
  std::array<std::unique_ptr<Event>, 2> blockWeightGradients_;
  /// Tiles::group_m where it applies (warp specialised), else 0.
  int groupM() const { return warpSpecialize_ ? tiles_.group_m : 0; }
  std::unique_ptr<Kernels> kernels_;
  std::unique_ptr<Activations> acts_;
};

} // namespace tegula::gpt
