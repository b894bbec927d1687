"""The type stubs (tegula/__init__.pyi, tegula/_gpt.pyi) name everything the
C++ extensions publish, so IDEs and type checkers see the real API: a name
added in python/src without its stub fails here."""
import ast
import os

import pytest

import tegula
from tegula import _gpt, _tegula

PACKAGE = os.path.dirname(os.path.abspath(tegula.__file__))


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def stub_names(stub):
    """{class or function name: set of member names} in a .pyi file."""
    with open(os.path.join(PACKAGE, stub)) as f:
        tree = ast.parse(f.read())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
            names[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            names[node.name] = set()
    return names


# tegula's stub covers what the package re-exports from _tegula (its other
# names serve tegula.testing); _gpt's covers the whole module.
@pytest.mark.parametrize("module, names, stub",
                         [(_tegula, set(tegula.__all__) & public(_tegula), "__init__.pyi"),
                          (_gpt, public(_gpt), "_gpt.pyi")], ids=["tegula", "_gpt"])
def test_each_extension_name_has_a_stub(module, names, stub):
    stubs = stub_names(stub)
    missing = []
    for name in sorted(names):
        if name not in stubs:
            missing.append(name)
            continue
        value = getattr(module, name)
        if isinstance(value, type) and not issubclass(value, BaseException):
            missing += [f"{name}.{m}" for m in sorted(public(value) - stubs[name])]
    assert not missing, f"{stub} lacks {', '.join(missing)}"
