"""Headless Chromium for the connectors page tests: the driver and the reads that survive re-renders.

Debian's chromium through chromedriver (``.ci/bootstrap`` installs both). The page
(:mod:`kopycat.rest.ui`) re-renders its rows every 5 s, so rows are read and buttons clicked in one
script each: a native find-then-act could hold an element the re-render has just replaced.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["chromium", "click", "connector_cells", "page_error", "row_cells", "wait_until"]


@contextmanager
def chromium(window: str = "1400,600") -> Iterator[Any]:
    """A headless Chromium WebDriver, quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    driver_path = shutil.which("chromedriver")
    assert driver_path, "the page tests drive chromium through chromedriver: run .ci/bootstrap (chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={window}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(condition: Callable[[], bool], what: str, seen: Callable[[], str] = lambda: "",
               timeout_s: float = 30) -> None:
    """Poll ``condition`` every 0.1 s; on timeout fail with ``what`` and what the page shows (``seen()``)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; page shows {seen()}")
        time.sleep(0.1)


def row_cells(driver: Any, row: int = 0) -> list[str]:
    """One row's cell texts of the connectors table, read in one script."""
    return driver.execute_script(  # type: ignore[no-any-return]
        "const row = document.querySelectorAll('#connectors tbody tr')[arguments[0]];"
        "return row ? Array.from(row.cells, c => c.innerText) : [];", row)


def connector_cells(driver: Any, name: str) -> list[str]:
    """The cell texts of connector ``name``'s row (other connectors may share the config topic)."""
    return driver.execute_script(  # type: ignore[no-any-return]
        "const row = Array.from(document.querySelectorAll('#connectors tbody tr'))"
        ".find(r => r.dataset.connector === arguments[0]);"
        "return row ? Array.from(row.cells, c => c.innerText) : [];", name)


def page_error(driver: Any) -> str:
    """The page's error line (a failed API call), empty when all went well."""
    return driver.execute_script("return document.getElementById('error').innerText")  # type: ignore[no-any-return]


def click(driver: Any, selector: str) -> None:
    """Click the first element matching ``selector`` in one script."""
    assert driver.execute_script(
        "const b = document.querySelector(arguments[0]); if (b) b.click(); return Boolean(b);", selector)
