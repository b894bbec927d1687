//===- Commands.h - tegula-gpt's subcommands, their options and help -*- C++ -*-===//
//
// What `tegula-gpt SUBCOMMAND --help` prints: each subcommand's synopsis and
// its options with their defaults. main.cpp parses with these lists, so the
// help and the parser cannot disagree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/tegula-gpt/Options.h"

#include <string>
#include <vector>

namespace tegula::gpt::cli {

struct Command {
  std::string name, usage, about;
  std::vector<OptionSpec> options;
};

/// The model options train and tune share (their defaults: train's tiny
/// model; tune overrides them with GPT-2 124M's).
inline std::vector<OptionSpec> modelOptions(const std::string &layers, const std::string &heads,
                                            const std::string &embd, const std::string &seq) {
  return {
      {"layers", layers, "transformer blocks"},
      {"heads", heads, "attention heads (--embd must be a multiple of them)"},
      {"embd", embd, "embedding width"},
      {"seq", seq, "tokens a window; also the model's context (its position embeddings)"},
  };
}

/// Where and how kernels run (every subcommand that runs a model).
inline std::vector<OptionSpec> runOptions(const std::string &backend, const std::string &dtype) {
  return {
      {"backend", backend, "interp (the CPU interpreter), sim (the CTA simulator) or gpu"},
      {"precision", "", "f32 dots: ieee, tf32 or tf32x3 [tf32 on the GPU, ieee elsewhere]"},
      {"dtype", dtype, "weights and activations: f32, or bf16 (with f32 master weights, gradients, AdamW state)"},
      {"warp-specialize", "on", "sm_90a: producer warpgroups for TMA-fed loops, persistent GEMMs (on|off)"},
      {"seed", "1", "random seed (any 64-bit integer): initialisation, batches, sampling"},
  };
}

inline std::vector<OptionSpec> operator+(std::vector<OptionSpec> a, const std::vector<OptionSpec> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline std::vector<Command> commands() {
  return {
      {"tokenize", "tegula-gpt tokenize --data FILE --out FILE [--vocab vocab.json --merges merges.txt]",
       "Writes a text file's tokens (GPT-2's BPE with --vocab and --merges, else bytes) as a token file for "
       "train --tokens.",
       {{"data", "", "the text file (required)"},
        {"out", "", "the token file to write (required; never one of the inputs)"},
        {"vocab", "", "GPT-2's vocab.json (with --merges)"},
        {"merges", "", "GPT-2's merges.txt (with --vocab)"}}},
      {"train", "tegula-gpt train (--data FILE | --tokens FILE) [--init FILE | --resume FILE] [options]",
       "Trains a GPT-2 from scratch: AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), gradients clipped at "
       "norm 1.0, linear warm-up then cosine decay to lr/10; the last 10% of the data is held out for the "
       "validation loss. Ctrl-C (or SIGTERM) finishes the step in flight and saves (with --save); a second one stops at "
       "once, but not inside a save.",
       std::vector<OptionSpec>{
           {"data", "", "a text file, trained on as bytes (vocabulary 256)"},
           {"tokens", "", "a token file (tegula-gpt tokenize); give --data or --tokens"},
           {"steps", "200", "optimizer steps"},
           {"batch", "4", "windows a step"},
           {"lr", "1e-3", "peak learning rate"},
           {"warmup", "20", "warm-up steps"},
           {"val-every", "50", "validation loss every N steps and at the end (0: never)"},
           {"save", "", "the checkpoint to write at the end or on Ctrl-C (safetensors, Hugging Face's names), and "
                        "beside it X.state.safetensors: AdamW's state and the run's place, for --resume"},
           {"save-every", "0", "also save every N steps (0: at the end and on Ctrl-C only)"},
           {"init", "", "start from this checkpoint's weights (Tegula's or Hugging Face's GPT-2; its sizes)"},
           {"resume", "", "continue the run saved in this checkpoint: its weights, AdamW state, step and batches, "
                          "and its --steps, --lr, --warmup, --batch, --seq... unless given"},
           {"stream-k", "on", "weight gradients as stream-K GEMMs (on|off)"},
           {"tiles", "", "GptModel::Tiles fields: name=value,... or @FILE (tegula-gpt tune's) or auto"},
           {"stochastic-rounding", "off", "bf16: round the copy of the master weights stochastically (on|off)"},
       } + modelOptions("2", "4", "128", "64") +
           runOptions("interp", "f32")},
      {"tune", "tegula-gpt tune [options]",
       "Times training steps on the GPU with each alternative tile setting and writes the fastest (--out) for "
       "train --tiles @FILE; keeps it for train --tiles auto on this GPU and setup.",
       std::vector<OptionSpec>{
           {"vocab", "50257", "vocabulary size"},
           {"batch", "8", "windows a step"},
           {"steps", "5", "steps timed a trial"},
           {"rounds", "3", "rounds over the choices"},
           {"min-gain", "0.005", "the least relative gain a choice must bring to be kept"},
           {"choices", "", "the choices to try, comma-separated [all]"},
           {"tiles", "", "start from these tiles: name=value,... or @FILE or auto"},
           {"out", "", "write the tuned tiles here"},
           {"stream-k", "on", "weight gradients as stream-K GEMMs (on|off)"},
       } + modelOptions("12", "12", "768", "1024") +
           runOptions("gpu", "bf16")},
      {"generate", "tegula-gpt generate --model FILE [--prompt TEXT] [options]",
       "Samples from a checkpoint (Tegula's or Hugging Face's GPT-2) with a KV cache; its sizes come from the "
       "file, its head count from the metadata, config.json beside it or --heads.",
       std::vector<OptionSpec>{
           {"model", "", "the checkpoint (safetensors; required)"},
           {"prompt", "", "the text to continue [a BPE model: from <|endoftext|>, as a new text]"},
           {"tokens", "100", "tokens to generate (at most what the context leaves; 0: none)"},
           {"temperature", "0.8", "sampling temperature (0: greedy)"},
           {"top-k", "40", "sample among the k likeliest tokens (0: all)"},
           {"top-p", "0.95", "sample among the likeliest tokens holding this probability mass, in (0, 1]"},
           {"stop", "on", "end at <|endoftext|> (a BPE model's end of a text) (on|off)"},
           {"ids", "off", "the prompt is token ids (\"464 3290\", any vocabulary) and the output too (on|off)"},
           {"heads", "0", "attention heads, when the checkpoint does not say [from the checkpoint]"},
           {"vocab", "", "GPT-2's vocab.json (a BPE model; with --merges)"},
           {"merges", "", "GPT-2's merges.txt (with --vocab)"},
       } + runOptions("interp", "f32")},
  };
}

/// The top-level usage: each subcommand in a line.
inline std::string usage() {
  std::string out = "usage: tegula-gpt SUBCOMMAND [options]   (tegula-gpt SUBCOMMAND --help lists its options)\n";
  for (const Command &c : commands())
    out += fmt::format("  {}\n", c.usage);
  return out;
}

} // namespace tegula::gpt::cli
