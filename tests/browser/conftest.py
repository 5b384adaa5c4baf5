"""Real Chromium (Debian's package, installed by scripts/browser.sh) driven by Playwright.

Never skipped: without chromium these tests fail, saying how to install it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright, sync_playwright

CHROMIUM = os.environ.get("BPM_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")  # closed after the module: its event loop must not outlive it
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")  # closed after the module: its event loop must not outlive it
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: run `bash scripts/browser.sh` (apt-get install chromium)"
        )
    b = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
    yield b
    b.close()
