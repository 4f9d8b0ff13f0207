"""Compiles the checker's hot path with mypyc at install (see isrcheck/native.py).

Everything else about the project is declared in pyproject.toml. mypyc derives a module's name
from its path, and the source folders sit at the top of the checkout under other names
(model/ is isrcheck.model), so the compiled modules are first laid out under their import names
in build/mypyc-src (symbolic links to the sources), then compiled from there.

ISRCHECK_BUILD_PURE=1 skips compilation (the pure-Python install, for platforms without a C
compiler); ISRCHECK_PURE=1 at run time ignores compiled modules that are present.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _package_dirs() -> dict[str, str]:
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]["package-dir"]


def _native_settings() -> tuple[list[str], str]:
    """COMPILED_MODULES and GROUP from isrcheck/native.py, read without importing the package."""
    tree = ast.parse((ROOT / "isrcheck" / "native.py").read_text())
    values: dict[str, object] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id in ("COMPILED_MODULES", "GROUP"):
            values[target.id] = ast.literal_eval(node.value)
    return list(values["COMPILED_MODULES"]), str(values["GROUP"])  # type: ignore[arg-type]


def _staging_tree(modules: list[str]) -> list[str]:
    """Link every package under its import name in build/mypyc-src; the paths to compile."""
    stage = ROOT / "build" / "mypyc-src"
    for package, folder in _package_dirs().items():
        link = stage.joinpath(*package.split("."))
        if package == "isrcheck":
            link.mkdir(parents=True, exist_ok=True)
            for f in (ROOT / folder).glob("*.py"):
                dest = link / f.name
                if not dest.exists():
                    dest.symlink_to(f)
            continue
        if link.is_symlink() or link.exists():
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT / folder, target_is_directory=True)
    return [_source_in(stage, m) for m in modules]


def _source_in(tree: Path, module: str) -> str:
    """The source of ``module`` under ``tree``: its ``.py`` file, or a package's ``__init__.py``."""
    base = tree.joinpath(*module.split("."))
    return str(base / "__init__.py" if base.is_dir() else base.with_suffix(".py"))


def _record_sources(modules: list[str], paths: list[str]) -> None:
    """isrcheck/native_build.json: the digest of every compiled module's source, so that a process
    can tell when the source changed after the build (it then imports the source; see native.py)."""
    sources = {}
    for module, path in zip(modules, paths):
        real = Path(path).resolve()
        sources[module] = {"source": str(real.relative_to(ROOT)), "sha256": hashlib.sha256(real.read_bytes()).hexdigest()}
    (ROOT / "isrcheck" / "native_build.json").write_text(json.dumps({"modules": sources}, indent=1) + "\n")


def _remove_compiled() -> None:
    """A pure install must not leave an earlier build's extension modules beside the sources
    (an editable install would import them instead of the Python files)."""
    modules, group = _native_settings()
    dirs = _package_dirs()
    for name in modules + [group + "__mypyc"]:
        package, _, leaf = name.rpartition(".")
        top = max((p for p in dirs if package == p or package.startswith(p + ".")), key=len)
        folder = ROOT / dirs[top] / package[len(top):].lstrip(".").replace(".", "/")
        # a module's extension sits beside its source; a package's (mypyc names it
        # package.__init__) inside the package
        for built in [*folder.glob(f"{leaf}.*.so"), *(folder / leaf).glob("__init__.*.so")]:
            built.unlink()
    for folder, leaf in NATIVE_C:
        for built in (ROOT / folder).glob(f"{leaf}.*.so"):
            built.unlink()


#: the plain C extensions beside the mypyc modules, as (folder, name): the engine's generic ones
#: (engine/_newtuple.c, engine/_fptable.c, engine/_parentmap.c, engine/_codec.c, engine/_scc.c,
#: engine/_assemble.c), the Kafka
#: model's state fingerprint (model/_partshash.c) and the peer model's symmetric fingerprint
#: (peers/kafka_specification/_canon.c)
NATIVE_C = (("engine", "_newtuple"), ("engine", "_fptable"), ("engine", "_parentmap"), ("engine", "_codec"),
            ("engine", "_scc"), ("engine", "_assemble"), ("engine", "_fpset"), ("model", "_partshash"),
            ("peers/kafka_specification", "_canon"))
#: headers they include (engine/_fingerprints.h: what the two fingerprint tables share;
#: engine/_module.h: a module holding one type, every engine extension's init)
NATIVE_HEADERS = ("engine/_fingerprints.h", "engine/_module.h")
#: the import package of each folder holding plain C extensions
_C_PACKAGE = {"engine": "isrcheck.engine", "model": "isrcheck.model",
              "peers/kafka_specification": "isrcheck.peers.kafka_specification"}


def _extensions() -> list:
    record = ROOT / "isrcheck" / "native_build.json"
    if os.environ.get("ISRCHECK_BUILD_PURE", "").strip() not in ("", "0"):
        record.unlink(missing_ok=True)
        _remove_compiled()
        return []
    from mypyc.build import mypycify

    modules, group = _native_settings()
    paths = _staging_tree(modules)
    _record_sources(modules, paths)
    # plain C extensions (see each file): the state classes' constructor, the state fingerprint
    plain = [Extension(f"{_C_PACKAGE[folder]}.{leaf}", [str(Path(folder) / f"{leaf}.c")],
                       depends=list(NATIVE_HEADERS)) for folder, leaf in NATIVE_C]
    # multi_file: a C file per module (one file of 20 MB is one compiler process for minutes), which
    # ParallelBuildExt compiles side by side
    target = ROOT / "build" / "mypyc-c"
    compiled = mypycify(paths, opt_level="3", debug_level="0", group_name=group, multi_file=True,
                        target_dir=str(target))
    for ext in compiled:  # the per-module files sit at the top of target but include the group's
        ext.include_dirs.append(str(target.joinpath(*group.split(".")[:-1])))  # header, beside its library
    return plain + compiled


def _jobs() -> int:
    """Compiler processes at once: ISRCHECK_BUILD_JOBS, else one per CPU this process may use."""
    raw = os.environ.get("ISRCHECK_BUILD_JOBS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


class ParallelBuildExt(build_ext):
    """build_ext compiling the C files of each extension side by side: mypyc's group is one
    extension of many files, which setuptools compiles one after the other (its ``parallel`` option
    spreads whole extensions only). Uses the compiler's own steps (``_setup_compile``, ``_compile``),
    so flags, includes and dependencies are the serial build's."""

    def build_extensions(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        compiler = self.compiler
        jobs = _jobs()

        def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,  # noqa: ANN001
                    extra_preargs=None, extra_postargs=None, depends=None):  # noqa: ANN001
            macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs)
            cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

            def one(obj: str) -> None:
                src, ext = build[obj]
                compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

            # the largest files first, so the last one to finish is a small one
            todo = sorted((o for o in objects if o in build), key=lambda o: -os.path.getsize(build[o][0]))
            with ThreadPoolExecutor(jobs) as pool:
                for _ in pool.map(one, todo):
                    pass
            return objects

        if jobs > 1:
            compiler.compile = compile
        self.parallel = jobs  # and the extensions themselves side by side
        super().build_extensions()


setup(ext_modules=_extensions(), cmdclass={"build_ext": ParallelBuildExt})
