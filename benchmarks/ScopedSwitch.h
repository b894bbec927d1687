// ScopedSwitch.h - a TEGULA_* switch set for a scope: benchmarks time a
// configuration with and without a compiler path (the switches are read
// at every launch and are part of the loaded kernel's key).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace tegula::bench {

/// Sets environment variable `name` to `value` (nothing when null) for its
/// lifetime, then restores it.
class ScopedSwitch {
public:
  ScopedSwitch(const char *name, const char *value) : name_(name) {
    if (!value)
      return;
    if (const char *old = std::getenv(name))
      old_ = old;
    set_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedSwitch() {
    if (set_)
      old_ ? (void)::setenv(name_, old_->c_str(), 1) : (void)::unsetenv(name_);
  }
  ScopedSwitch(const ScopedSwitch &) = delete;
  ScopedSwitch &operator=(const ScopedSwitch &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
  bool set_ = false;
};

} // namespace tegula::bench
