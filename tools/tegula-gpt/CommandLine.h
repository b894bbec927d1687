//===- CommandLine.h - what tegula-gpt's subcommands share -----*- C++ -*-===//
//
// Options read into the model's settings (sizes, backend, precision, dtype,
// switches), the checks every subcommand makes of its files, and the numbers
// a run prints (bytes, counts, times, the memory at each phase).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "models/gpt/Model.h"
#include "models/gpt/TunedTiles.h"
#include "tools/tegula-gpt/Options.h"

#include <initializer_list>
#include <string>
#include <utility>

namespace tegula::gpt::cli {

/// The model --layers, --heads, --embd and --seq (its context) give, for a
/// vocabulary of `vocab` tokens (padded to a multiple of 128).
GptConfig configFrom(const Options &o, int vocab);

/// --batch and --seq, whose product (the tokens a step) must fit an int.
std::pair<int, int> batchAndSeq(const Options &o);

/// --backend; gpu where none is usable is an error saying why.
Backend backendFrom(const Options &o);

/// --precision of the f32 dots: tf32 (tensor cores) by default on the GPU.
tl::precision precisionFrom(const Options &o);

/// "ieee", "tf32" or "tf32x3", as --precision spells them.
const char *precisionName(tl::precision p);

/// --dtype of the weights and activations: f32, or bf16 (mixed precision:
/// f32 master weights, gradients and AdamW state).
DType storageFrom(const Options &o);

/// An on|off option: --warp-specialize (default on: sm_90a gives the
/// model's TMA-fed loops a producer warpgroup and runs its GEMMs
/// persistent), --stream-k (default on: the blocks' weight gradients as
/// stream-K GEMMs) - docs/gpt.md.
bool onOff(const Options &o, const char *name);

/// What a tuning of `model` at B x T on this GPU holds for (--tiles auto).
TuningSetup tuningSetup(const GptModel &model, const Options &o, int B, int T);

/// Bytes in the unit that shows them (a tiny model's are KiB, GPT-2's MiB).
std::string mib(int64_t bytes);

/// A time left as people say it: 42s, 3m07s, 2h05m.
std::string duration(double seconds);

/// A parameter count as people say it: 124.44M, 20.5K.
std::string count(int64_t n);

/// "[memory] PHASE parameters ..., peak ...": what `m` has allocated.
void printMemory(const char *phase, const GptModel &m);

/// A BPE needs both of its files: one alone is a mistake, not byte tokens.
void requireBothBpeFiles(const Options &o);

/// The file option `output` names is none of the run's `inputs` (options
/// that name files): writing it would destroy that input.
void checkNotAnInput(const Options &o, const std::string &output, std::initializer_list<const char *> inputs);

} // namespace tegula::gpt::cli
