# What the tegula-gpt test scripts share (sourced; $tool and $work set).

# expect_error MESSAGE ARGS...: the tool fails, and its stderr holds MESSAGE.
expect_error() {
  local message=$1
  shift
  if "$tool" "$@" >"$work/out.log" 2>"$work/err.log"; then
    echo "expected an error from: $*"
    exit 1
  fi
  grep -qF -- "$message" "$work/err.log" || { echo "expected '$message', got:"; cat "$work/err.log"; exit 1; }
}

# prints PATTERN ARGS...: the tool's output has a line matching PATTERN (read
# from a file: `| grep -q` would close the pipe on the tool mid-write).
prints() {
  local pattern=$1
  shift
  "$tool" "$@" >"$work/prints.log"
  grep -q -- "$pattern" "$work/prints.log" || { echo "expected '$pattern' from: $*"; cat "$work/prints.log"; exit 1; }
}

# stopped_by SIGNAL CODE LOG ARGS...: the tool runs ARGS in the background,
# gets SIGNAL once it has logged a step, and exits with CODE (its output in LOG).
stopped_by() {
  local signal=$1 code=$2 log=$3
  shift 3
  "$tool" "$@" >"$log" 2>&1 &
  local pid=$! rc=0
  for _ in $(seq 600); do grep -q '^step ' "$log" && break; sleep 0.1; done
  kill -"$signal" "$pid"
  wait "$pid" || rc=$?
  [[ $rc == "$code" ]] || { echo "$signal: exit $rc, not $code"; cat "$log"; exit 1; }
}
