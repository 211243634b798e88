"""A module path that moved in the last round fails with a pointer to its new path (not a bare
ModuleNotFoundError, and not a working alias); every new path exists; other imports are untouched."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

import interbias
from interbias.utils.moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_names_its_new_path(old: str) -> None:
    """In a fresh interpreter: the import fails, with the new path and the version in one line."""
    code = f"import {old}"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 1
    last = res.stderr.strip().splitlines()[-1]
    assert last == f"ModuleNotFoundError: {old} moved to {MOVED[old]} in interbias {interbias.__version__}; import that"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_new_path_exists_and_the_old_one_does_not(old: str) -> None:
    new = MOVED[old].split()[0]
    assert importlib.util.find_spec(new) is not None
    with pytest.raises(ModuleNotFoundError, match=f"^{old} moved to "):
        importlib.import_module(old)


def test_a_module_of_a_package_that_is_gone_gets_the_package_pointer() -> None:
    with pytest.raises(ModuleNotFoundError, match=r"^interbias\.quality moved to .*quality\.snr is audio\.wada_snr"):
        importlib.import_module("interbias.quality.snr")


def test_other_missing_modules_keep_the_usual_error() -> None:
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'interbias\.no_such_module'$"):
        importlib.import_module("interbias.no_such_module")
