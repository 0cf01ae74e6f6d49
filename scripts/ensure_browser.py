"Make sure Debian's chromium is installed for the browser tests (apt-get as root); playwright never downloads a browser."
import os, shutil, subprocess, sys

CHROMIUM = "/usr/bin/chromium"

def main() -> int:
    if os.path.exists(CHROMIUM): print(f"ok: {CHROMIUM} present"); return 0
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print("chromium is missing and cannot be installed here (needs root and apt-get): browser tests will be skipped")
        return 0
    print("installing chromium from Debian (apt-get) for the browser tests ...", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, stdout=subprocess.DEVNULL)
    print(f"ok: {CHROMIUM} installed" if os.path.exists(CHROMIUM) else "chromium did not install")
    return 0

if __name__ == "__main__":
    sys.exit(main())
