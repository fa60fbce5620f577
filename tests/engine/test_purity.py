"""gcengine is a pure library: no web framework, and no network code at import time."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import gcengine

PACKAGE_DIR = Path(gcengine.__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
REFERENCE_SESSION = (
    Path(__file__).resolve().parents[3] / "shared/reference/examples/jaato_session_v2.1.json"
)
FORBIDDEN = ("django", "jaato_web", "ninja", "django_htmx")
SUBPROCESS_TIMEOUT = 60


def imported_modules(tree: ast.AST) -> list[tuple[str, int]]:
    """Every module an ``import`` statement anywhere in the tree names, with its line."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, node.lineno))
    return found


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )


def test_the_import_scanner_sees_imports_inside_functions() -> None:
    tree = ast.parse("def f():\n    from django.conf import settings\n    import ninja.router\n")
    assert imported_modules(tree) == [("django.conf", 2), ("ninja.router", 3)]


@pytest.mark.parametrize(
    "path", sorted(PACKAGE_DIR.rglob("*.py")), ids=lambda p: str(p.relative_to(REPO_ROOT))
)
def test_no_engine_module_imports_the_web_layer(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    offending = [
        f"{path.relative_to(REPO_ROOT)}:{line} imports {name}"
        for name, line in imported_modules(tree)
        if name.split(".")[0] in FORBIDDEN
    ]
    assert offending == []


def test_ruff_bans_what_this_test_forbids() -> None:
    # The same rule, caught by the linter as the code is written.
    settings = tomllib.loads((PACKAGE_DIR / "ruff.toml").read_text(encoding="utf-8"))
    assert "TID251" in settings["lint"]["extend-select"]
    banned = settings["lint"]["flake8-tidy-imports"]["banned-api"]
    assert set(FORBIDDEN) <= set(banned)


def engine_module_names() -> set[str]:
    """Every module under gcengine/, named as it is imported."""
    return {
        ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in PACKAGE_DIR.rglob("*.py")
    }


def test_the_engine_imports_and_loads_a_session_with_the_web_layer_unimportable() -> None:
    expected = sorted(engine_module_names())
    result = run_python(
        f"""
        import importlib, json, pkgutil, sys
        from pathlib import Path

        FORBIDDEN = {FORBIDDEN!r}
        attempts = []

        class RefuseWebLayer:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in FORBIDDEN:
                    attempts.append(name)
                    raise ImportError(f"gcengine must not import {{name}}")
                return None

        assert not [m for m in sys.modules if m.split(".")[0] in FORBIDDEN]
        sys.meta_path.insert(0, RefuseWebLayer())

        import gcengine
        walked = [info.name for info in pkgutil.walk_packages(gcengine.__path__, "gcengine.")]
        names = sorted(set(walked) | set({expected!r}))
        # A __main__ module runs the program when imported; its imports are checked statically.
        for name in (n for n in names if not n.endswith(".__main__")):
            importlib.import_module(name)
        session = gcengine.load_session(Path({str(REFERENCE_SESSION)!r}))
        assert session.history, "the reference session has a conversation"
        assert session.budget.total_tokens() > 0
        assert attempts == [], attempts
        print(json.dumps(names))
        """
    )
    assert result.returncode == 0, result.stderr
    assert set(json.loads(result.stdout)) >= set(expected)


def test_importing_the_engine_loads_no_network_library() -> None:
    result = run_python(
        """
        import sys
        import gcengine
        print(sorted(m for m in ("requests", "urllib3", "httpx") if m in sys.modules))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_counting_works_offline_with_an_empty_tiktoken_cache(tmp_path: Path) -> None:
    """No network and nothing cached: the shipped cl100k_base and o200k_base count, and
    asking for an encoding that would need a download falls back to cl100k_base instead of
    hanging or failing. The package carrying o200k's vocabulary is never imported."""
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "DATA_GYM_CACHE_DIR"}
    env["TIKTOKEN_CACHE_DIR"] = str(cache)
    result = run_python(
        f"""
        import json, socket, sys
        from pathlib import Path

        def no_network(*args, **kwargs):
            raise OSError("network access attempted")

        socket.socket.connect = no_network
        socket.socket.connect_ex = no_network
        socket.create_connection = no_network
        socket.getaddrinfo = no_network

        import gcengine
        session = gcengine.load_session(Path({str(REFERENCE_SESSION)!r}))
        fallback = gcengine.load_counter("p50k_base")
        o200k = gcengine.load_counter("o200k_base")
        print(json.dumps({{
            "session_counter": session.token_counter,
            "o200k_counter": o200k.name,
            "o200k_counts": o200k.count("hello world"),
            "bpe_openai_imported": "bpe_openai" in sys.modules,
            "fallback_counter": fallback.name,
            "fallback_exact": fallback.exact,
            "fallback_counts": fallback.count("hello world"),
            "requests_loaded": "requests" in sys.modules,
        }}))
        """,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == {
        "session_counter": "tiktoken:cl100k_base",
        "o200k_counter": "tiktoken:o200k_base",
        "o200k_counts": 2,
        "bpe_openai_imported": False,
        "fallback_counter": "tiktoken:cl100k_base",
        "fallback_exact": True,
        "fallback_counts": 2,
        "requests_loaded": False,
    }
