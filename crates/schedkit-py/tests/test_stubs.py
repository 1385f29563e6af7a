"""The type stubs of the extension module (_native.pyi) against the module itself: the same
functions, each with the same parameters (names, order and defaults, as PyO3's
``__text_signature__`` gives them), and for the functions that return a tuple, a tuple of as
many values as the stub declares. A stub that drifts from the module misleads every editor and
type checker that reads it."""

import ast
import inspect
from pathlib import Path

import schedkit
from schedkit import _native

STUB = Path(schedkit.__file__).with_name("_native.pyi")


def stub_functions():
    tree = ast.parse(STUB.read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def module_functions():
    return {name for name in dir(_native)
            if not name.startswith("_") and callable(getattr(_native, name))}


def test_stub_names_the_module_functions():
    assert set(stub_functions()) == module_functions()


def test_stub_parameters_are_the_module_parameters():
    for name, node in stub_functions().items():
        sig = inspect.signature(getattr(_native, name))
        got = [(p.name, p.default is not inspect.Parameter.empty) for p in sig.parameters.values()]
        args = node.args.args
        with_default = len(node.args.defaults)
        want = [(a.arg, i >= len(args) - with_default) for i, a in enumerate(args)]
        assert got == want, f"{name}: module {sig}, stub {ast.unparse(node.args)}"


def tuple_arity(node):
    r = node.returns
    if isinstance(r, ast.Subscript) and ast.unparse(r.value) == "Tuple":
        return len(r.slice.elts) if isinstance(r.slice, ast.Tuple) else 1
    return None


def test_tuple_results_have_the_stubs_arity(tmp_path):
    stubs = stub_functions()
    journal = tmp_path / "journal.jsonl"
    journal.write_text("")
    grid = 'policies = ["o1"]\nmachines = "smp2-2002"\nworkloads = "yield"\nduration = "10ms"\n'
    calls = {"grid_points": lambda: _native.grid_points(grid, "grid"),
             "resumable_rows": lambda: _native.resumable_rows([], []),
             "recover_journal": lambda: _native.recover_journal(str(journal))}
    declared = {name for name, node in stubs.items() if tuple_arity(node) is not None}
    assert declared == set(calls), "a tuple-returning function without a call here"
    for name, call in calls.items():
        assert len(call()) == tuple_arity(stubs[name]), name
