"""make test's set-up: scripts/install.py gives uv the indexes, find-links and constraints pip would use (read from
`pip config list`); the lanes of its two pytest workers name files that exist."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import install  # noqa: E402


def test_pip_settings_become_uv_options():
    listed = ("global.constraint='/etc/xdg/pip/constraints.txt'\n"
              "global.extra-index-url='file:///opt/a/simple file:///opt/b/simple'\n"
              "global.find-links='/opt/wheels'\n:env:.find-links='/opt/wheels'\n"
              "global.index-url='https://mirror.example/simple'\nglobal.cert='/etc/ssl/ca.crt'\n")
    settings = install.parse_pip_config(listed)
    assert settings["extra-index-url"] == ["file:///opt/a/simple", "file:///opt/b/simple"]
    assert settings["find-links"] == ["/opt/wheels"]  # from the file and the variable: once
    args = install.uv_arguments(settings)
    pairs = list(zip(args, args[1:]))
    for pair in [("--index-url", "https://mirror.example/simple"), ("--extra-index-url", "file:///opt/a/simple"),
                 ("--extra-index-url", "file:///opt/b/simple"), ("--find-links", "/opt/wheels"),
                 ("--constraint", "/etc/xdg/pip/constraints.txt"), ("--index-strategy", "unsafe-best-match")]:
        assert pair in pairs, pair
    assert "--compile-bytecode" in args  # as pip does: with PYTHONDONTWRITEBYTECODE nothing compiles later
    assert install.uv_env(settings)["SSL_CERT_FILE"] in ("/etc/ssl/ca.crt", install.os.environ.get("SSL_CERT_FILE"))


def test_a_value_over_several_lines_of_pip_conf_is_one_value_a_line():
    "pip.conf's `extra-index-url =` followed by one URL a line: `pip config list` prints it with its newlines escaped."
    listed = "global.extra-index-url='\\nhttps://a.example/simple\\nhttps://b.example/simple'\n"
    assert install.parse_pip_config(listed)["extra-index-url"] == ["https://a.example/simple", "https://b.example/simple"]


def test_no_pip_settings_means_pypi_only():
    args = install.uv_arguments(install.parse_pip_config(""))
    assert not {"--index-url", "--extra-index-url", "--find-links", "--constraint"} & set(args)


def test_make_tests_engines_lane_names_files_that_exist(pytestconfig):
    "`make test`'s two pytest workers: each file the engines' lane names exists (a renamed one would leave it unseen)."
    here = Path(__file__).resolve().parent
    suite = pytestconfig.pluginmanager.get_plugin(str(here / "conftest.py"))
    for name in suite.ENGINES + suite.HEAVIEST: assert (here / name).is_file(), name
    assert {suite.lane(name) for name in suite.ENGINES} == {"engines"}
    for name in ("test_core.py", "browser/test_docs.py"): assert suite.lane(name) == name
    ranks = [suite.order(name) for name in ("test_ray.py", *suite.HEAVIEST, "test_core.py")]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)  # engines, the heaviest in turn, then the rest
    assert hasattr(suite, "pytest_xdist_make_scheduler")  # make test installs pytest-xdist (the dev extra)
