"""Installed like a desktop app, end to end, in a temporary folder:

1. pipx (from PATH, else pip-installed into a venv of its own) installs a copy of this checkout with
   PIPX_HOME / PIPX_BIN_DIR in the folder, as README's "Install as a desktop app" says; torch must be the CPU
   build, without nvidia packages;
2. `knowledge-explorer desktop install` writes the menu entry under a temporary XDG_DATA_HOME;
3. the entry's Exec line opens the app under Xvfb on a copy of tests/sample_workspace with --screenshot,
   with fresh data, config and cache folders (a first launch: it indexes the workspace);
4. the PNG must be written; `desktop uninstall` must leave no file.

Prints each step and the figures (install time, the installed environment's size, the first launch's time).

    PYTHONPATH=. python benchmarks/desktop_install.py [--torch-index URL] [--screenshot OUT.png] [--keep]

--torch-index: where CPU torch comes from when the package index serves CUDA builds (PyPI does on Linux),
e.g. https://download.pytorch.org/whl/cpu (passed as --pip-args="--extra-index-url URL", and torch is
installed first with --preinstall). This machine's index serves the CPU build: not needed here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "sample_workspace"
TORCH = "torch==2.13.0"  # the CPU build on this machine's index (as .ci/setup.sh installs it)
QUESTION = "save a note to disk"
DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")

# what the installed environment says about itself (run with its own python)
PROBE = """
import importlib.metadata as m, json, pathlib, resources, torch
names = [d.metadata["Name"] for d in m.distributions()]
root = pathlib.Path(resources.__file__).parent
print(json.dumps({"torch": torch.__version__, "distributions": len(names),
                  "nvidia": sorted(n for n in names if n.lower().startswith("nvidia")),
                  "resources": sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                                      and "__pycache__" not in p.parts)}))
"""


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run(cmd: list, env: dict, timeout: float = 1800, **kwargs) -> float:
    """Run `cmd` (printed first), fail on a non-zero exit; the seconds it took."""
    cmd = [str(c) for c in cmd]
    print("$ " + shlex.join(cmd), flush=True)
    started = time.monotonic()
    subprocess.run(cmd, env=env, check=True, timeout=timeout, **kwargs)
    return time.monotonic() - started


def base_env(tmp: Path) -> dict:
    """This environment without what would leak the checkout or a display into the run; pipx and the
    menu entry in `tmp`."""
    env = {k: v for k, v in os.environ.items()
           if k not in DROPPED_ENV and not k.startswith(("KE_", "PIPX_", "XDG_"))}
    env.update(PIPX_HOME=str(tmp / "pipx"), PIPX_BIN_DIR=str(tmp / "bin"), PIPX_MAN_DIR=str(tmp / "man"),
               XDG_DATA_HOME=str(tmp / "share"))
    return env


def fresh_checkout(tmp: Path) -> Path:
    """The checkout's files as a fresh clone with the work tree's changes would have them (tracked and
    untracked, not ignored): no build/ or egg-info of earlier builds gets into the wheel."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    source = tmp / "source"
    for name in filter(None, files):
        if (ROOT / name).is_file() or (ROOT / name).is_symlink():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name, follow_symlinks=False)
    return source


def pipx_command(tmp: Path, env: dict) -> list[str]:
    """pipx from PATH, else `pip install pipx` into a venv of its own."""
    found = shutil.which("pipx")
    if found:
        return [found]
    venv = tmp / "pipx-tool"
    run([sys.executable, "-m", "venv", venv], env)
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", "pipx"], env)
    return [str(venv / "bin" / "pipx")]


def python311() -> str:
    """A Python 3.11 for the app's environment (the project requires 3.11)."""
    if sys.version_info[:2] == (3, 11):
        return getattr(sys, "_base_executable", sys.executable)
    return shutil.which("python3.11") or sys.exit("error: no python3.11 found")


def pipx_install(pipx: list[str], source: Path, env: dict, torch_index: str | None) -> float:
    """README's command; with `torch_index`, CPU torch from there, installed first."""
    extra = ["--pip-args", f"--extra-index-url {torch_index}", "--preinstall", TORCH] if torch_index else []
    return run([*pipx, "install", "--python", python311(), *extra, source], env)


def size_bytes(folder: Path) -> int:
    """Bytes of the files under `folder` (links not followed)."""
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, files in os.walk(folder) for f in files)


def desktop_keys(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


STRING_ESCAPES = {"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def exec_argv(value: str) -> list[str]:
    """The Exec value as argv (Desktop Entry spec): the string escapes undone, then double quotes with
    \\-escapes inside, `%%` a percent sign; field codes (%f, %U, ...) dropped."""
    text = re.sub(r"\\([snrt\\])", lambda m: STRING_ESCAPES[m.group(1)], value)
    argv: list[str] = []
    word: str | None = None  # None between words; "" an empty quoted word
    quoted = escaped = False
    for c in text:
        if escaped or not (c == '"' or (c == "\\" and quoted) or (c == " " and not quoted)):
            word, escaped = (word or "") + c, False
        elif c == "\\":
            escaped = True
        elif c == '"':
            word, quoted = word or "", not quoted
        elif word is not None:  # a space ends the word
            argv, word = argv + [word], None
    argv += [word] if word is not None else []
    return [a.replace("%%", "%") for a in argv if not re.fullmatch(r"%[a-zA-Z]", a)]


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's header; ValueError when it is not a PNG."""
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def launch_env(env: dict, tmp: Path) -> dict:
    """A first launch: no config, cache or state of an earlier run."""
    return {**env, "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_CACHE_HOME": str(tmp / "cache"),
            "XDG_STATE_HOME": str(tmp / "state")}


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if not p.is_dir()] if folder.exists() else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch-index", help="extra index serving CPU torch (e.g. https://download.pytorch.org/whl/cpu)")
    parser.add_argument("--screenshot", default=os.path.join(tempfile.gettempdir(), "ke-desktop-install.png"),
                        help="where to keep the window's PNG (default: %(default)s)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ke-desktop-install-"))
    try:
        return measure(tmp, args)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def measure(tmp: Path, args) -> int:
    env = base_env(tmp)
    step(f"a copy of the checkout in {tmp}")
    source = fresh_checkout(tmp)
    step("pipx")
    pipx = pipx_command(tmp, env)
    pipx_version = subprocess.run([*pipx, "--version"], env=env, capture_output=True, text=True).stdout.strip()
    print(f"pipx {pipx_version} ({pipx[0]})")
    step("pipx install")
    install_s = pipx_install(pipx, source, env, args.torch_index)
    venv = tmp / "pipx" / "venvs" / "knowledge-explorer"
    probe = json.loads(subprocess.run([venv / "bin" / "python", "-c", PROBE], env=env, cwd=tmp, check=True,
                                      capture_output=True, text=True).stdout)
    print(f"installed in {install_s:.0f} s: {size_bytes(venv) / 1e6:,.0f} MB, {probe['distributions']} "
          f"distributions, torch {probe['torch']}, {len(probe['nvidia'])} nvidia packages")
    print(f"resources in the wheel: {', '.join(probe['resources'])}")
    missing = {"style.qss", "icons/knowledge-explorer.png", "fonts/DejaVuSans.ttf"} - set(probe["resources"])
    if missing or probe["nvidia"] or not probe["torch"].endswith("+cpu"):
        sys.exit(f"error: resources missing from the install ({sorted(missing)}) or not the CPU torch")

    step("knowledge-explorer desktop install")
    program = tmp / "bin" / "knowledge-explorer"
    run([program, "desktop", "install"], env, cwd=tmp)
    desktop = tmp / "share" / "applications" / "knowledge-explorer.desktop"
    print(desktop.read_text(encoding="utf-8"), end="")
    validator = shutil.which("desktop-file-validate")
    if validator:
        run([validator, desktop], env)
        print("desktop-file-validate: no errors")
    keys = desktop_keys(desktop)
    argv = exec_argv(keys["Exec"])
    if Path(argv[0]) != program or not Path(keys["Icon"]).is_file():
        sys.exit(f"error: Exec runs {argv[0]} (expected {program}) or Icon {keys['Icon']} is missing")

    step("launch from the Exec line under Xvfb: screenshot of the first launch")
    workspace = shutil.copytree(SAMPLE, tmp / "sample_workspace", symlinks=True)
    out = tmp / "out.png"
    xvfb = ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24"]
    launch_s = run([*xvfb, *argv, "--screenshot", out, "--query", QUESTION, workspace],
                   launch_env(env, tmp), timeout=900, cwd=tmp)
    width, height = png_size(out)
    shutil.copyfile(out, args.screenshot)
    print(f"screenshot {width}x{height}, {out.stat().st_size / 1e3:.0f} KB, in {launch_s:.0f} s "
          f"(index + question included): {args.screenshot}")

    step("knowledge-explorer desktop uninstall")
    run([program, "desktop", "uninstall"], env, cwd=tmp)
    left = files_under(tmp / "share" / "applications") + files_under(tmp / "share" / "icons")
    if left:
        sys.exit(f"error: uninstall left {left}")
    print("nothing left under applications/ and icons/")

    figures = {"pipx": pipx_version, "install s": round(install_s), "venv MB": round(size_bytes(venv) / 1e6),
               "torch": probe["torch"], "nvidia packages": len(probe["nvidia"]),
               "first launch s": round(launch_s), "screenshot": f"{width}x{height}"}
    step("figures")
    print("  ".join(f"{k}: {v}" for k, v in figures.items()))
    record_run(figures, args)
    return 0


def record_run(figures: dict, args) -> None:
    try:
        from benchmarks.lib import record
    except ImportError:  # run without PYTHONPATH=.: printed, not recorded
        return
    record("desktop_install", [figures], uses_percentiles=False,
           settings={"torch": TORCH, "torch_index": args.torch_index, "question": QUESTION,
                     "xvfb": "1920x1080x24", "python": python311()})


if __name__ == "__main__":
    sys.exit(main())
