"""The package's shape, read with `ast` over trainbook/ (nothing imported): no import cycle, the loop a lesson-sized
file, no module over 800 lines, few private names crossing modules, every public parameter documented, and one
writer of run.json."""
import ast, collections, functools, importlib
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "trainbook"
MODULES = {p.stem: p for p in sorted(PKG.glob("*.py")) if p.stem not in ("__init__", "_modidx")}


@functools.cache  # parsed once: the trees are only read (every module's, for each of ~30 parametrized tests)
def tree(name):
    return ast.parse(MODULES[name].read_text())


def imported(node, name) -> list[tuple[str, list[str]]]:
    "(module, names) of every trainbook import in `node` (relative `.x` or `trainbook.x`)."
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.ImportFrom):
            mod = n.module or ""
            if n.level == 1: target = mod.split(".")[0] if mod else None
            elif mod.startswith("trainbook."): target = mod.split(".")[1]
            else: continue
            if target in MODULES: out.append((target, [a.name for a in n.names]))
            elif target is None: out += [(a.name, []) for a in n.names if a.name in MODULES]
    return out


def module_level_imports(name) -> set[str]:
    "The trainbook modules `name` imports when it is imported (not inside functions)."
    found = set()
    for stmt in tree(name).body:
        if isinstance(stmt, (ast.ImportFrom, ast.Import)): found |= {m for m, _ in imported(stmt, name)}
    return found - {name}


def test_no_import_cycle_among_trainbook_modules():
    graph = {m: module_level_imports(m) for m in MODULES}
    state, cycles = {}, []

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open": cycles.append(path[path.index(n):] + [n])
            elif n not in state: visit(n, path + [n])
        state[m] = "done"
    for m in graph:
        if m not in state: visit(m, [m])
    assert cycles == []


def lines_of(name) -> int:
    return len(MODULES[name].read_text().splitlines())


def test_the_loop_reads_as_a_lesson_and_no_module_is_a_book():
    assert lines_of("loop") <= 600, lines_of("loop")
    big = {m: lines_of(m) for m in MODULES if lines_of(m) > 800}
    assert big == {}


def test_few_private_names_cross_modules():
    crossing = [(m, target, n) for m in MODULES for target, names in imported(tree(m), m)
                for n in names if n.startswith("_") and target != m]
    assert len(crossing) <= 5, crossing


# methods of a protocol, documented once where the protocol is (events.Event, Callback, the loaders)
PROTOCOL = {"before_fit", "before_epoch", "before_step", "after_step", "on_nonfinite", "before_validate",
            "after_validate", "after_epoch", "after_fit", "state_dict", "load_state_dict", "set_epoch"}


@functools.cache
def base_methods() -> set[str]:
    "Method names of every trainbook class: an override in a subclass is documented at its base."
    names = collections.Counter()
    for m in MODULES:
        for node in tree(m).body:
            if isinstance(node, ast.ClassDef):
                names.update({i.name for i in node.body if isinstance(i, ast.FunctionDef)})
    return {n for n, count in names.items() if count > 1}


def public_functions(name):
    "The public functions and public methods of public classes, as exported in `__all__`."
    t = tree(name)
    exported = next((ast.literal_eval(s.value) for s in t.body if isinstance(s, ast.Assign)
                     and any(getattr(x, "id", None) == "__all__" for x in s.targets)), [])
    overridden = base_methods()
    for node in t.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in exported: yield node.name, node
        if isinstance(node, ast.ClassDef) and node.name in exported:
            bases = {ast.unparse(b) for b in node.bases}
            for item in node.body:
                if not isinstance(item, ast.FunctionDef): continue
                if item.name.startswith("_") and item.name != "__init__": continue
                if item.name in PROTOCOL or (bases and item.name in overridden and item.name != "__init__"): continue
                yield f"{node.name}.{item.name}", item


def undocumented(name):
    "Parameters of public functions without a docment (a `# comment` on the parameter's line or the one after)."
    source = MODULES[name].read_text().splitlines()
    missing = []
    for qual, fn in public_functions(name):
        args = fn.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if fn.decorator_list and any(getattr(d, "id", "") == "property" for d in fn.decorator_list): continue
        for a in params:
            if a.arg in ("self", "cls"): continue
            line = source[a.lineno - 1]
            if "#" not in line[a.col_offset:]: missing.append(f"{name}.{qual}({a.arg})")
    return missing


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_public_parameter_is_documented(name):
    assert undocumented(name) == []


def writes_run_json(name) -> list[int]:
    "Lines of `name` that write a file named run.json other than through run.write_run_record / run_record_bytes."
    found = []
    for node in ast.walk(tree(name)):
        if not isinstance(node, ast.Call): continue
        text = ast.unparse(node)
        writer = isinstance(node.func, ast.Attribute) and node.func.attr in ("write_text", "write_bytes", "dump",
                                                                            "open") or "atomic_write" in text
        if writer and "run.json" in text and "run_record_bytes" not in text and "write_run_record" not in text:
            found.append(node.lineno)
    return found


def test_one_writer_of_run_json():
    "Every write of a run.json goes through run.write_run_record (or uploads run_record_bytes): one schema, one writer."
    assert {m: writes_run_json(m) for m in MODULES if writes_run_json(m)} == {}
    defined = [m for m in MODULES for n in tree(m).body if isinstance(n, ast.FunctionDef) and n.name == "write_run_record"]
    assert defined == ["run"]


def pyflakes_report() -> list:
    "pyflakes' messages over every module, a line each."
    pyflakes = pytest.importorskip("pyflakes.api")
    from pyflakes import reporter as pyflakes_reporter
    import io
    out = io.StringIO()
    for path in MODULES.values():
        pyflakes.check(path.read_text(), str(path), pyflakes_reporter.Reporter(out, out))
    return out.getvalue().splitlines()


def test_no_undefined_names():
    "pyflakes over every module: a name used but never defined or imported (a moved function's old caller) fails here."
    undefined = [line for line in pyflakes_report()
                 if "undefined name" in line and "undefined name 'Run'" not in line]  # 'Run' in a string annotation
    assert undefined == []


REEXPORTS = {  # module-level imports kept on purpose: (module, name) -> why
    ("classical", "BoostedModel"): "the boosting names' old home: `from trainbook.classical import BoostedModel` still works",
    ("classical", "fit_xgboost"): "the same, for fit_xgboost",
    ("figures", "html"): "the notebook's examples use the export cell's import",
    ("figures", "json"): "the same",
    ("guard", "re"): "the same",
    ("loop", "Callback"): "the same",
    ("recorder", "np"): "the same",
    ("spark_models", "make_splits"): "the same",
    ("spark_models", "spark_session"): "the same",
    ("tracking", "Finding"): "the same",
    ("tracking", "TrainConfig"): "the same",
}


def test_no_unused_imports():
    "pyflakes over every module: a module-level import nothing uses (a leftover of a move) fails here."
    import re
    unused = []
    for line in pyflakes_report():
        found = re.match(r".*/trainbook/(\w+)\.py:\d+:1: '([^']+)' imported but unused", line)
        bound = found and found.group(2).split(" as ")[-1].split(".")[-1]
        if found and (found.group(1), bound) not in REEXPORTS: unused.append(line)
    assert unused == []


def test_every_public_name_is_loaded_from_its_home():
    "`tb.X` imports X from the module that defines it (exports it), so a name moved to another module is moved here too."
    import trainbook
    stale = [(mod, name) for mod, names in trainbook._EXPORTS.items() for name in names
             if name not in importlib.import_module(f"trainbook.{mod}").__all__]
    assert stale == []


def test_no_two_test_files_share_a_name():
    "pytest imports test files by their base name: two of one name (tests/ and tests/browser/) fail collection."
    from collections import Counter
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []
