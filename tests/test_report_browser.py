"""report.html in a real browser: headless Chromium loads it from disk, logs nothing to the
console, and paints a page that is not blank. Skipped where Chromium is not installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bench.report import write_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WINDOW = (1280, 2000)
BROWSER_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    return path


@pytest.fixture(scope="module")
def report_html(chromium: str, tiny_run: Path) -> Path:
    return write_report(tiny_run)[0]


@pytest.fixture(scope="module")
def browser_run(
    chromium: str, report_html: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp = tmp_path_factory.mktemp("chromium")
    shot = tmp / "shot.png"
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--screenshot={shot}",
        report_html.resolve().as_uri(),
    ]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish within {BROWSER_TIMEOUT_S} s")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, shot


def test_no_console_errors(browser_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    proc, _ = browser_run
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    errors = [line for line in console if "error" in line.lower() or "Uncaught" in line]
    assert not errors, errors
    # The page has no JavaScript, so anything on the console is a problem; in particular the
    # page's Content-Security-Policy logs every blocked load (an image, a font, a stylesheet).
    assert not console, console


def test_screenshot_is_painted(browser_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    from PIL import Image

    _, shot = browser_run
    assert shot.is_file()
    with Image.open(shot) as im:
        assert im.size == WINDOW
        rgb = im.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 20)
        assert colours is None or len(colours) > 1, "the screenshot is a single colour"
        # More than a blank page with a heading: text, tables and plot colours.
        assert colours is None or len(colours) > 50, len(colours or [])
