"""Ctrl-C stops a long interpreter or simulator launch: the launch raises
KeyboardInterrupt within moments, instead of running on for minutes with the
signal ignored (the GIL is released while it runs)."""
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# A matmul far too large for the CPU backends to finish soon: minutes.
SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    from tegula import examples
    n = 1024
    a = np.ones((n, n), np.float32); c = np.zeros((n, n), np.float32)
    print("launching", flush=True)
    start = time.monotonic()
    try:
        examples.matmul[(n // 32, n // 32)](a, a, c, n, n, n, BM=32, BN=32, BK=32, backend=sys.argv[1])
    except KeyboardInterrupt as e:
        print(f"KeyboardInterrupt after {time.monotonic() - start:.1f} s: {e}", flush=True)
        # The request does not outlive the launch: the next ones run.
        x = np.ones(100, np.float32); out = np.zeros_like(x)
        examples.vector_add[(1,)](x, x, out, 100, BLOCK=128, backend=sys.argv[1])
        import tegula
        tuned = tegula.autotune(examples.vector_add, [tegula.Config({"BLOCK": 128})], cache=False)
        tuned[(1,)](x, x, out, 100, backend=sys.argv[1])
        assert (out == 2).all()
        print("then ran", flush=True)
        sys.exit(3)
    print("finished", flush=True)
""")


@pytest.mark.parametrize("backend", ["interp", "sim"])
def test_ctrl_c_stops_a_long_launch(backend):
    p = subprocess.Popen([sys.executable, "-c", SCRIPT, backend], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "launching"
    time.sleep(1.5)  # inside the launch: tracing (or the simulator's compile), or running
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail(f"the {backend} launch ignored Ctrl-C for a minute")
    assert p.returncode == 3, (out, err)
    assert "KeyboardInterrupt after" in out
    assert "then ran" in out, (out, err)


# Launches from both extension modules (_tegula's kernels, _gpt's model) in
# two threads share one SIGINT installation: with one each, restored in
# either order, the handler could end up chaining to itself (a crash at the
# next Ctrl-C) or leave a launch uninterruptible.
BOTH_MODULES = textwrap.dedent("""
    import sys, threading, time
    import numpy as np
    from tegula import examples, gpt
    model = gpt.GPT(gpt.Config(n_layer=1, n_head=2, n_embd=32, vocab=64, n_ctx=16))
    model.init_random(1)
    x = np.ones(100, np.float32); out = np.zeros_like(x)
    def kernels():
        for _ in range(30):
            examples.vector_add[(1,)](x, x, out, 100, BLOCK=128)
    def forwards():
        for _ in range(30):
            model.forward(np.zeros((1, 16), np.int32))
    threads = [threading.Thread(target=kernels), threading.Thread(target=forwards)]
    for t in threads: t.start()
    for t in threads: t.join()
    n = 1024
    a = np.ones((n, n), np.float32); c = np.zeros((n, n), np.float32)
    print("launching", flush=True)
    try:
        examples.matmul[(n // 32, n // 32)](a, a, c, n, n, n, BM=32, BN=32, BK=32)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(3)
""")


def test_ctrl_c_after_launches_from_both_modules_in_two_threads():
    p = subprocess.Popen([sys.executable, "-c", BOTH_MODULES], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "launching", p.stderr.read()
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("the launch ignored Ctrl-C for a minute")
    assert p.returncode == 3 and "interrupted" in out, (p.returncode, out, err)
