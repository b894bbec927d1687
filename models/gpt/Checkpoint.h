//===- Checkpoint.h - a GPT-2 checkpoint's configuration -------*- C++ -*-===//
//
// What a checkpoint with Hugging Face's GPT-2 names says about the model it
// holds: the layers (h.{i}), the width and vocabulary (wte), the context
// (wpe). The head count is not in the weights: it comes from the caller,
// from the file's metadata (GptModel::save writes "n_head"), or from Hugging
// Face's config.json beside the file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "models/gpt/Model.h"

#include <string>

namespace tegula::gpt {

class SafetensorsFile;

/// The configuration of `file`'s model (vocab_padded: the vocabulary rounded
/// up to a multiple of 128). n_head: `n_head` when > 0 (an error where the
/// metadata's "n_head" says otherwise), else the metadata's "n_head", else "n_head" of the JSON file `config_json` (when not empty
/// and present); throws tegula::Error naming what is missing or inconsistent.
GptConfig checkpoint_config(const SafetensorsFile &file, int n_head = 0, const std::string &config_json = "");

/// Hugging Face's config.json beside a checkpoint file: `path`'s directory
/// + "/config.json".
std::string config_json_beside(const std::string &path);

/// The optimizer state beside a checkpoint (GptModel::save_optimizer; what
/// tegula-gpt train --save writes and --resume reads): "X.safetensors" ->
/// "X.state.safetensors", any other name + ".state.safetensors".
std::string optimizer_state_beside(const std::string &path);

} // namespace tegula::gpt
