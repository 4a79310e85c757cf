"""`knowledge-explorer desktop install|uninstall`: the app-menu entry and icon, written under a temporary
$XDG_DATA_HOME through the real CLI."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main

DESKTOP = Path("applications/knowledge-explorer.desktop")
ICON = Path("icons/hicolor/256x256/apps/knowledge-explorer.png")


@pytest.fixture
def data_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "share"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def exec_program(value: str) -> str:
    """The program of an Exec value: the string escape (`\\\\`) undone, then the spec's double quotes and `%%`."""
    text = value.replace("\\\\", "\\")
    quoted = re.match(r'"((?:[^"\\]|\\.)*)"', text)
    program = re.sub(r"\\(.)", r"\1", quoted.group(1)) if quoted else text.split()[0]
    return program.replace("%%", "%")


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if not p.is_dir()]


def validate(path: Path) -> None:
    validator = shutil.which("desktop-file-validate")
    if validator:
        result = subprocess.run([validator, str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_install_writes_a_valid_entry_and_uninstall_removes_it(capsys, data_home):
    assert main(["desktop", "install"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and str(data_home / DESKTOP) in out and str(data_home / ICON) in out

    keys = entry(data_home / DESKTOP)
    program = exec_program(keys["Exec"])
    assert os.path.isabs(program) and os.access(program, os.X_OK) and Path(program).name == "knowledge-explorer"
    assert keys["TryExec"] == program
    assert Path(keys["Icon"]) == data_home / ICON and (data_home / ICON).stat().st_size > 1000
    assert keys["Type"] == "Application" and keys["Terminal"] == "false" and keys["Name"] == "Knowledge Explorer"
    assert "Development" in keys["Categories"].split(";")
    validate(data_home / DESKTOP)

    assert main(["desktop", "uninstall"]) == 0
    assert capsys.readouterr().out.startswith("Removed ")
    assert files_under(data_home) == []


def test_uninstall_without_an_entry_says_so(capsys, data_home):
    assert main(["desktop", "uninstall"]) == 0
    assert capsys.readouterr().out.startswith("Nothing to remove")
    assert not data_home.exists()


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_a_program_path_with_spaces_is_quoted(capsys, data_home, tmp_path, monkeypatch):
    program = tmp_path / "my apps $HOME \\ 100%" / "knowledge-explorer"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sys, "argv", [str(program)])  # as when the installed script runs

    assert main(["desktop", "install"]) == 0
    keys = entry(data_home / DESKTOP)
    assert keys["Exec"].startswith('"') and exec_program(keys["Exec"]) == str(program)
    validate(data_home / DESKTOP)


def test_a_relative_xdg_data_home_is_ignored(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", "relative/share")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["desktop", "install"]) == 0
    assert (tmp_path / ".local/share" / DESKTOP).is_file()
    assert main(["desktop", "uninstall"]) == 0
    assert files_under(tmp_path) == []


def test_the_icon_and_stylesheet_ship_in_the_resources_package():
    from app.desktop_entry import ICON_SOURCE

    assert ICON_SOURCE.is_file() and (ICON_SOURCE.parent.parent / "style.qss").is_file()
