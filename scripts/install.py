"""Install packages into this venv with uv, configured from pip's own settings; with pip when uv cannot.

`make install` runs `python scripts/install.py torch==X -e '.[dev]'`. pip installs the dev environment (about 270
packages) one wheel after another: 150–230 s on 2 cores. uv resolves, unpacks and byte-compiles in parallel: about
65–80 s for the same set, from an empty cache too. uv reads neither pip.conf nor PIP_* variables, so the indexes,
find-links and constraints pip would use (`pip config list`) are handed to it here, and it picks from all the indexes
as pip does (`unsafe-best-match`). Anything uv cannot do (it is not installable, the resolution fails) falls back to
pip, so the install never depends on uv; `TRAINBOOK_PIP_ONLY=1` skips uv altogether.
"""
import ast, os, subprocess, sys

PY = sys.executable
PIP = [PY, "-m", "pip", "install", "-q", "--disable-pip-version-check"]


def pip_settings() -> dict[str, list[str]]:
    "pip's effective settings, `key -> values`, from `pip config list` (files and PIP_* variables alike)."
    return parse_pip_config(subprocess.run([PY, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout)


def parse_pip_config(out: str) -> dict[str, list[str]]:
    """`pip config list`'s lines (`global.extra-index-url='a b'`, `:env:.find-links='/x'`) as `key -> values`. pip
    prints each value as a Python literal (a pip.conf value over several lines is `'\\na\\nb'`), and splits a
    list-valued option on whitespace."""
    settings: dict[str, list[str]] = {}
    for line in out.splitlines():
        name, _, value = line.partition("=")
        key = name.rpartition(".")[2]  # "global.extra-index-url", ":env:.find-links"
        try: value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError): value = value.strip().strip("'\"")
        for v in str(value).split():
            if v not in settings.setdefault(key, []): settings[key].append(v)
    return settings


def uv_arguments(settings: dict[str, list[str]]) -> list[str]:
    "uv's options for what pip would do: where to look, what caps versions, byte-compiling (as pip does)."
    args = ["--python", PY, "--compile-bytecode", "--index-strategy", "unsafe-best-match"]
    for url in settings.get("index-url", [])[:1]: args += ["--index-url", url]
    for url in settings.get("extra-index-url", []): args += ["--extra-index-url", url]
    for where in settings.get("find-links", []): args += ["--find-links", where]
    for path in settings.get("constraint", []): args += ["--constraint", path]
    return args


def uv_env(settings: dict[str, list[str]]) -> dict[str, str]:
    env = dict(os.environ)
    for cert in settings.get("cert", [])[:1]: env.setdefault("SSL_CERT_FILE", cert)
    for timeout in settings.get("default-timeout", [])[:1]: env.setdefault("UV_HTTP_TIMEOUT", timeout)
    return env


def with_pip(packages: list[str]) -> int:
    done = subprocess.run(PIP + packages, stderr=subprocess.PIPE, text=True)
    sys.stderr.write("".join(l for l in done.stderr.splitlines(True) if not l.startswith("WARNING: Location")))
    return done.returncode


def main(packages: list[str]) -> int:
    if os.environ.get("TRAINBOOK_PIP_ONLY", "0") not in ("", "0"): return with_pip(packages)
    if subprocess.run(PIP + ["uv"], capture_output=True).returncode:
        print("uv is not installable here: pip installs instead", flush=True)
        return with_pip(packages)
    settings = pip_settings()
    uv = [os.path.join(os.path.dirname(PY), "uv"), "pip", "install", "--quiet", *uv_arguments(settings), *packages]
    if subprocess.run(uv, env=uv_env(settings)).returncode == 0: return 0
    print("uv could not install these (above): pip installs instead", flush=True)
    return with_pip(packages)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
