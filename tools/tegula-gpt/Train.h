//===- Train.h - tegula-gpt's subcommands ------------------------*- C++ -*-===//
#pragma once

#include "tools/tegula-gpt/Options.h"

namespace tegula::gpt::cli {

/// tegula-gpt train (Train.cpp): trains, validates, saves; returns the exit
/// code (128 + the signal when Ctrl-C or SIGTERM stopped it).
int train(const Options &o);

} // namespace tegula::gpt::cli
