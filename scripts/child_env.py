"""What the processes `make test` starts inherit (notebook kernels, Spark's JVM and Python workers, Ray's and torchrun's
workers, a Keras backend's subprocess): set by scripts/build_docs.py for its kernels and by tests/conftest.py, each
only where the caller did not set it."""
import os


def set_child_defaults(threads: int,  # OpenMP/BLAS threads per process: the cores over the processes run at once
                       ) -> None:
    # two kernels at a time on 2 cores: two torch thread pools of every core wait on each other's threads, and a
    # notebook of small steps ran 13x slower beside another (1.2 s -> 16 s)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"): os.environ.setdefault(name, str(threads))
    # Spark's driver JVM (local mode: the executors too) with its quick JIT tier only: these sessions live seconds,
    # and the optimizing compiler's threads took a third of a Spark notebook's CPU (big_tables 130 -> 83 CPU-s)
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell")
    # one XLA compilation cache for every JAX process of the run (tests, kernels, Keras' JAX child): the tests
    # and notebooks compile the same small steps again and again (tests/test_jax.py: 89 s -> 53 s, one core,
    # cold). Entries are keyed on the whole computation and JAX's version, so a hit is the executable a
    # compile would give; the size cap turns on JAX's file lock, so the processes running at once never read
    # an entry half written
    cache = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "jax-cache")
    for name, value in (("JAX_COMPILATION_CACHE_DIR", cache),
                        ("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0"),
                        ("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0"),
                        ("JAX_COMPILATION_CACHE_MAX_SIZE", str(1 << 30))):
        os.environ.setdefault(name, value)
