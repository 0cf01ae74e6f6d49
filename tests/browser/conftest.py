"Real JupyterLab and the rendered docs in Debian's headless chromium, driven by playwright (which never downloads a browser)."
import json, os, shutil, socket, subprocess, sys, time, secrets, urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test_artifacts"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"]


def pytest_collection_modifyitems(items):
    "The tests of this folder are marked `browser` (`-m 'not browser'` leaves them out); this hook sees every test."
    here = Path(__file__).resolve().parent
    for item in items:
        if item.path.resolve().parent == here: item.add_marker(pytest.mark.browser)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 120):
    "Poll `url` until it answers 200 (the server is ready) or the time runs out."
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200: return
        except OSError: pass
        time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM): pytest.skip("Debian chromium is not installed (scripts/ensure_browser.py installs it as root)")
    from playwright.sync_api import sync_playwright
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    "JupyterLab on a free localhost port with a token, serving a copy of nbs/ (autosave never touches the sources)."
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "nbs", root / "nbs")
    port, token = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINBOOK_LIVE", "PLOTLY_RENDERER")}
    # the kernels import this checkout's trainbook (not whichever one the venv was installed from)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["JUPYTER_CONFIG_DIR"] = str(root / "jupyter-config")  # no user settings leak in
    settings = root / "lab-settings"
    for name, value in {"notebook-extension/tracker": {"windowingMode": "none"},  # render every cell, as a person scrolls
                        "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False}}.items():
        f = settings / "@jupyterlab" / f"{name}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", f"--port={port}",
                             "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root / 'nbs'}",
                             "--ServerApp.disable_check_xsrf=True", "--ServerApp.allow_root=True", "--LabApp.news_url=",
                             "--LabApp.collaborative=False", f"--LabApp.user_settings_dir={settings}"],
                            stdout=open(root / "lab.log", "w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/api/status?token={token}")
        yield {"url": f"http://127.0.0.1:{port}", "token": token, "root": root / "nbs"}
    finally:
        proc.terminate()
        try: proc.wait(timeout=20)
        except subprocess.TimeoutExpired: proc.kill()


@pytest.fixture(scope="session")
def docs_site():
    "The docs of these sources (built here when missing or stale, from `make test`'s executed notebooks), over http."
    docs = ROOT / "_docs"
    sys.path.insert(0, str(ROOT / "scripts"))
    from build_docs import site_current
    if not site_current():  # --reuse: the notebooks `make test` just ran are not run a second time
        subprocess.run([sys.executable, str(ROOT / "scripts" / "build_docs.py"), "--reuse"], cwd=ROOT, check=True)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(docs)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/index.html")
        yield {"url": f"http://127.0.0.1:{port}", "dir": docs}
    finally:
        proc.terminate(); proc.wait(timeout=10)
