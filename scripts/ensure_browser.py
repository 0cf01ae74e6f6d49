"""Make sure Debian's chromium is installed for the browser tests (apt-get as root); playwright never downloads a browser.

  python scripts/ensure_browser.py          install now when missing (waits)
  python scripts/ensure_browser.py --start  start the install in the background when missing, and return at once
  python scripts/ensure_browser.py --wait   wait for a started install (at most WAIT_S seconds), print its log

`make test` starts the install before the Python set-up and waits for it before pytest: the download and the unpack
overlap the venv's install and the notebook runs instead of following them. Standard library only (it runs before
the venv exists).
"""
import os, shutil, subprocess, sys, time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
STATE = Path(__file__).resolve().parent.parent / "build" / "browser-install"  # its log, and its exit code when done
WAIT_S = 900  # apt-get's own network timeouts end it well before


def can_install() -> bool:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print("chromium is missing and cannot be installed here (needs root and apt-get): browser tests will be skipped")
        return False
    return True


def install() -> int:
    print("installing chromium from Debian (apt-get) for the browser tests ...", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, stdout=subprocess.DEVNULL)
    print(f"ok: {CHROMIUM} installed" if os.path.exists(CHROMIUM) else "chromium did not install", flush=True)
    return 0


def start() -> int:
    "The install in a detached process whose output goes to STATE/log and whose exit code to STATE/rc."
    if os.path.exists(CHROMIUM) or not can_install(): return 0
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    script = f'"{sys.executable}" "{__file__}"; echo $? > "{STATE / "rc"}"'
    with open(STATE / "log", "wb") as log:
        subprocess.Popen(["sh", "-c", script], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)  # a Ctrl-C of make leaves apt-get to finish (never a broken dpkg)
    print("chromium: installing from Debian in the background (build/browser-install/log)")
    return 0


def wait() -> int:
    "Wait for `start`'s install; its log and exit code, or an install now when none was started."
    if os.path.exists(CHROMIUM) and not STATE.exists(): print(f"ok: {CHROMIUM} present"); return 0
    if not STATE.exists(): return main()
    rc, deadline = STATE / "rc", time.monotonic() + WAIT_S
    while not rc.exists() and time.monotonic() < deadline: time.sleep(0.5)
    print((STATE / "log").read_text(errors="replace").rstrip())
    if not rc.exists():
        print(f"the chromium install did not finish in {WAIT_S} s: browser tests will be skipped"); return 0
    code = int(rc.read_text().strip() or 1)
    shutil.rmtree(STATE, ignore_errors=True)
    return code


def main() -> int:
    if os.path.exists(CHROMIUM): print(f"ok: {CHROMIUM} present"); return 0
    return install() if can_install() else 0


if __name__ == "__main__":
    sys.exit({"--start": start, "--wait": wait}.get(sys.argv[1] if len(sys.argv) > 1 else "", main)())
