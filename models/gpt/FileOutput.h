//===- FileOutput.h - files written whole or not at all ---------*- C++ -*-===//
//
// Checkpoints, token files and tuned tiles are written to a temporary file
// of their own beside the destination and renamed over it: a run that fails
// (a full disk, an interrupted write) leaves the old file, or none, never a
// truncated one that a later run would take for whole. The temporary's name
// is unique (another file named PATH.tmp is never touched) and it is removed
// on failure.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace tegula::gpt {

/// Writes `parts`, in order, as the file `path` (replacing it); throws
/// tegula::Error naming the path and the system's reason. `what` starts the
/// message ("safetensors", "tokenize").
void write_file_replacing(const std::string &path, const std::vector<std::span<const std::byte>> &parts,
                          const std::string &what);

/// A file written whole to its temporary beside `path` (as
/// write_file_replacing writes it) and put in place by commit(). Files that
/// belong together - a checkpoint and its optimizer state - are all staged
/// before any is committed: a failure to write one leaves every old one as
/// it was. Destroyed uncommitted, the temporary is removed.
class StagedFile {
public:
  StagedFile(const std::string &path, const std::vector<std::span<const std::byte>> &parts, const std::string &what);
  ~StagedFile();
  StagedFile(const StagedFile &) = delete;
  StagedFile &operator=(const StagedFile &) = delete;
  /// Renames the temporary over `path`; throws naming both.
  void commit();

private:
  std::string path_, tmp_, what_;
  bool committed_ = false;
};

/// Whether a file can be created at `path` (its folder exists and takes a
/// new file; `path` is not a directory), found before a long run rather than
/// after it; throws naming `option` (e.g. "--save") and the reason. Creates
/// and removes a uniquely named probe beside it: nothing else is touched.
void check_file_creatable(const std::string &path, const std::string &option);

} // namespace tegula::gpt
