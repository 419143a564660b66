"""How long each gallery script takes as a script on one BLAS thread, against a bare Python start-up.

Not part of the test run: ``.venv/bin/python tests/bench/gallery.py [rounds]``. Prints, for each
example of docs/examples/, the median wall time of ``rounds`` runs, and the ratio to starting
Python and importing topos and numpy alone (the peer measured in the same run, so the figure
travels across machines and loads better than seconds do).
"""

import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "docs", "examples")


def timed(arguments):
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    environment["PYTHONPATH"] = os.path.join(ROOT, "py")
    start = time.perf_counter()
    subprocess.run([sys.executable, *arguments], check=True, capture_output=True, env=environment, cwd=ROOT)
    return time.perf_counter() - start


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    names = sorted(name for name in os.listdir(EXAMPLES) if name.endswith(".py"))
    startup = statistics.median(timed(["-c", "import numpy, topos"]) for _ in range(rounds))
    print(f"python -c 'import numpy, topos': {startup * 1000:.0f} ms (median of {rounds})")
    for name in names:
        seconds = statistics.median(timed([os.path.join(EXAMPLES, name)]) for _ in range(rounds))
        print(f"{name:28s} {seconds:7.2f} s  {seconds / startup:6.1f}x start-up")


if __name__ == "__main__":
    main()
